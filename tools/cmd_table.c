/* cmd_table.c - `zipage table EXP [--results DIR] [--plot-data FILE]`: prints the Markdown
 * table of results/EXP/runs.csv (pass@1 with its 95% CI per dataset, mean tokens/s, speed-up
 * over the full-KV run of the same dataset); with --plot-data writes the TSV that
 * plots/experiment.gp reads (and prints the gnuplot variables on stdout). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "results_table.h"

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
    snprintf(path, sizeof path, "%s/%s/runs.csv", results, exp);
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
        printf("policies='%s'; datasets='%s'; model='%s'\n", pol, ds, n ? rows[0].model : "");
    }
    free(rows);
    return 0;
}
