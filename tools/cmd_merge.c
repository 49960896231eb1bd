/* cmd_merge.c - `zipage merge DEST SRC...`: joins the results of a sweep split into shards
 * (SHARD=i/N, a Slurm job array) by run id.
 *   - CSV files (DEST.csv SRC.csv...): appends the rows of SRC whose run id DEST does not have
 *     yet (a header is written when DEST is new); every file must start with the same header.
 *   - Folders (DEST_DIR SRC_DIR...: results/EXP and results/shards/K/EXP): merges runs.csv and
 *     fidelity.csv so, appends to DEST/samples.jsonl the samples of each run whose row it adds
 *     (from the folder that ran it; stale lines of that run in DEST are dropped first), and
 *     copies meta.json when DEST has none. Samples are durable before their rows, as the runner
 *     writes them: a merge killed midway is completed by running it again.
 * A row is added once (the first source wins); a last line without its newline gets one.
 * Deliberately not here: checking that the shards ran the same experiment at the same commit
 * (the run ids hash both), rewriting rows. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "files.h"
#include "cli_common.h"  /* cli_report */
#include "results_io.h"  /* rio_*: durable appends, the folder lock */

typedef struct {
    char (*id)[17];
    int n, cap;
} id_set;

static int ids_has(const id_set *s, const char *id) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->id[i], id)) return 1;
    return 0;
}

static zp_status ids_add(id_set *s, const char *id) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        char(*g)[17] = realloc(s->id, sizeof *g * (size_t)cap);
        if (!g) return zp_fail(ZP_ERR_OOM, "merge: no memory");
        s->id = g, s->cap = cap;
    }
    snprintf(s->id[s->n++], sizeof s->id[0], "%s", id);
    return ZP_OK;
}

/* The run id that starts a CSV row (quoted by libcsv or not); "" when there is none. */
static void row_id(const char *line, char id[17]) {
    id[0] = 0;
    sscanf(line[0] == '"' ? line + 1 : line, "%16[0-9a-f]", id);
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

/* One CSV merge: DEST's header and ids, then the rows to append and their ids per source. */
typedef struct {
    char *header;  /* DEST's, else the first source's */
    id_set have;   /* DEST's ids and those added so far */
    char *rows;
    size_t len;
    int added, sources; /* rows added; sources that have the file */
} csv_merge;

static zp_status csv_dest(csv_merge *m, const char *dest) {
    FILE *d = fopen(dest, "r");
    if (!d) return ZP_OK;
    m->header = first_line(d);
    char *line = NULL, id[17];
    size_t cap = 0;
    zp_status s = ZP_OK;
    while (s == ZP_OK && getline(&line, &cap, d) > 0) {
        row_id(line, id);
        if (id[0]) s = ids_add(&m->have, id);
    }
    free(line);
    fclose(d);
    return s;
}

/* Adds to out the rows of src that m does not have; their ids go to added (may be NULL). */
static zp_status csv_take(csv_merge *m, FILE *out, const char *src, id_set *added) {
    FILE *f = fopen(src, "r");
    if (!f) return zp_fail(ZP_ERR_IO, "%s: cannot open", src);
    char *h = first_line(f), *line = NULL, id[17];
    zp_status s = ZP_OK;
    if (!h || !strstr(h, "run_id") || (m->header && strcmp(h, m->header)))
        s = zp_fail(ZP_ERR_FORMAT, "%s: first line is not the results header (runs.csv or fidelity.csv)%s", src, m->header ? " of the other files" : "");
    else if (!m->header) m->header = h, h = NULL;
    free(h);
    size_t cap = 0;
    for (ssize_t n; s == ZP_OK && (n = getline(&line, &cap, f)) > 0;) {
        row_id(line, id);
        if (!id[0] || ids_has(&m->have, id)) continue;
        fputs(line, out);
        if (line[n - 1] != '\n') fputc('\n', out); /* a source without a final newline */
        s = ids_add(&m->have, id);
        if (s == ZP_OK && added) s = ids_add(added, id);
        m->added++;
    }
    free(line);
    fclose(f);
    return s;
}

/* Collects the merge of srcs[0..n) into dest (sources that lack the file are skipped when
 * optional); added[k] gets the ids taken from srcs[k] when added is not NULL. */
static zp_status csv_collect(csv_merge *m, const char *dest, char **srcs, int n, int optional, id_set *added) {
    memset(m, 0, sizeof *m);
    ZP_TRY(csv_dest(m, dest));
    FILE *out = open_memstream(&m->rows, &m->len);
    if (!out) return zp_fail(ZP_ERR_OOM, "merge: no memory");
    zp_status s = ZP_OK;
    for (int k = 0; k < n && s == ZP_OK; k++) {
        struct stat sb;
        if (optional && stat(srcs[k], &sb) != 0) continue;
        m->sources++;
        s = csv_take(m, out, srcs[k], added ? &added[k] : NULL);
    }
    if ((ferror(out) | fclose(out)) && s == ZP_OK) s = zp_fail(ZP_ERR_OOM, "merge: no memory");
    return s;
}

static zp_status csv_write(const csv_merge *m, const char *dest) {
    if (!m->added) return ZP_OK;
    char *head = NULL;
    if (asprintf(&head, "%s\n", m->header) < 0) return zp_fail(ZP_ERR_OOM, "merge: no memory");
    zp_status s = rio_append_lines(dest, head, m->rows, m->len);
    free(head);
    return s;
}

static void csv_free(csv_merge *m) {
    free(m->header), free(m->rows), free(m->have.id);
    memset(m, 0, sizeof *m);
}

/* The run id of a samples.jsonl line ({"run_id":"...", first, as the runner writes it). */
static int sample_id(const char *line, char id[17]) {
    id[0] = 0;
    return sscanf(line, "{\"run_id\":\"%16[0-9a-f]\"", id) == 1;
}

/* Appends to dest the lines of src whose run id is in ids. */
static zp_status samples_take(const char *dest, const char *src, const id_set *ids) {
    if (!ids->n) return ZP_OK;
    struct stat sb;
    if (stat(src, &sb) != 0) return ZP_OK; /* fidelity runs write no samples */
    char *txt, *buf = NULL, id[17];
    size_t len, out_len = 0;
    ZP_TRY(zp_read_file(src, &txt, &len));
    FILE *out = open_memstream(&buf, &out_len);
    if (!out) { free(txt); return zp_fail(ZP_ERR_OOM, "merge: no memory"); }
    for (char *line = txt, *nl; (nl = strchr(line, '\n')); line = nl + 1) /* an unterminated tail is a killed append */
        if (sample_id(line, id) && ids_has(ids, id)) fwrite(line, 1, (size_t)(nl - line) + 1, out);
    free(txt);
    zp_status s = (ferror(out) | fclose(out)) ? zp_fail(ZP_ERR_OOM, "merge: no memory") : ZP_OK;
    if (s == ZP_OK && out_len) s = rio_append_lines(dest, NULL, buf, out_len);
    free(buf);
    return s;
}

/* Lines of runs about to be added that dest already holds (a killed run, or a killed merge)
 * are dropped, so that no sample is doubled; one read of dest, a rewrite only when needed. */
static zp_status samples_drop_stale(const char *dest, const id_set *added, int n) {
    struct stat sb;
    if (stat(dest, &sb) != 0) return ZP_OK;
    char *txt;
    ZP_TRY(zp_read_file(dest, &txt, NULL));
    zp_status s = ZP_OK;
    for (int k = 0; k < n && s == ZP_OK; k++)
        for (int i = 0; i < added[k].n && s == ZP_OK; i++) {
            char needle[40];
            snprintf(needle, sizeof needle, "{\"run_id\":\"%s\"", added[k].id[i]);
            if (strstr(txt, needle)) s = rio_drop_lines(dest, needle);
        }
    free(txt);
    return s;
}

static zp_status copy_meta(const char *dest_dir, const char *src_dir) {
    char dst[4200], src[4200], *txt;
    size_t len;
    struct stat sb;
    snprintf(dst, sizeof dst, "%s/meta.json", dest_dir);
    snprintf(src, sizeof src, "%s/meta.json", src_dir);
    if (stat(dst, &sb) == 0 || stat(src, &sb) != 0) return ZP_OK;
    ZP_TRY(zp_read_file(src, &txt, &len));
    zp_status s = rio_replace(dst, txt, len);
    free(txt);
    return s;
}

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The folders' merge: fidelity.csv, then samples, then runs.csv (rows last). */
static zp_status merge_dirs(const char *dest, char **srcs, int n) {
    ZP_TRY(rio_mkdir_p(dest));
    char path[4200], **files = calloc((size_t)n, sizeof *files);
    id_set *added = calloc((size_t)n, sizeof *added);
    zp_status s = files && added ? ZP_OK : zp_fail(ZP_ERR_OOM, "merge: no memory");
    const char *csvs[2] = {"fidelity.csv", "runs.csv"};
    for (int c = 0; c < 2 && s == ZP_OK; c++) {
        for (int k = 0; k < n && s == ZP_OK; k++)
            if (asprintf(&files[k], "%s/%s", srcs[k], csvs[c]) < 0) files[k] = NULL, s = zp_fail(ZP_ERR_OOM, "merge: no memory");
        snprintf(path, sizeof path, "%s/%s", dest, csvs[c]);
        csv_merge m = {0};
        if (s == ZP_OK) s = csv_collect(&m, path, files, n, 1, c == 1 ? added : NULL);
        char spath[4200];
        snprintf(spath, sizeof spath, "%s/samples.jsonl", dest);
        if (s == ZP_OK && c == 1) s = samples_drop_stale(spath, added, n);
        for (int k = 0; k < n && s == ZP_OK && c == 1; k++) {
            char src[4200];
            snprintf(src, sizeof src, "%s/samples.jsonl", srcs[k]);
            s = samples_take(spath, src, &added[k]);
        }
        if (s == ZP_OK) s = csv_write(&m, path);
        if (s == ZP_OK && (m.sources || c == 1)) printf("merge: %d rows added to %s\n", m.added, path);
        csv_free(&m);
        for (int k = 0; k < n; k++) free(files[k]), files[k] = NULL;
    }
    for (int k = 0; s == ZP_OK && k < n; k++) s = copy_meta(dest, srcs[k]);
    for (int k = 0; added && k < n; k++) free(added[k].id);
    free(added), free(files);
    return s;
}

int cmd_merge(int argc, char **argv) {
    static const char *usage = "usage: zipage merge DEST.csv SRC.csv [SRC.csv ...]   or   zipage merge DEST_DIR SRC_DIR [SRC_DIR ...] "
                               "(results/EXP from results/shards/*/EXP: runs.csv, fidelity.csv, samples.jsonl, meta.json)";
    if (argc >= 2 && !strcmp(argv[1], "--help")) { printf("%s\n", usage); return 0; }
    if (argc < 3) return cli_report("merge", zp_fail(ZP_ERR_INVALID, "%s", usage));
    int dirs = 0;
    for (int a = 2; a < argc; a++) dirs += is_dir(argv[a]);
    if (dirs && dirs != argc - 2)
        return cli_report("merge", zp_fail(ZP_ERR_INVALID, "merge: give folders or CSV files, not both (%d of %d sources are folders)", dirs, argc - 2));
    if (!dirs && is_dir(argv[1]))
        return cli_report("merge", zp_fail(ZP_ERR_INVALID, "merge: %s is a folder but the sources are files", argv[1]));
    zp_status s;
    if (dirs) s = merge_dirs(argv[1], argv + 2, argc - 2);
    else {
        csv_merge m;
        s = csv_collect(&m, argv[1], argv + 2, argc - 2, 0, NULL);
        if (s == ZP_OK) s = csv_write(&m, argv[1]);
        if (s == ZP_OK) printf("merge: %d rows added to %s\n", m.added, argv[1]);
        csv_free(&m);
    }
    return s == ZP_OK ? 0 : cli_report("merge", s);
}
