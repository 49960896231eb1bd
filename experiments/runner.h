/* runner.h - executes experiment runs: engine + tokenizer + chat template + dataset +
 * graders, writing results/<exp>/runs.csv (one row per run, flushed when the run ends),
 * samples.jsonl (one line per sample) and meta.json. The only module that joins the engine
 * with datasets/. Finished runs found in runs.csv are skipped unless forced, so an
 * interrupted sweep resumes where it stopped; SHARD=i/N runs every N-th run. */
#ifndef ZP_RUNNER_H
#define ZP_RUNNER_H

#include <signal.h> /* sig_atomic_t */

#include "engine.h"
#include "dataset.h"    /* ds_dataset */
#include "experiment.h"

typedef struct {
    const char *results_dir;   /* default "results" */
    int force;                 /* redo finished runs */
    int shard_index, shard_count;
    int unsafe_no_sandbox;     /* code grading without bubblewrap */
    const char *command_line;
    volatile sig_atomic_t *finished; /* NULL, or set to the runs with a row in the folder (done now or before) as they end:
                                        what an interrupt's message counts */
} runner_opts;

zp_status runner_run_experiment(experiment *x, const runner_opts *o);
/* Every run of x checked before any starts (preflight.c): model folder, dataset and ids, code
 * sandbox, device name, engine settings, the results folder exp_dir; the first error names the
 * definition's file, the run and the key. */
zp_status runner_preflight(const experiment *x, const runner_opts *o, const char *exp_dir);
/* The dataset of run r and its selected items (ids, limit), refused when it grades code and no
 * sandbox is there: what a run opens and the preflight checks. Errors name the key ("dataset",
 * "ids"); on failure nothing is left to free. */
zp_status runner_open_dataset(const exp_run *r, const runner_opts *o, ds_dataset *d, int **sel, int *n);
/* The model of a run in an engine configuration: a "preset:NAME" model is the preset's shape
 * with seeded random weights built in memory (the preset folder holds config and tokenizer). */
void runner_model_config(const exp_run *r, const char *model_dir, zp_engine_config *ec);

#endif
