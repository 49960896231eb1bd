/* cmd_generate.c - `zipage generate` (engine, sampled or greedy) and `zipage logits`
 * (one prefill through the model, logits to JSON). Text prompts arrive with the tokenizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"       /* zp_chat_detect, zp_chat_render */
#include "cli_common.h" /* flag parsing, cli_report */
#include "cli_engine.h" /* engine flags shared with bench */
#include "engine.h"     /* zp_engine_* */
#include "tokenizer.h"  /* text prompts and decoded outputs */
#include "clock.h"

typedef struct {
    zp_engine_config ec;
    zp_sampling_params sp;
    int *prompt, n_prompt, n_samples;
    int64_t seed;
    const char *out_json;
    int all_positions;
    const char *text, *system;  /* --prompt TEXT: rendered through the chat template unless raw */
    int raw, no_thinking;
    zp_tokenizer *tok;
} gen_args;

static void usage(FILE *f, const char *cmd) {
    fprintf(f,
            "usage: zipage %s --model DIR --prompt-ids 1,2,3 [flags]\n"
            "  --model DIR            checkpoint folder (config.json + safetensors)\n"
            "  --prompt-ids LIST      prompt token ids, comma separated\n"
            "  --prompt TEXT          a user message, rendered with the model's chat template and tokenizer\n"
            "  --system TEXT          system prompt for --prompt;  --raw: no chat template;  --no-thinking (Qwen3)\n"
            "  --out FILE.json        write results as JSON\n", cmd);
    if (!strcmp(cmd, "logits")) { fprintf(f, "  --all                  logits of every prompt position (default: last)\n"); return; }
    fprintf(f, "  --max-tokens N         tokens to generate (default 64)\n"
               "  --greedy               argmax decoding (default)\n"
               "  --temperature T        sample at temperature T (0 = greedy)\n"
               "  --top-p P              nucleus sampling (default 1.0)\n"
               "  --top-k K              top-k sampling (default 0 = off)\n"
               "  --seed S               sampling seed (default 0)\n"
               "  --n N                  samples of the prompt (default 1)\n"
               "  --ignore-eos           do not stop at EOS\n");
    cli_engine_usage(f);
}

/* --prompt: chat template (unless --raw) and the model folder's tokenizer. */
static zp_status text_prompt(gen_args *g) {
    ZP_TRY(zp_tokenizer_load(g->ec.model_dir, &g->tok));
    char *rendered = NULL;
    if (!g->raw) {
        zp_chat_opts co = {ZP_CHAT_QWEN3, !g->no_thinking, g->system};
        ZP_TRY(zp_chat_detect(g->ec.model_dir, &co.family));
        ZP_TRY(zp_chat_render(&co, g->text, &rendered));
    }
    const char *t = rendered ? rendered : g->text;
    zp_status s = zp_tokenizer_encode(g->tok, t, strlen(t), 1, &g->prompt, &g->n_prompt);
    free(rendered);
    return s;
}

static zp_status parse(int argc, char **argv, gen_args *g, const char *cmd) {
    memset(g, 0, sizeof *g);
    g->ec = zp_engine_config_default();
    g->sp = zp_sampling_default();
    g->n_samples = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int is_flag = !strcmp(a, "--greedy") || !strcmp(a, "--ignore-eos") || cli_engine_switch(a) || !strcmp(a, "--all") ||
                      !strcmp(a, "--raw") || !strcmp(a, "--no-thinking");
        if (!strcmp(a, "--help")) { usage(stdout, cmd); exit(0); }
        if (!is_flag && !(v = cli_value(argc, argv, &i))) return ZP_ERR_INVALID;
        if (!strcmp(a, "--model")) g->ec.model_dir = v;
        else if (!strcmp(a, "--prompt-ids")) ZP_TRY(cli_ids(a, v, &g->prompt, &g->n_prompt));
        else if (!strcmp(a, "--prompt")) g->text = v;
        else if (!strcmp(a, "--system")) g->system = v;
        else if (!strcmp(a, "--raw")) g->raw = 1;
        else if (!strcmp(a, "--no-thinking")) g->no_thinking = 1;
        else if (!strcmp(a, "--out")) g->out_json = v;
        else if (!strcmp(a, "--all")) g->all_positions = 1;
        else if (!strcmp(a, "--max-tokens")) ZP_TRY(cli_int(a, v, 1, 1 << 24, &g->sp.max_tokens));
        else if (!strcmp(a, "--greedy")) g->sp.temperature = 0;
        else if (!strcmp(a, "--temperature")) ZP_TRY(cli_float(a, v, 0, 100, &g->sp.temperature));
        else if (!strcmp(a, "--top-p")) ZP_TRY(cli_float(a, v, 1e-6, 1, &g->sp.top_p));
        else if (!strcmp(a, "--top-k")) ZP_TRY(cli_int(a, v, 0, 1 << 30, &g->sp.top_k));
        else if (!strcmp(a, "--seed")) ZP_TRY(cli_i64(a, v, 0, INT64_MAX, &g->seed));
        else if (!strcmp(a, "--n")) ZP_TRY(cli_int(a, v, 1, 1 << 20, &g->n_samples));
        else if (!strcmp(a, "--ignore-eos")) g->sp.ignore_eos = 1;
        else {
            int matched;
            ZP_TRY(cli_engine_flag(a, v, &g->ec, &matched));
            if (!matched) { usage(stderr, cmd); return zp_fail(ZP_ERR_INVALID, "unknown flag %s", a); }
        }
    }
    if (!g->ec.model_dir) return zp_fail(ZP_ERR_INVALID, "--model DIR is required (make one with `zipage mkmodel`)");
    if (!g->prompt && !g->text) return zp_fail(ZP_ERR_INVALID, "--prompt TEXT or --prompt-ids LIST is required");
    if (g->text) return text_prompt(g);
    return ZP_OK;
}

static void print_ids(FILE *f, const int *ids, int n) {
    for (int i = 0; i < n; i++) fprintf(f, i ? ",%d" : "%d", ids[i]);
}

static zp_status run_generate(const gen_args *g) {
    zp_engine *e;
    ZP_TRY(zp_engine_init(&g->ec, &e));
    zp_status s = ZP_OK;
    for (int k = 0; s == ZP_OK && k < g->n_samples; k++)
        s = zp_engine_add_request(e, g->prompt, g->n_prompt, &g->sp, 0, k, (uint64_t)g->seed);
    double t0 = zp_now();
    while (s == ZP_OK && zp_engine_has_unfinished(e)) s = zp_engine_step(e);
    double dt = zp_now() - t0;
    zp_output *outs = calloc((size_t)g->n_samples, sizeof *outs);
    int n = (s == ZP_OK && outs) ? zp_engine_poll(e, outs, g->n_samples) : 0;
    FILE *jf = (s == ZP_OK && g->out_json) ? fopen(g->out_json, "w") : NULL;
    if (s == ZP_OK && g->out_json && !jf) s = zp_fail(ZP_ERR_IO, "%s: cannot create", g->out_json);
    if (jf) fprintf(jf, "{\"samples\": [");
    zp_engine_stats st;
    zp_engine_get_stats(e, &st);
    for (int i = 0; i < n; i++) {
        printf("sample %d (%s, %d tokens): ", outs[i].sample_index, zp_finish_name(outs[i].finish), outs[i].n_tokens);
        char *text = NULL;
        if (g->tok && zp_tokenizer_decode(g->tok, outs[i].tokens, outs[i].n_tokens, &text, NULL) == ZP_OK) printf("%s", text);
        else print_ids(stdout, outs[i].tokens, outs[i].n_tokens);
        free(text);
        printf("\n");
        if (jf) {
            fprintf(jf, "%s\n  {\"sample\": %d, \"finish\": \"%s\", \"tokens\": [", i ? "," : "", outs[i].sample_index,
                    zp_finish_name(outs[i].finish));
            print_ids(jf, outs[i].tokens, outs[i].n_tokens);
            fprintf(jf, "]}");
        }
        zp_output_free(&outs[i]);
    }
    if (jf) { fprintf(jf, "\n], \"generated_tokens\": %lld, \"seconds\": %.6f}\n", (long long)st.generated_tokens, dt); fclose(jf); }
    if (s == ZP_OK)
        printf("%lld tokens in %.3f s: %.1f tokens/s (prefill %lld tokens, %lld from prefix cache; %lld preemptions)\n",
               (long long)st.generated_tokens, dt, dt > 0 ? st.generated_tokens / dt : 0.0, (long long)st.prefill_tokens,
               (long long)st.prefix_hit_tokens, (long long)st.preemptions);
    if (s == ZP_OK)
        printf("KV pool: %d blocks of %d tokens (%lld tokens), peak %d blocks in use, at most %d requests running\n", st.num_blocks,
               st.block_size, (long long)st.num_blocks * st.block_size, st.peak_blocks, st.peak_running);
    if (s == ZP_OK && st.op_seconds[ZP_OP_GEMM] > 0)
        printf("device time (ZIPAGE_PROFILE): GEMM %.3f s, attention %.3f s, elementwise %.3f s, sampling %.3f s; "
               "prefill %.3f s and decode %.3f s of host-timed steps (%lld decode steps)\n",
               st.op_seconds[ZP_OP_GEMM], st.op_seconds[ZP_OP_ATTENTION], st.op_seconds[ZP_OP_ELEMENTWISE], st.op_seconds[ZP_OP_SAMPLING],
               st.prefill_seconds, st.decode_seconds, (long long)st.decode_steps);
    if (s == ZP_OK && st.compressions)
        printf("policy %s: %lld compressions, %lld tokens evicted (over layers and KV heads), %.0f tokens kept per request "
               "(peak %d held), %.3f s compressing, %lld request-steps waited on compression\n",
               g->ec.policy, (long long)st.compressions, (long long)st.tokens_evicted, st.mean_retained, st.peak_request_tokens,
               st.compress_seconds, (long long)st.compress_wait_steps);
    free(outs);
    zp_engine_free(e);
    return s;
}

static zp_status run_logits(const gen_args *g);

/* Parses the shared flags, runs one of the two commands, reports. */
static int run_command(int argc, char **argv, const char *name, zp_status (*fn)(const gen_args *)) {
    gen_args g;
    zp_status s = parse(argc, argv, &g, name);
    if (s == ZP_OK) s = fn(&g);
    free(g.prompt);
    if (g.tok) zp_tokenizer_free(g.tok);
    return s == ZP_OK ? 0 : cli_report(name, s);
}

int cmd_generate(int argc, char **argv) { return run_command(argc, argv, "generate", run_generate); }

/* ---------------------------------------------------------------- logits */

static zp_status write_logits_json(const char *path, const gen_args *g, const float *lg, int rows, int V) {
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) return zp_fail(ZP_ERR_IO, "%s: cannot create", path);
    fprintf(f, "{\"model\": \"%s\", \"prompt_ids\": [", g->ec.model_dir);
    print_ids(f, g->prompt, g->n_prompt);
    fprintf(f, "], \"first_position\": %d, \"vocab\": %d, \"logits\": [", g->n_prompt - rows, V);
    for (int r = 0; r < rows; r++) {
        fprintf(f, "%s\n[", r ? "," : "");
        for (int v = 0; v < V; v++) fprintf(f, v ? ",%.7g" : "%.7g", lg[(size_t)r * V + v]);
        fprintf(f, "]");
    }
    fprintf(f, "\n]}\n");
    if (path && fclose(f) != 0) return zp_fail(ZP_ERR_IO, "%s: write failed", path);
    return ZP_OK;
}

/* One prefill of the prompt through the model alone (zp_prompt_logits). */
static zp_status run_logits(const gen_args *g) {
    float *lg;
    int rows, V;
    ZP_TRY(zp_prompt_logits(&g->ec, g->prompt, g->n_prompt, g->all_positions, &lg, &rows, &V));
    zp_status s = write_logits_json(g->out_json, g, lg, rows, V);
    free(lg);
    return s;
}

int cmd_logits(int argc, char **argv) { return run_command(argc, argv, "logits", run_logits); }
