/* experiment.h - experiment definitions (experiments/<name>.json) expanded into runs.
 *
 * Scalar keys set the run (model, device, dataset, sampling, engine); the axes policy, nmax,
 * window, max_concurrency, kv_pool_tokens and every policy_params value may be lists and
 * expand as a cross product; "baseline": true adds the full-KV run of each engine setting.
 * Unknown keys and impossible values are errors naming the key. A run's id hashes its
 * resolved configuration, the git commit and the model's checksum.
 */
#ifndef ZP_EXPERIMENT_H
#define ZP_EXPERIMENT_H

#include <stdint.h>

#include "status.h"

#define EXP_MAX_RUNS 4096 /* runs (and axis combinations) one experiment may expand to */

typedef struct {
    char model[1024];          /* checkpoint folder, or "preset:NAME" (random weights built in memory) */
    char device[32], precision[8];
    char dataset[256], ids[1024];
    int limit, samples;
    float temperature, top_p;
    int top_k, max_tokens, thinking, math_system;
    uint64_t seed;
    int block_size, max_num_seqs, max_num_batched_tokens, prefix_cache, async;
    int64_t kv_pool_tokens;
    float gpu_memory_utilization; /* CUDA pool sizing when kv_pool_tokens is 0 (default 0.9) */
    char scheduler[16], policy[32], policy_params[1024];
    char grader[16];           /* math datasets: "builtin" (default) or "math-verify" (grader.h) */
    int nmax, window, max_concurrency;
    int fidelity, gen, kl_window; /* kind "fidelity": teacher-forced comparison with full KV */
    char run_id[17];
    char resolved[4096];       /* the run's configuration as JSON (meta.json, hashing) */
} exp_run;

typedef struct {
    char name[128];
    exp_run *runs;
    int n_runs;
} experiment;

/* Parses experiments/<name>.json (or a path) and expands it. model_checksum/git_commit enter
 * the run ids. */
zp_status exp_load(const char *name_or_path, const char *dir, experiment *x);
void exp_free(experiment *x);
/* Fills run ids from the resolved configs, the git commit and the model checksum. */
void exp_assign_ids(experiment *x, const char *git_commit, uint64_t model_checksum);

#endif
