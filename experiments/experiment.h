/* experiment.h - experiment definitions (experiments/<name>.json) expanded into runs.
 *
 * A definition's keys are the settings of two schemas: the run's own (EXP_RUN_SETTINGS below:
 * model, dataset, sampling, grading) and the engine's (engine/settings.h ZP_ENGINE_SETTINGS),
 * each key the setting's name, plus a few keys of their own syntax (policy_params, system,
 * kind, baseline, description). Settings flagged ZP_SETTING_AXIS (dataset; policy, nmax,
 * window, max_concurrency, kv_pool_tokens) and every policy_params value may be lists and
 * expand as a cross product, in schema order (the last fastest); "baseline": true adds the
 * full-KV run of each engine setting. Unknown keys and impossible values are errors naming
 * the key. A run's id hashes its resolved configuration (every setting, schema order), the git
 * commit and the model's checksum.
 */
#ifndef ZP_EXPERIMENT_H
#define ZP_EXPERIMENT_H

#include <stdint.h>

#include "engine.h"   /* zp_engine_config */
#include "settings.h" /* the engine's schema, zp_setting */
#include "status.h"

#define EXP_MAX_RUNS 4096 /* runs (and axis combinations) one experiment may expand to */

/* The run's own settings, rows as ZP_ENGINE_SETTINGS's (field: exp_run's member of the name). */
#define EXP_RUN_SETTINGS(X)                                                                                                         \
    X(model, ZP_SET_STR, model, 0, NULL, 0, 0, 0, "checkpoint folder, or \"preset:NAME\" (random weights built in memory)")         \
    X(dataset, ZP_SET_STR, dataset, 0, NULL, 0, 0, ZP_SETTING_AXIS, "dataset name (datasets/data)")                                  \
    X(ids, ZP_SET_STR, ids, 0, "", 0, 0, 0, "problem ids, comma separated (default: all)")                                           \
    X(limit, ZP_SET_INT, limit, 0, NULL, 1, 1e7, 0, "the first N problems (default: every one)")                                    \
    X(samples, ZP_SET_INT, samples, 1, NULL, 1, 1e5, 0, "samples per problem (default 1)")                                          \
    X(temperature, ZP_SET_FLOAT, temperature, 0.6, NULL, 0, 10, 0, "sampling temperature (default 0.6)")                           \
    X(top_p, ZP_SET_FLOAT, top_p, 1.0, NULL, 1e-6, 1, 0, "nucleus sampling (default 1)")                                            \
    X(top_k, ZP_SET_INT, top_k, 0, NULL, 0, 1e7, 0, "top-k sampling (default 0: off)")                                              \
    X(max_tokens, ZP_SET_INT, max_tokens, 32768, NULL, 1, 1e7, 0, "tokens generated at most (default 32768)")                      \
    X(thinking, ZP_SET_BOOL, thinking, 1, NULL, 0, 1, 0, "Qwen3's thinking mode in the chat template (default on)")                 \
    X(seed, ZP_SET_I64, seed, 0, NULL, 0, 1e15, 0, "sampling seed (default 0)")                                                     \
    X(grader, ZP_SET_STR, grader, 0, "builtin", 0, 0, 0, "math grader: builtin (default) or math-verify")                           \
    X(gen, ZP_SET_INT, gen, 512, NULL, 1, 1e6, 0, "fidelity: tokens of each trajectory (default 512)")                             \
    X(kl_window, ZP_SET_INT, kl_window, 64, NULL, 1, 1e6, 0, "fidelity: tokens per KL window (default 64)")

typedef struct {
    char model[1024];          /* checkpoint folder, or "preset:NAME" (random weights built in memory) */
    char dataset[256], ids[1024];
    int limit, samples;
    float temperature, top_p;
    int top_k, max_tokens, thinking, math_system;
    int64_t seed;
    char grader[16];           /* math datasets: "builtin" (default) or "math-verify" (grader.h) */
    int fidelity, gen, kl_window; /* kind "fidelity": teacher-forced comparison with full KV */
    ZP_ENGINE_SETTINGS(ZP_SETTING_MEMBER) /* the engine's settings, each named as its setting */
    char policy_params[1024];
    char run_id[17];
    char resolved[4096];       /* the run's configuration as JSON (meta.json, hashing) */
} exp_run;

/* Both schemas placed in exp_run: the run's rows, then the engine's (their order is the
 * resolved configuration's and the axes' order). */
extern const zp_setting exp_settings[];
extern const int exp_n_settings;

/* Sets every engine setting of *ec (engine/settings.h's rows, policy_params) from run r; its
 * strings point into r. The window is r's as resolved at expansion (the axis, or the policy's
 * default); full KV's N_max 0 becomes the engine's default. */
void exp_engine_config(const exp_run *r, zp_engine_config *ec);
/* The run's request budget for a log line: "fixed", or "adaptive tau T floor F". */
void exp_budget_label(const exp_run *r, char *out, size_t n);

typedef struct {
    char name[128];
    exp_run *runs;
    int n_runs;
    char path[4096]; /* the definition's file */
} experiment;

/* Parses experiments/<name>.json (or a path) and expands it. model_checksum/git_commit enter
 * the run ids. */
zp_status exp_load(const char *name_or_path, const char *dir, experiment *x);
void exp_free(experiment *x);
/* Fills run ids from the resolved configs, the git commit and the model checksum. */
void exp_assign_ids(experiment *x, const char *git_commit, uint64_t model_checksum);

#endif
