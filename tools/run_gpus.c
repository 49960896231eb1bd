/* run_gpus.c - `zipage run EXP --gpus 0,1,...`: one worker process per GPU, or per group of tp
 * GPUs when the experiment's runs are tensor parallel (tp > 1: GPUs 0,1 | 2,3 | ... of the
 * list, in order), on one results folder. Each worker is forked with CUDA_VISIBLE_DEVICES set
 * to its GPUs (and NVLink multicast off, NCCL_NVLS_ENABLE=0), writes its log to
 * <results>/<exp>/logs/gpu<G>.log (gpu<G>-<H>.log for a group) and
 * runs runner_run_experiment over the whole experiment: the runner's run claims
 * (results_io.h) hand each pending run to the first free worker, and its folder lock keeps
 * the one runs.csv and samples.jsonl whole, so the result is the folder a one-GPU sweep writes
 * (rows in the order the runs finished) and is resumable the same way. The parent waits for
 * every worker and reports each failed one with its log's last line.
 *
 * Deliberately not here: runs of different tp in one sweep (refused), placing runs on GPUs
 * by hand (a run naming cuda:N is refused: the workers place runs), a scheduler across
 * machines (SHARD=i/N and experiments/slurm/ split a sweep over nodes). */
#define _GNU_SOURCE
#include "run_gpus.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_common.h"  /* cli_ids */
#include "results_io.h"  /* rio_mkdir_p */

#define RUN_GPUS_MAX 64

/* A run that names cuda:N cannot follow a worker to its GPU (each sees one device, cuda:0). */
static zp_status check_devices(const experiment *x) {
    for (int i = 0; i < x->n_runs; i++) {
        const char *d = x->runs[i].device;
        if (!strncmp(d, "cuda:", 5) && strcmp(d, "cuda:0"))
            return zp_fail(ZP_ERR_INVALID, "--gpus: run %d of %s names device \"%s\"; with --gpus each worker sees only its own GPU: set \"device\": \"cuda\"",
                           i + 1, x->name, d);
    }
    return ZP_OK;
}

static zp_status parse_gpus(const char *list, int *gpus, int *n) {
    int *ids, k;
    ZP_TRY(cli_list("--gpus", list));
    ZP_TRY(cli_ids("--gpus", list, &ids, &k));
    zp_status s = ZP_OK;
    if (k > RUN_GPUS_MAX) s = zp_fail(ZP_ERR_INVALID, "--gpus \"%s\": %d GPUs, at most %d", list, k, RUN_GPUS_MAX);
    for (int i = 0; s == ZP_OK && i < k; i++)
        for (int j = 0; j < i; j++)
            if (ids[i] == ids[j]) { s = zp_fail(ZP_ERR_INVALID, "--gpus \"%s\": GPU %d is listed twice", list, ids[i]); break; }
    if (s == ZP_OK) memcpy(gpus, ids, sizeof *ids * (size_t)k), *n = k;
    free(ids);
    return s;
}

/* The tensor-parallel size every run of x shares (a worker owns that many GPUs). */
static zp_status group_size(const experiment *x, int n_gpus, int *tp) {
    *tp = x->n_runs ? x->runs[0].tp : 1;
    for (int i = 1; i < x->n_runs; i++)
        if (x->runs[i].tp != *tp)
            return zp_fail(ZP_ERR_INVALID, "--gpus: run %d of %s has tp %d, run 1 tp %d; one sweep over --gpus needs one tp (a worker owns tp GPUs)",
                           i + 1, x->name, x->runs[i].tp, *tp);
    if (*tp < 1) *tp = 1;
    if (n_gpus % *tp)
        return zp_fail(ZP_ERR_INVALID, "--gpus: %d GPUs do not split into groups of tp %d (the runs of %s): list a multiple of %d", n_gpus, *tp,
                       x->name, *tp);
    return ZP_OK;
}

/* The child: its GPUs ("2,3"), its log as stdout and stderr, the whole experiment. Never returns. */
static void worker(experiment *x, const runner_opts *o, const char *ids, const char *log) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(3);
    close(fd);
    if (setenv("CUDA_VISIBLE_DEVICES", ids, 1) || setenv("NCCL_NVLS_ENABLE", "0", 1)) _exit(3);
    fprintf(stderr, "worker on GPU %s (CUDA_VISIBLE_DEVICES=%s, pid %ld)\n", ids, ids, (long)getpid());
    zp_status s = runner_run_experiment(x, o);
    if (s != ZP_OK) fprintf(stderr, "zipage run: error: %s\n", zp_last_error());
    fflush(NULL);
    _exit(s == ZP_OK ? 0 : 1);
}

/* The log's last non-empty line (the worker's summary or its error). */
static void last_line(const char *log, char *out, size_t n) {
    out[0] = 0;
    FILE *f = fopen(log, "r");
    if (!f) return;
    char line[2048];
    while (fgets(line, sizeof line, f))
        if (line[0] != '\n') snprintf(out, n, "%s", line);
    fclose(f);
    out[strcspn(out, "\n")] = 0;
}

zp_status run_gpus(experiment *x, const runner_opts *o, const char *list) {
    int gpus[RUN_GPUS_MAX], n = 0, tp;
    pid_t pids[RUN_GPUS_MAX];
    char logs[RUN_GPUS_MAX][4400], dir[4200], ids[RUN_GPUS_MAX][RUN_GPUS_MAX * 4], names[RUN_GPUS_MAX][RUN_GPUS_MAX * 4];
    ZP_TRY(parse_gpus(list, gpus, &n));
    ZP_TRY(check_devices(x));
    ZP_TRY(group_size(x, n, &tp));
    const int n_workers = n / tp;
    for (int w = 0; w < n_workers; w++) { /* "2,3" for CUDA_VISIBLE_DEVICES, "2-3" in the log's name */
        size_t a = 0, b = 0;
        for (int k = 0; k < tp; k++) {
            a += (size_t)snprintf(ids[w] + a, sizeof ids[w] - a, "%s%d", k ? "," : "", gpus[w * tp + k]);
            b += (size_t)snprintf(names[w] + b, sizeof names[w] - b, "%s%d", k ? "-" : "", gpus[w * tp + k]);
        }
    }
    if (o->force) /* a forced worker skips no finished run: each would redo every run another worker finished */
        return zp_fail(ZP_ERR_INVALID, "--gpus with --force would redo a run once per worker: run --force without --gpus, or into a new --results folder");
    snprintf(dir, sizeof dir, "%s/%s", o->results_dir, x->name);
    ZP_TRY(rio_mkdir_p(dir));
    ZP_TRY(runner_preflight(x, o, dir)); /* here once, not in each worker's log */
    snprintf(dir, sizeof dir, "%s/%s/logs", o->results_dir, x->name);
    ZP_TRY(rio_mkdir_p(dir));
    fflush(NULL); /* nothing buffered is written twice by the children */
    int started = 0;
    zp_status s = ZP_OK;
    for (; started < n_workers; started++) {
        snprintf(logs[started], sizeof logs[0], "%s/gpu%s.log", dir, names[started]);
        pids[started] = fork();
        if (pids[started] == 0) worker(x, o, ids[started], logs[started]);
        if (pids[started] < 0) { s = zp_fail(ZP_ERR_IO, "--gpus: fork of the worker for GPU %s failed: %s", ids[started], strerror(errno)); break; }
        fprintf(stderr, "GPU %s: worker %ld, log %s\n", ids[started], (long)pids[started], logs[started]);
    }
    int failed = 0, first_bad = -1;
    for (int i = 0; i < started; i++) {
        int st;
        while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {}
        char last[2048];
        last_line(logs[i], last, sizeof last);
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok && first_bad < 0) first_bad = i;
        failed += !ok;
        if (ok) fprintf(stderr, "GPU %s: %s\n", ids[i], last);
        else if (WIFSIGNALED(st)) fprintf(stderr, "GPU %s: worker killed by signal %d; last line of %s: %s\n", ids[i], WTERMSIG(st), logs[i], last);
        else fprintf(stderr, "GPU %s: worker failed (exit %d): %s (log %s)\n", ids[i], WEXITSTATUS(st), last, logs[i]);
    }
    if (s != ZP_OK) return s;
    if (failed)
        return zp_fail(ZP_ERR_BACKEND, "--gpus: %d of %d workers failed, first on GPU %s (log %s); the finished runs are kept: run again to resume",
                       failed, n_workers, ids[first_bad], logs[first_bad]);
    return ZP_OK;
}
