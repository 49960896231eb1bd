/* zipage.c - the command line: finds the harness folder (models/, datasets/data/,
 * experiments/: ZIPAGE_HOME, else the tree the binary sits in, else the source tree of the
 * build) and dispatches to subcommands. Each subcommand lives in tools/cmd_<name>.c and prints
 * its own flags with --help. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_options.h" /* cli_backend_options_env */
#include "engine.h"      /* zp_engine_set_default_backend_options */
#include "paths.h"

int cmd_mkmodel(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_prompts(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_table(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_fidelity(int argc, char **argv);
int cmd_grade(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"mkmodel", cmd_mkmodel, "write a checkpoint folder with seeded random weights for a preset or config"},
    {"generate", cmd_generate, "generate tokens from prompt ids with the engine"},
    {"logits", cmd_logits, "write the logits of a prompt (last position or all) as JSON"},
    {"bench", cmd_bench, "prefill and decode throughput and peak memory of a fixed workload"},
    {"run", cmd_run, "run an experiment (experiments/NAME.json): sweeps, runs.csv, samples.jsonl, meta.json"},
    {"table", cmd_table, "Markdown table (or plot data) of an experiment's runs.csv"},
    {"fidelity", cmd_fidelity, "teacher-forced KL and top-1 agreement of each policy against full KV"},
    {"grade", cmd_grade,
     "grade finished outputs again (a results folder in place, or foreign JSONL) with either grader"},
    {"calibrate", cmd_calibrate,
     "TriAttention's statistics of a model from calibration text (the triattention policy's \"stats\")"},
    {"serve", cmd_serve,
     "an OpenAI-compatible HTTP server on the engine (any policy): /v1/completions, /v1/chat/completions, /metrics"},
    {"merge", cmd_merge, "merge shard runs.csv files into one, by run id"},
    {"prompts", cmd_prompts, "render a dataset through the model's chat template and tokenize it (JSON lines)"},
    {"tokenize", cmd_tokenize, "text to token ids (or --decode ids to text) with a model's tokenizer"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: zipage <command> [flags]   (zipage <command> --help for its flags)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
}

/* 0, or -1 after an error line: ZIPAGE_HOME set to a folder that is not a harness folder. */
static int find_home(void) {
    const char *env = getenv("ZIPAGE_HOME");
    if (env && *env) {
        if (zp_paths_set_home(env) == ZP_OK) return 0;
        fprintf(stderr, "zipage: error: ZIPAGE_HOME: %s\n", zp_last_error());
        return -1;
    }
    char dir[4096];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) return 0; /* the build's source tree stays the home */
    dir[n] = 0;
    for (int up = 0; up < 3; up++) { /* bin/zipage, build/zipage, build/tools/zipage */
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) break;
        *slash = 0;
        if (zp_paths_is_home(dir)) return zp_paths_set_home(dir) == ZP_OK ? 0 : -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (find_home() != 0) return 2;
    zp_backend_options bo = zp_backend_options_default(); /* the ZIPAGE_<NAME> tuning switches of the benchmark scripts */
    if (cli_backend_options_env(&bo) != ZP_OK) {
        fprintf(stderr, "zipage: error: %s\n", zp_last_error());
        return 2;
    }
    zp_engine_set_default_backend_options(&bo);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "zipage: error: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
