/* test_results_io.c - the results folder's file operations: mkdir -p (and a file in the way),
 * appends that write the header into a file left empty by a kill, cut an unterminated last
 * line back before appending, and fail with the file's name on a full device (/dev/full);
 * line dropping and replacement by rename; the git commit read from .git equals git's own; a
 * runs.csv's rows named in tables and plots by what they ran (StreamingLLM's position shift,
 * per-layer budgets); several processes appending to and dropping lines of one file keep every
 * line whole and none lost (the folder lock), and a claimed run is refused to a second
 * process until the first releases it or ends.
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "config.h"
#include "results_io.h"
#include "results_table.h"
#include "test_util.h"

static char *slurp(const char *path) {
    char *t = NULL;
    if (zp_read_file(path, &t, NULL) != ZP_OK) return NULL;
    return t;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fputs(text, f), fclose(f);
}

/* Four processes append 300 lines each to one file, each line in its own append; every
 * process also appends a marker line and drops it again each time (a rewrite by rename, as a
 * resumed run drops its stale samples), which without the lock loses other writers' lines. */
static void concurrent_appends(const char *dir) {
    char path[800];
    snprintf(path, sizeof path, "%s/shared.jsonl", dir);
    unlink(path);
    enum { N_PROC = 4, N_LINES = 300 };
    pid_t pids[N_PROC];
    for (int p = 0; p < N_PROC; p++) {
        if ((pids[p] = fork()) != 0) continue;
        int bad = 0;
        for (int i = 0; i < N_LINES && !bad; i++) {
            char line[256], marker[64], needle[32];
            int n = snprintf(line, sizeof line, "{\"writer\":%d,\"line\":%d,\"pad\":\"%0*d\"}\n", p, i, 40 + i % 50, 0);
            bad |= rio_append_lines(path, NULL, line, (size_t)n) != ZP_OK;
            snprintf(needle, sizeof needle, "stale-%d", p);
            n = snprintf(marker, sizeof marker, "{\"%s\":1}\n", needle);
            if (i % 10 == 0) bad |= rio_append_lines(path, NULL, marker, (size_t)n) != ZP_OK || rio_drop_lines(path, needle) != ZP_OK;
        }
        _exit(bad);
    }
    for (int p = 0; p < N_PROC; p++) {
        int st = 0;
        CHECK(waitpid(pids[p], &st, 0) == pids[p] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    char *t = slurp(path);
    CHECK(t != NULL);
    if (!t) return;
    int seen[N_PROC][N_LINES] = {{0}}, lines = 0, whole = 1;
    for (char *l = strtok(t, "\n"); l; l = strtok(NULL, "\n"), lines++) {
        int w, i, end = 0;
        if (sscanf(l, "{\"writer\":%d,\"line\":%d,\"pad\":\"%*[0]\"}%n", &w, &i, &end) != 2 || l[end] || w < 0 || w >= N_PROC || i < 0 ||
            i >= N_LINES)
            whole = 0;
        else seen[w][i]++;
    }
    free(t);
    int once = 1;
    for (int p = 0; p < N_PROC; p++)
        for (int i = 0; i < N_LINES; i++) once &= seen[p][i] == 1;
    if (!whole || !once || lines != N_PROC * N_LINES) fprintf(stderr, "concurrent appends: %d lines, whole %d, each once %d\n", lines, whole, once);
    CHECK(whole && once && lines == N_PROC * N_LINES);
}

/* A claim is exclusive across processes and ends with its holder. */
static void claims(const char *dir) {
    int fd = -1, r[2];
    CHECK_OK(rio_claim(dir, "0123456789abcdef", &fd));
    CHECK(fd >= 0);
    CHECK(pipe(r) == 0);
    pid_t c = fork();
    if (c == 0) { /* another process: refused while the parent holds it */
        int other = 0;
        char ok = rio_claim(dir, "0123456789abcdef", &other) == ZP_OK && other < 0 ? 'y' : 'n';
        if (write(r[1], &ok, 1) != 1) _exit(2);
        _exit(0);
    }
    char got = 0;
    CHECK(read(r[0], &got, 1) == 1 && got == 'y');
    waitpid(c, NULL, 0);
    rio_unlock(fd);
    c = fork();
    if (c == 0) { /* released: this child takes it and ends without releasing it by hand */
        int mine = -1;
        _exit(rio_claim(dir, "0123456789abcdef", &mine) == ZP_OK && mine >= 0 ? 0 : 1);
    }
    int st = 0;
    CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_OK(rio_claim(dir, "0123456789abcdef", &fd)); /* its end released it */
    CHECK(fd >= 0);
    rio_unlock(fd);
    close(r[0]), close(r[1]);
}

/* Table labels and plot curves of three configurations that share a policy name or a budget. */
static void table_names(const char *dir) {
    char path[800];
    snprintf(path, sizeof path, "%s/names.csv", dir);
    put(path, "run_id,dataset,policy,policy_params,nmax,window,pass_at_1,layer_budget\n"
              "a,d,streaming,\"{\"\"position_shift\"\":false}\",2,16,0.5,uniform\n"
              "b,d,streaming,\"{\"\"position_shift\"\":true}\",2,16,0.6,uniform\n"
              "c,d,zipage,{},2,16,0.7,pyramid\n");
    result_row *rows = NULL;
    int n = 0;
    CHECK_OK(results_read(path, &rows, &n));
    CHECK(n == 3);
    if (n != 3) return;
    char curve[3][64], *table = NULL;
    for (int i = 0; i < 3; i++) results_curve(&rows[i], curve[i], sizeof curve[i]);
    CHECK(!strcmp(curve[0], "streaming") && !strcmp(curve[1], "streaming+shift") && !strcmp(curve[2], "zipage+pyramid"));
    size_t len = 0;
    FILE *m = open_memstream(&table, &len);
    results_print_table(m, rows, n);
    fclose(m);
    CHECK(strstr(table, "| StreamingLLM (no position shift) N=2") && strstr(table, "| StreamingLLM (position shift) N=2") &&
          strstr(table, "| Zipage + pyramid budgets N=2"));
    free(table);
    free(rows);
}

static int file_equals(const char *path, const char *want) {
    char *t = slurp(path);
    int ok = t && !strcmp(t, want);
    if (!ok) fprintf(stderr, "%s: got \"%s\", want \"%s\"\n", path, t ? t : "(unreadable)", want);
    free(t);
    return ok;
}

int main(void) {
    char dir[600], path[700], tmp[800];
    snprintf(dir, sizeof dir, "%s/rio/a/b/c", ZP_TEST_TMP);
    CHECK_OK(rio_mkdir_p(dir));
    CHECK_OK(rio_mkdir_p(dir)); /* exists already */
    struct stat sb;
    CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode));
    snprintf(path, sizeof path, "%s/file", dir);
    put(path, "x");
    snprintf(tmp, sizeof tmp, "%s/sub", path);
    CHECK_FAILS(rio_mkdir_p(tmp), ZP_ERR_IO, "not a directory");

    /* appends: header into a new or empty file, whole lines, partial tails cut */
    snprintf(path, sizeof path, "%s/runs.csv", dir);
    remove(path);
    CHECK_OK(rio_append_lines(path, "h1,h2\n", "a,1\n", 4));
    CHECK_OK(rio_append_lines(path, "h1,h2\n", "b,2\n", 4));
    CHECK(file_equals(path, "h1,h2\na,1\nb,2\n"));
    put(path, ""); /* a kill between creating the file and its first write */
    CHECK_OK(rio_append_lines(path, "h1,h2\n", "c,3\n", 4));
    CHECK(file_equals(path, "h1,h2\nc,3\n"));
    put(path, "h1,h2\nc,3\nd,"); /* a kill in the middle of an append */
    CHECK_OK(rio_append_lines(path, "h1,h2\n", "e,5\n", 4));
    CHECK(file_equals(path, "h1,h2\nc,3\ne,5\n"));
    put(path, "h1,h"); /* even the header cut: the file restarts */
    CHECK_OK(rio_append_lines(path, "h1,h2\n", "f,6\n", 4));
    CHECK(file_equals(path, "h1,h2\nf,6\n"));
    CHECK_FAILS(rio_append_lines("/dev/full", NULL, "x\n", 2), ZP_ERR_IO, "/dev/full");
    snprintf(tmp, sizeof tmp, "%s/missing/runs.csv", dir);
    CHECK_FAILS(rio_append_lines(tmp, NULL, "x\n", 2), ZP_ERR_IO, "missing/runs.csv");

    /* dropping the lines of a run, and the unterminated tail of a killed append */
    snprintf(path, sizeof path, "%s/samples.jsonl", dir);
    put(path, "{\"run_id\":\"A\",\"s\":0}\n{\"run_id\":\"B\",\"s\":0}\n{\"run_id\":\"A\",\"s\":1}\n{\"run_id\":\"B\",\"s");
    CHECK_OK(rio_drop_lines(path, "\"run_id\":\"A\""));
    CHECK(file_equals(path, "{\"run_id\":\"B\",\"s\":0}\n"));
    CHECK_OK(rio_drop_lines(path, "\"run_id\":\"Z\"")); /* nothing to drop */
    CHECK(file_equals(path, "{\"run_id\":\"B\",\"s\":0}\n"));
    snprintf(tmp, sizeof tmp, "%s/none.jsonl", dir);
    CHECK_OK(rio_drop_lines(tmp, "x")); /* no file */
    CHECK(access(tmp, F_OK) != 0);

    /* replacement by rename, no temporary left */
    snprintf(path, sizeof path, "%s/meta.json", dir);
    put(path, "old");
    CHECK_OK(rio_replace(path, "{\"new\": 1}\n", 11));
    CHECK(file_equals(path, "{\"new\": 1}\n"));
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    CHECK(access(tmp, F_OK) != 0);

    /* the commit, from .git, against git itself (run in the source tree) */
    char here[4096], mine[64], theirs[64] = "";
    CHECK(getcwd(here, sizeof here) != NULL);
    CHECK(chdir(ZP_TEST_DATA) == 0);
    rio_git_commit(mine, sizeof mine);
    FILE *p = popen("git rev-parse --short=12 HEAD 2>/dev/null", "r");
    if (p) {
        if (!fgets(theirs, sizeof theirs, p)) theirs[0] = 0;
        pclose(p);
    }
    theirs[strcspn(theirs, "\n")] = 0;
    if (theirs[0]) {
        if (strcmp(mine, theirs)) fprintf(stderr, "commit: ours %s, git's %s\n", mine, theirs);
        CHECK(!strcmp(mine, theirs));
    } else {
        printf("test_results_io: git not available here, commit read as %s\n", mine);
    }
    CHECK(chdir("/") == 0);
    rio_git_commit(mine, sizeof mine);
    CHECK(!strcmp(mine, "unknown"));
    CHECK(chdir(here) == 0);
    table_names(dir);
    concurrent_appends(dir);
    claims(dir);
    return zp_test_finish("test_results_io");
}
