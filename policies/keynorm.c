/* keynorm.c - key-norm (kvpress KnormPress; Devoto et al., arXiv 2406.11430): at every block
 * overflow each KV head keeps its budget tokens of lowest key L2 norm (post-RoPE keys), nothing
 * protected, no queries read; the norms rounded to 12 significant bits so that a token repeated
 * at another position (RoPE keeps the norm) ties exactly and the earlier stays, on every backend. kvpress compresses the prompt once; here every compression of a
 * request runs it on the cache and its growth block. No history. Prefix-compatible.
 * Oracle: tests/reference/ref_kvpress.py. */
#include <stdlib.h>

#include "policy.h"

POLICY_KEY_OPS(keynorm, "keynorm", "key-norm", "lowest L2 key norms kept (kvpress KnormPress)", ZP_KEYS_NORM, 0);
