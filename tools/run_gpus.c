/* run_gpus.c - `zipage run EXP --gpus 0,1,...`: one worker process per GPU on one results
 * folder. Each worker is forked with CUDA_VISIBLE_DEVICES set to its GPU (and NVLink
 * multicast off, NCCL_NVLS_ENABLE=0), writes its log to <results>/<exp>/logs/gpu<G>.log and
 * runs runner_run_experiment over the whole experiment: the runner's run claims
 * (results_io.h) hand each pending run to the first free worker, and its folder lock keeps
 * the one runs.csv and samples.jsonl whole, so the result is the folder a one-GPU sweep writes
 * (rows in the order the runs finished) and is resumable the same way. The parent waits for
 * every worker and reports each failed one with its log's last line.
 *
 * Deliberately not here: tensor parallelism (one run on several GPUs), placing runs on GPUs
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

/* The child: its GPU, its log as stdout and stderr, the whole experiment. Never returns. */
static void worker(experiment *x, const runner_opts *o, int gpu, const char *log) {
    char id[16];
    snprintf(id, sizeof id, "%d", gpu);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(3);
    close(fd);
    if (setenv("CUDA_VISIBLE_DEVICES", id, 1) || setenv("NCCL_NVLS_ENABLE", "0", 1)) _exit(3);
    fprintf(stderr, "worker on GPU %d (CUDA_VISIBLE_DEVICES=%d, pid %ld)\n", gpu, gpu, (long)getpid());
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
    int gpus[RUN_GPUS_MAX], n = 0;
    pid_t pids[RUN_GPUS_MAX];
    char logs[RUN_GPUS_MAX][4400], dir[4200];
    ZP_TRY(parse_gpus(list, gpus, &n));
    ZP_TRY(check_devices(x));
    if (o->force) /* a forced worker skips no finished run: each would redo every run another worker finished */
        return zp_fail(ZP_ERR_INVALID, "--gpus with --force would redo a run once per worker: run --force without --gpus, or into a new --results folder");
    snprintf(dir, sizeof dir, "%s/%s/logs", o->results_dir, x->name);
    ZP_TRY(rio_mkdir_p(dir));
    fflush(NULL); /* nothing buffered is written twice by the children */
    int started = 0;
    zp_status s = ZP_OK;
    for (; started < n; started++) {
        snprintf(logs[started], sizeof logs[0], "%s/gpu%d.log", dir, gpus[started]);
        pids[started] = fork();
        if (pids[started] == 0) worker(x, o, gpus[started], logs[started]);
        if (pids[started] < 0) { s = zp_fail(ZP_ERR_IO, "--gpus: fork of the worker for GPU %d failed: %s", gpus[started], strerror(errno)); break; }
        fprintf(stderr, "GPU %d: worker %ld, log %s\n", gpus[started], (long)pids[started], logs[started]);
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
        if (ok) fprintf(stderr, "GPU %d: %s\n", gpus[i], last);
        else if (WIFSIGNALED(st)) fprintf(stderr, "GPU %d: worker killed by signal %d; last line of %s: %s\n", gpus[i], WTERMSIG(st), logs[i], last);
        else fprintf(stderr, "GPU %d: worker failed (exit %d): %s (log %s)\n", gpus[i], WEXITSTATUS(st), last, logs[i]);
    }
    if (s != ZP_OK) return s;
    if (failed)
        return zp_fail(ZP_ERR_BACKEND, "--gpus: %d of %d workers failed, first on GPU %d (log %s); the finished runs are kept: run again to resume",
                       failed, n, gpus[first_bad], logs[first_bad]);
    return ZP_OK;
}
