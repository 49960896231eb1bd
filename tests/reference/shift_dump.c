/* shift_dump.c - runs the harness's StreamingLLM on one request for check_shift.py, which replays
 * it through ref_streaming_shift.py (the authors' attention and cache, ported). No checks here.
 *
 *   shift_dump mkmodel PRESET DIR        an fp32 checkpoint of PRESET with seed 3 into DIR
 *   shift_dump run DIR SHIFT OUT         streaming {"sink": 4, "position_shift": SHIFT (0|1)},
 *                                        block 16, nmax 4, CPU, greedy, 200 tokens after a
 *                                        40-token prompt; writes OUT.tokens (the prompt, the
 *                                        generated tokens, the compressions: one line each) and
 *                                        OUT.logits (float32 [200][vocab]: the logits of every
 *                                        sampled token, in order).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "mkmodel.h"
#include "sampler.h"

enum { PROMPT = 40, GEN = 200 };

typedef struct {
    FILE *f;
    int rows;
} logits_sink;

static void on_logits(void *ctx, int64_t request_id, int sample_index, int step, const float *logits, int vocab) {
    logits_sink *s = ctx;
    (void)request_id; (void)sample_index;
    if (step != s->rows) fprintf(stderr, "shift_dump: logits of step %d arrived as row %d\n", step, s->rows);
    fwrite(logits, sizeof(float), (size_t)vocab, s->f);
    s->rows++;
}

static int fail(const char *what) {
    fprintf(stderr, "shift_dump: %s: %s\n", what, zp_last_error());
    return 1;
}

static int run(const char *dir, int shift, const char *out) {
    char path[1024];
    zp_engine_config c = zp_engine_config_default();
    c.model_dir = dir;
    c.device = "cpu";
    c.policy = "streaming";
    c.policy_params = shift ? "{\"sink\": 4, \"position_shift\": true}" : "{\"sink\": 4, \"position_shift\": false}";
    c.block_size = 16;
    c.nmax = 4;
    c.num_blocks = 32;
    c.n_threads = 1;
    zp_engine *e;
    if (zp_engine_init(&c, &e) != ZP_OK) return fail("engine");
    snprintf(path, sizeof path, "%s.logits", out);
    logits_sink sink = {fopen(path, "wb"), 0};
    if (!sink.f) return fail(path);
    zp_engine_set_logits_hook(e, on_logits, &sink);
    const int vocab = zp_engine_model_config(e)->vocab;
    int prompt[PROMPT];
    for (int i = 0; i < PROMPT; i++) prompt[i] = 3 + (int)(zp_rng_uniform(5, 0, 0, (uint32_t)i) * (float)(vocab - 3)) % (vocab - 3);
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = GEN;
    sp.ignore_eos = 1;
    if (zp_engine_add_request(e, prompt, PROMPT, &sp, 0, 0, 0) != ZP_OK) return fail("request");
    while (zp_engine_has_unfinished(e))
        if (zp_engine_step(e) != ZP_OK) return fail("step");
    zp_output o;
    if (zp_engine_poll(e, &o, 1) != 1) return fail("poll");
    fclose(sink.f);
    snprintf(path, sizeof path, "%s.tokens", out);
    FILE *f = fopen(path, "w");
    if (!f) return fail(path);
    for (int i = 0; i < PROMPT; i++) fprintf(f, "%d%c", prompt[i], i + 1 < PROMPT ? ' ' : '\n');
    for (int i = 0; i < o.n_tokens; i++) fprintf(f, "%d%c", o.tokens[i], i + 1 < o.n_tokens ? ' ' : '\n');
    fprintf(f, "%d\n", o.n_compressions);
    fclose(f);
    zp_output_free(&o);
    zp_engine_free(e);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "mkmodel"))
        return zp_mkmodel(argv[2], argv[3], 3, ZP_DTYPE_F32) == ZP_OK ? 0 : fail("mkmodel");
    if (argc == 5 && !strcmp(argv[1], "run")) return run(argv[2], atoi(argv[3]), argv[4]);
    fprintf(stderr, "usage: shift_dump mkmodel PRESET DIR | run DIR SHIFT(0|1) OUT\n");
    return 2;
}
