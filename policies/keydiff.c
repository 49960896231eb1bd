/* keydiff.c - KeyDiff (kvpress KeyDiffPress; Park et al., arXiv 2504.15364): at every block
 * overflow each KV head keeps the budget tokens whose keys have the lowest cosine similarity to
 * the anchor, the mean of the head's unit keys over the cache and its growth block (the
 * block-wise form of the paper, kvpress BlockPress: the kept set plus the new block scored
 * together). Nothing protected, no queries read. No history. Prefix-compatible.
 * Oracle: tests/reference/ref_kvpress.py. */
#include <stdlib.h>

#include "policy.h"

POLICY_KEY_OPS(keydiff, "keydiff", "KeyDiff", "keys least similar to the mean key kept (kvpress KeyDiffPress)", ZP_KEYS_DIFF, 0);
