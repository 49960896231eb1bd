/* cmd_table.c - `zipage table EXP [--results DIR] [--plot-data FILE]`: prints the Markdown
 * table of results/EXP/runs.csv (pass@1 with its 95% CI per dataset, mean tokens/s, speed-up
 * over the full-KV run of the same dataset); with --plot-data writes the TSV that
 * plots/experiment.gp reads (and prints the gnuplot variables on stdout). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "results_io.h"
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

/* First line of a file (without its newline), malloc'ed; NULL when the file is empty. */
static char *first_line(FILE *f) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    if (n <= 0) { free(line); return NULL; }
    line[strcspn(line, "\r\n")] = 0;
    return line;
}

static int have_id(const result_row *have, int n, const char *id) {
    for (int i = 0; i < n; i++)
        if (!strcmp(have[i].run_id, id)) return 1;
    return 0;
}

/* `zipage merge DEST.csv SRC.csv...`: appends the rows of shard CSVs whose run id DEST does
 * not have yet (a header is written when DEST is new). Every file must start with the same
 * header; a last line without its newline gets one; the rows are appended in one durable write. */
int cmd_merge(int argc, char **argv) {
    static const char *usage = "usage: zipage merge DEST.csv SRC.csv [SRC.csv ...]";
    if (argc >= 2 && !strcmp(argv[1], "--help")) { printf("%s\n", usage); return 0; }
    if (argc < 3) return cli_report("merge", zp_fail(ZP_ERR_INVALID, "%s", usage));
    result_row *have = NULL;
    int n_have = 0, added = 0;
    char *header = NULL, *rows = NULL, *line = NULL;
    size_t rows_len = 0, cap = 0;
    zp_status s = ZP_OK;
    FILE *d = fopen(argv[1], "r"), *out = open_memstream(&rows, &rows_len);
    if (d) {
        header = first_line(d);
        fclose(d);
        if (header) s = results_read(argv[1], &have, &n_have);
    }
    if (!out) s = zp_fail(ZP_ERR_OOM, "merge: no memory");
    for (int a = 2; a < argc && s == ZP_OK; a++) {
        FILE *src = fopen(argv[a], "r");
        if (!src) { s = zp_fail(ZP_ERR_IO, "%s: cannot open", argv[a]); break; }
        char *h = first_line(src);
        if (!h || !strstr(h, "run_id") || (header && strcmp(h, header)))
            s = zp_fail(ZP_ERR_FORMAT, "%s: first line is not the runs.csv header%s", argv[a], header ? " of the other files" : "");
        else if (!header) header = h, h = NULL;
        free(h);
        for (ssize_t n; s == ZP_OK && (n = getline(&line, &cap, src)) > 0;) {
            char id[20] = "";
            sscanf(line[0] == '"' ? line + 1 : line, "%16[0-9a-f]", id);
            if (!id[0] || have_id(have, n_have, id)) continue;
            fputs(line, out);
            if (line[n - 1] != '\n') fputc('\n', out); /* a source without a final newline */
            result_row *g = realloc(have, sizeof *g * (size_t)(n_have + 1));
            if (!g) { s = zp_fail(ZP_ERR_OOM, "merge: no memory"); break; }
            have = g;
            snprintf(have[n_have++].run_id, sizeof have[0].run_id, "%s", id);
            added++;
        }
        fclose(src);
    }
    if (out && (ferror(out) | fclose(out)) && s == ZP_OK) s = zp_fail(ZP_ERR_OOM, "merge: no memory");
    char *head_nl = NULL;
    if (s == ZP_OK && added && asprintf(&head_nl, "%s\n", header) < 0) s = zp_fail(ZP_ERR_OOM, "merge: no memory");
    if (s == ZP_OK && added) s = rio_append_lines(argv[1], head_nl, rows, rows_len);
    free(head_nl), free(header), free(rows), free(line), free(have);
    if (s != ZP_OK) return cli_report("merge", s);
    printf("merge: %d rows added to %s\n", added, argv[1]);
    return 0;
}
