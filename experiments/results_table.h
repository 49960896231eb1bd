/* results_table.h - reads results/<exp>/runs.csv (libcsv) and prints the paper-style Markdown
 * table (pass@1 per dataset, throughput, speed-up over full KV on the same dataset) or writes
 * the tab-separated plot data the gnuplot scripts in plots/ read. */
#ifndef ZP_RESULTS_TABLE_H
#define ZP_RESULTS_TABLE_H

#include <stdio.h>

#include "status.h"

typedef struct {
    char run_id[20], dataset[64], policy[32], params[512], device[32];
    int nmax, window, max_concurrency;
    long long kv_pool_tokens;
    double pass1, lo, hi, tps, mean_running;
    char model[256], layer_budget[16], kv_dtype[8];
} result_row;

/* What a plot calls the row's configuration: its policy, "+shift" when its plan shifts positions
 * (StreamingLLM's position_shift), "+pyramid" for per-layer budgets (plots/fidelity.gp draws the
 * same names). */
void results_curve(const result_row *w, char *out, size_t n);

/* Rows of a runs.csv; a run id with two rows is refused, naming it. */
zp_status results_read(const char *csv_path, result_row **rows, int *n);
void results_print_table(FILE *out, const result_row *rows, int n);
/* The TSV of plots/experiment.gp: a row per run, sorted so that a curve joins its points in
 * order (curve, dataset, N_max, M, pool). */
void results_write_plot_data(FILE *out, const result_row *rows, int n);

#endif
