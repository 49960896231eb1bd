/* cmd_table.c - `zipage table EXP [--results DIR] [--plot-data FILE]`: prints the Markdown
 * table of results/EXP/runs.csv (EXP with a slash: that folder's runs.csv) (pass@1 with its 95% CI per dataset, mean tokens/s, speed-up
 * over the full-KV run of the same dataset); with --plot-data writes the TSV that
 * plots/experiment.gp reads (and prints the gnuplot variables on stdout: policies, datasets,
 * model, and sweeps, the axes that have more than one value). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "results_table.h"

/* The axes a curve may be drawn over (plots/experiment.gp): N_max when a policy ran at two
 * budgets, M or the pool when one configuration (policy, N_max) ran at two of them; a value
 * derived from another (M from the pool and N_max) is not an axis. Full KV has none. */
static const char *sweeps(const result_row *rows, int n) {
    static char out[64];
    int differs[3] = {0, 0, 0};
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const result_row *a = &rows[i], *b = &rows[j];
            if (strcmp(a->policy, b->policy) || strcmp(a->params, b->params) || strcmp(a->dataset, b->dataset) || !strcmp(a->policy, "full"))
                continue;
            differs[0] |= a->nmax != b->nmax;
            differs[1] |= a->nmax == b->nmax && a->max_concurrency != b->max_concurrency;
            differs[2] |= a->nmax == b->nmax && a->kv_pool_tokens != b->kv_pool_tokens;
        }
    const char *names[3] = {"nmax", "concurrency", "kvpool"};
    out[0] = 0;
    for (int k = 0; k < 3; k++)
        if (differs[k]) snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? " " : "", names[k]);
    return out;
}

int cmd_table(int argc, char **argv) {
    const char *exp = NULL, *results = "results", *plot = NULL, *v;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) { printf("usage: zipage table EXP [--results DIR] [--plot-data FILE]\n"); return 0; }
        if (!strcmp(argv[i], "--results") || !strcmp(argv[i], "--plot-data")) {
            if (!(v = cli_value(argc, argv, &i))) return cli_report("table", ZP_ERR_INVALID);
            if (!strcmp(argv[i - 1], "--results")) results = v; else plot = v;
        } else if (argv[i][0] == '-') return cli_report("table", zp_fail(ZP_ERR_INVALID, "unknown flag %s", argv[i]));
        else exp = argv[i];
    }
    if (!exp) return cli_report("table", zp_fail(ZP_ERR_INVALID, "which experiment?"));
    char path[4096];
    if (strchr(exp, '/')) snprintf(path, sizeof path, "%s/runs.csv", exp); /* a results folder given as a path */
    else snprintf(path, sizeof path, "%s/%s/runs.csv", results, exp);
    result_row *rows;
    int n;
    zp_status s = results_read(path, &rows, &n);
    if (s != ZP_OK) return cli_report("table", s);
    if (!plot) {
        printf("Experiment %s (%s, %d runs)\n\n", exp, n ? rows[0].model : "", n);
        results_print_table(stdout, rows, n);
    } else {
        FILE *f = fopen(plot, "w");
        if (!f) { free(rows); return cli_report("table", zp_fail(ZP_ERR_IO, "%s: cannot create", plot)); }
        results_write_plot_data(f, rows, n);
        fclose(f);
        char pol[512] = "", ds[512] = "";
        for (int i = 0; i < n; i++) { /* distinct policies (not full) and datasets, space separated */
            char *lists[2] = {pol, ds};
            char curve[64];
            results_curve(&rows[i], curve, sizeof curve);
            const char *val[2] = {curve, rows[i].dataset};
            for (int k = 0; k < 2; k++) {
                if (k == 0 && !strcmp(val[k], "full")) continue;
                char probe[80];
                snprintf(probe, sizeof probe, " %s ", val[k]);
                char padded[600];
                snprintf(padded, sizeof padded, " %s ", lists[k]);
                if (!strstr(padded, probe)) { strncat(lists[k], lists[k][0] ? " " : "", 511 - strlen(lists[k])); strncat(lists[k], val[k], 511 - strlen(lists[k])); }
            }
        }
        printf("policies='%s'; datasets='%s'; model='%s'; sweeps='%s'\n", pol, ds, n ? rows[0].model : "", sweeps(rows, n));
    }
    free(rows);
    return 0;
}
