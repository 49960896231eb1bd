/* random.c - random eviction (kvpress RandomPress), the floor every table needs: each token's
 * score is a uniform draw in [0, 1) hashed from the seed and its key's bits (scorer_key_draw),
 * and each KV head keeps its top budget. kvpress draws from torch's generator; a hash of the
 * key keeps the draw the same for a token at every compression, on every backend and under
 * any schedule, so CPU and CUDA keep the same tokens. Nothing protected. Parameter seed. No
 * history. Prefix-compatible. Checked by its properties (tests/test_policies.c: uniform keep
 * rates, determinism, seeds differ). */
#include <stdlib.h>

#include "policy.h"

POLICY_KEY_OPS(random, "random", "random", "a seeded uniform draw per token (the floor)", ZP_KEYS_RANDOM, 1);
