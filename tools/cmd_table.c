/* cmd_table.c - `zipage table EXP [--results DIR] [--plot-data FILE]`: prints the Markdown
 * table of results/EXP/runs.csv (pass@1 with its 95% CI per dataset, mean tokens/s, speed-up
 * over the full-KV run of the same dataset); with --plot-data writes the TSV that
 * plots/experiment.gp reads (and prints the gnuplot variables on stdout). */
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
            const char *val[2] = {rows[i].policy, rows[i].dataset};
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

/* `zipage merge DEST.csv SRC.csv...`: appends the rows of shard CSVs whose run id DEST does
 * not have yet (a header is written when DEST is new). */
int cmd_merge(int argc, char **argv) {
    if (argc < 3) return cli_report("merge", zp_fail(ZP_ERR_INVALID, "usage: zipage merge DEST.csv SRC.csv [SRC.csv ...]"));
    result_row *have = NULL;
    int n_have = 0, added = 0;
    FILE *probe = fopen(argv[1], "r");
    if (probe) {
        fclose(probe);
        zp_status s = results_read(argv[1], &have, &n_have);
        if (s != ZP_OK) return cli_report("merge", s);
    }
    FILE *dest = fopen(argv[1], "a");
    if (!dest) { free(have); return cli_report("merge", zp_fail(ZP_ERR_IO, "%s: cannot append", argv[1])); }
    int need_header = !probe;
    for (int a = 2; a < argc; a++) {
        FILE *src = fopen(argv[a], "r");
        if (!src) { fclose(dest); free(have); return cli_report("merge", zp_fail(ZP_ERR_IO, "%s: cannot open", argv[a])); }
        char line[16384];
        for (int ln = 0; fgets(line, sizeof line, src); ln++) {
            if (ln == 0) { if (need_header) { fputs(line, dest); need_header = 0; } continue; }
            char id[20] = "";
            sscanf(line[0] == '"' ? line + 1 : line, "%16[0-9a-f]", id);
            int dup = 0;
            for (int i = 0; i < n_have && !dup; i++) dup = !strcmp(have[i].run_id, id);
            if (dup || !id[0]) continue;
            fputs(line, dest);
            result_row *g = realloc(have, sizeof *g * (size_t)(n_have + 1));
            if (!g) break;
            have = g;
            snprintf(have[n_have++].run_id, sizeof have[0].run_id, "%s", id);
            added++;
        }
        fclose(src);
    }
    fclose(dest);
    free(have);
    printf("merge: %d rows added to %s\n", added, argv[1]);
    return 0;
}
