/* random.c - random eviction (kvpress RandomPress), the floor every table needs: each token's
 * score is a uniform draw in [0, 1) hashed from the seed and its key's bits (scorer_key_draw),
 * and each KV head keeps its top budget. kvpress draws from torch's generator; a hash of the
 * key keeps the draw the same for a token at every compression, on every backend and under
 * any schedule, so CPU and CUDA keep the same tokens. Nothing protected. Parameter seed. No
 * history. Prefix-compatible. Checked by its properties (tests/test_policies.c: uniform keep
 * rates, determinism, seeds differ). */
#include <stdlib.h>

#include "policy.h"

static zp_status random_init(const cJSON *params, void **state) { return policy_key_init(params, "random", 1, state); }

static void random_plan(const void *state, int budget, int window, zp_score_plan *p) {
    (void)budget;
    (void)window;
    policy_key_plan(state, ZP_KEYS_RANDOM, p);
}

static void random_describe(const void *state, char *buf, size_t len) { policy_key_describe(state, 1, buf, len); }

const zp_policy_ops policy_random_ops = {
    .name = "random",
    .label = "random",
    .summary = "a seeded uniform draw per token (the floor)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 1, /* no queries are read: the smallest query cache */
    .init = random_init,
    .destroy = free,
    .plan = random_plan,
    .describe = random_describe,
};
