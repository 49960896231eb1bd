/* random.c - random eviction (kvpress RandomPress), the floor every table needs: each token's
 * score is a uniform draw in [0, 1) hashed from the seed, the (layer, KV head) and its place in
 * the compression (scorer_key_draw), and each KV head keeps its top budget. kvpress draws from
 * torch's generator; integers only keep CPU and CUDA on the same tokens and a request's draws
 * independent of the schedule. Each compression draws afresh. Nothing protected. Parameter
 * seed. No history. Prefix-compatible. Checked by its properties (tests/test_policies.c:
 * uniform keep rates, independence of the keys, determinism, seeds differ). */
#include <stdlib.h>

#include "policy.h"

POLICY_KEY_OPS(random, "random", "random", "a seeded uniform draw per token (the floor)", ZP_KEYS_RANDOM, 1);
