/* policy.h - the eviction-policy interface and its registry.
 *
 * The engine calls a policy when a request outgrows its block cap (N_max blocks plus one
 * growth block): for each (layer, KV head) the policy sees the request's keys, its window
 * queries and its stored history score, and returns which `budget` tokens to keep (exactly
 * budget, the same count for every head so one block table serves all heads). A policy is
 * its parameters and a score plan (scorers.h); the same plan runs on the host
 * (scorer_plan_run) and on the GPU, so no policy file holds scoring code. Parameters come from a JSON object; unknown keys and
 * impossible values are errors naming the key. One file per policy; all listed in
 * policy_registry (policy.c).
 */
#ifndef ZP_POLICY_H
#define ZP_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "scorers.h"

typedef struct cJSON cJSON;

typedef struct {
    zp_score_view view;     /* keys [n][D], window queries [w][G][D] */
    const float *history;   /* [n] stored score of each token (NULL if the policy keeps none) */
    int n_hist;             /* tokens whose history is valid: 0 on a first compression,
                               else the tokens before the growth block */
    int block_size;         /* tokens per KV block */
    int budget;             /* tokens to keep: N_max * block_size */
    float *scratch;         /* [6n + n*D] floats owned by the caller */
} zp_select_input;

typedef struct zp_policy_ops {
    const char *name;
    const char *label;     /* what tables and plots call it: its paper's name and what it approximates */
    const char *summary;
    int evicts;            /* 0 only for `full` */
    int needs_history;     /* stores a per-token score that moves with the K/V */
    int needs_stats;       /* scores with a model's calibrated statistics, named by its parameters (TriAttention):
                              it runs only with that file; loops over every policy leave it to its own tests */
    int prefix_compatible; /* may run on requests sharing prefix blocks (compacts into fresh blocks) */
    /* Parses params (may be NULL: defaults) into a state; errors name the key. */
    zp_status (*init)(const cJSON *params, void **state);
    void (*destroy)(void *state);
    /* The policy's score as a plan (scorers.h) for a cap of `budget` tokens and a query window
     * of `window`; NULL for `full`, which never evicts. The plan runs on the host
     * (scorer_plan_run) or on the device (the backend's compress op). */
    void (*plan)(const void *state, int budget, int window, zp_score_plan *out);
    /* Resolved parameters as a JSON object text into buf. */
    void (*describe)(const void *state, char *buf, size_t len);
    /* Optional: the label of these parameters where they change what the policy is (StreamingLLM
     * with or without its position shift); NULL: `label`. */
    const char *(*label_of)(const void *state);
    int default_window;    /* w when a run sets none: its authors' query window (0 for full) */
    int prompt_only;       /* compresses once, after the prefill of a prompt longer than the budget;
                              decoding keeps every token and the request is not capped (SnapKV) */
} zp_policy_ops;

typedef struct {
    const zp_policy_ops *ops;
    void *state;
} zp_policy;

/* keep[n]: exactly budget ones. new_history[n] (only when needs_history; may be NULL): the
 * score to store for each token (only kept tokens' values survive compaction). order[budget]
 * (may be NULL): the kept tokens in the order compaction writes them (scorer_plan_run). Runs
 * the policy's plan on the host. */
zp_status policy_select(const zp_policy *p, const zp_select_input *in, uint8_t *keep, float *new_history, int *order);
/* 1 when p's plan keeps a per-token history (needs_history and a global score configured, e.g.
 * not Zipage with use_global false): only then is a score cache allocated. */
int policy_stores_history(const zp_policy *p, int budget, int window);
/* The plan of p for (budget, window); fails for a policy that never evicts. */
zp_status policy_plan(const zp_policy *p, int budget, int window, zp_score_plan *out);

/* Looks a policy up by name and parses its JSON parameters (NULL or "" for defaults). */
zp_status policy_create(const char *name, const char *params_json, zp_policy *out);
/* The same for a policy already found (policy_find). */
zp_status policy_init_ops(const zp_policy_ops *ops, const char *params_json, zp_policy *out);
/* The error of an unknown policy name, naming the known ones. */
zp_status policy_unknown(const char *name);
void policy_destroy(zp_policy *p);
const zp_policy_ops *policy_find(const char *name);
/* What tables call p: its label_of, else its ops' label. */
const char *policy_label(const zp_policy *p);
/* The query window a run of ops uses: `window` when set (> 0), else its authors' value. */
int policy_window(const zp_policy_ops *ops, int window);
/* The registered names, comma separated, into buf (for error messages). */
void policy_names(char *buf, size_t len);
/* NULL-terminated list of every registered policy. */
const zp_policy_ops *const *policy_registry(void);

/* ---- helpers shared by the policy files ---- */

/* Parameter parsing: every key of `params` must be in `known` (NULL-terminated). */
zp_status policy_check_keys(const cJSON *params, const char *policy, const char *const *known);
zp_status policy_param_float(const cJSON *params, const char *policy, const char *key, float lo, float hi, float *v);
zp_status policy_param_int(const cJSON *params, const char *policy, const char *key, int lo, int hi, int *v);
zp_status policy_param_bool(const cJSON *params, const char *policy, const char *key, int *v);
/* A max-pool kernel parameter: an odd integer in [1, 63]. */
zp_status policy_param_pool_kernel(const cJSON *params, const char *policy, const char *key, int *v);
/* String parameter restricted to choices; *v = index of the choice. */
zp_status policy_param_choice(const cJSON *params, const char *policy, const char *key, const char *const *choices, int *v);

/* The key-score policies (keynorm.c, keydiff.c, random.c): no parameters but random's seed (an
 * integer in [0, 2^31)), no protected tokens (as kvpress's presses), every score from the keys. */
zp_status policy_key_init(const cJSON *params, const char *policy, int with_seed, void **state);
void policy_key_plan(const void *state, zp_key_score kind, zp_score_plan *p);
void policy_key_describe(const void *state, int with_seed, char *buf, size_t len);
/* The ops of a key-score policy: name, label, summary, its zp_key_score, whether it takes a seed. */
#define POLICY_KEY_OPS(id, NAME, LABEL, SUMMARY, KIND, SEED)                                                                  \
    static zp_status id##_init(const cJSON *params, void **state) { return policy_key_init(params, NAME, SEED, state); }       \
    static void id##_plan(const void *state, int budget, int window, zp_score_plan *p) {                                        \
        (void)budget;                                                                                                          \
        (void)window;                                                                                                          \
        policy_key_plan(state, KIND, p);                                                                                       \
    }                                                                                                                          \
    static void id##_describe(const void *state, char *buf, size_t len) { policy_key_describe(state, SEED, buf, len); }        \
    const zp_policy_ops policy_##id##_ops = {.name = NAME, .label = LABEL, .summary = SUMMARY, .evicts = 1, .needs_history = 0, \
                                             .prefix_compatible = 1, .prompt_only = 0,                                         \
                                             .default_window = 1, /* no queries are read: the smallest query cache */         \
                                             .init = id##_init, .destroy = free, .plan = id##_plan, .describe = id##_describe}

/* SnapKV-D's importance options, shared by snapkv_d.c and rkv.c: pool kernel, GQA reduction
 * (0 max of logits, 1 max of probabilities), keys of the softmax (0 non-window, 1 all, causal),
 * cache order of the survivors (0 score, as R-KV's code gathers them; 1 position). */
typedef struct {
    int kernel, gqa_prob, all_keys, position_order;
} snapkv_d_opts;
void policy_snapkv_d_plan(const snapkv_d_opts *o, int window, zp_score_plan *p);
/* Parses kernel, gqa, keys and order of params (keys already checked by the caller). */
zp_status policy_snapkv_d_parse(const cJSON *params, const char *policy, snapkv_d_opts *o);
/* Writes `"kernel": k, "gqa": "...", "keys": "...", "order": "..."` (no braces); snprintf's count. */
int policy_snapkv_d_describe(const snapkv_d_opts *o, char *buf, size_t len);

#endif
