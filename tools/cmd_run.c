/* cmd_run.c - `zipage run EXP [--results DIR] [--force] [--gpus LIST] [--unsafe-no-sandbox]`:
 * runs the experiment experiments/EXP.json (or a path); SHARD=i/N in the environment runs
 * every N-th run, --gpus spreads the runs over a worker per GPU (run_gpus.c).
 * `make experiment EXP=name [GPUS=0,1]` calls it. */
#include <signal.h> /* sigaction: the interrupt's message */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* write, _exit */

#include "cli_common.h" /* cli_value, cli_report */
#include "runner.h"     /* runner_run_experiment */
#include "run_gpus.h"   /* run_gpus */
#include "paths.h"

/* Runs with a row in the results folder, for the interrupt's message (runner_opts.finished). */
static volatile sig_atomic_t finished_runs;

/* SIGINT / SIGTERM: what was kept and how to go on, then exit 130 (only async-signal-safe calls:
 * the number is formatted by hand). The run in progress is lost; a rerun starts it again. */
static void on_interrupt(int sig) {
    char msg[128] = "\ninterrupted: ", num[16];
    int n = (int)finished_runs, k = 0, at = (int)strlen(msg);
    do num[k++] = (char)('0' + n % 10); while ((n /= 10) > 0 && k < 15);
    while (k) msg[at++] = num[--k];
    const char *tail = " runs finished and kept; rerun the same command to resume\n";
    for (const char *p = tail; *p && at < (int)sizeof msg - 1; p++) msg[at++] = *p;
    ssize_t w = write(2, msg, (size_t)at);
    (void)w;
    _exit(sig == SIGINT ? 130 : 143);
}

int cmd_run(int argc, char **argv) {
    runner_opts o = {.results_dir = "results", .shard_count = 1, .finished = &finished_runs};
    const char *exp = NULL, *v, *gpus = NULL;
    char cmdline[2048] = "zipage run";
    for (int i = 1; i < argc; i++) {
        strncat(cmdline, " ", sizeof cmdline - strlen(cmdline) - 1);
        strncat(cmdline, argv[i], sizeof cmdline - strlen(cmdline) - 1);
    }
    o.command_line = cmdline;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: zipage run EXP [--results DIR] [--force] [--gpus LIST] [--unsafe-no-sandbox]   (SHARD=i/N to split a sweep)\n"
                   "  --gpus 0,1,...   one worker process per listed GPU (CUDA_VISIBLE_DEVICES), each taking the next pending run;\n"
                   "                   logs in RESULTS/EXP/logs/gpuG.log (runs on the cpu device get one worker process per entry)\n");
            return 0;
        } else if (!strcmp(argv[i], "--force")) o.force = 1;
        else if (!strcmp(argv[i], "--unsafe-no-sandbox")) o.unsafe_no_sandbox = 1;
        else if (!strcmp(argv[i], "--gpus")) {
            if (!(gpus = cli_value(argc, argv, &i))) return cli_report("run", ZP_ERR_INVALID);
        } else if (!strcmp(argv[i], "--results")) {
            if (!(v = cli_value(argc, argv, &i))) return cli_report("run", ZP_ERR_INVALID);
            o.results_dir = v;
        } else if (argv[i][0] == '-') return cli_report("run", zp_fail(ZP_ERR_INVALID, "unknown flag %s", argv[i]));
        else exp = argv[i];
    }
    if (!exp) return cli_report("run", zp_fail(ZP_ERR_INVALID, "which experiment? (a name in experiments/ or a .json path)"));
    const char *shard = getenv("SHARD");
    if (shard && *shard && (sscanf(shard, "%d/%d", &o.shard_index, &o.shard_count) != 2 || o.shard_count < 1 ||
                            o.shard_index < 0 || o.shard_index >= o.shard_count))
        return cli_report("run", zp_fail(ZP_ERR_INVALID, "SHARD=\"%s\": expected i/N with 0 <= i < N", shard));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    experiment x;
    zp_status s = exp_load(exp, zp_path(ZP_PATH_EXPERIMENTS), &x);
    if (s == ZP_OK) {
        fprintf(stderr, "experiment %s: %d runs\n", x.name, x.n_runs);
        s = gpus ? run_gpus(&x, &o, gpus) : runner_run_experiment(&x, &o);
        exp_free(&x);
    }
    return s == ZP_OK ? 0 : cli_report("run", s);
}
