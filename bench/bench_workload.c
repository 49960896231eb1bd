/* bench_workload.c - request sets of `zipage bench` (bench_workload.h). */
#include "bench_workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"      /* zp_chat_detect */
#include "dataset.h"   /* ds_open */
#include "item_prompt.h" /* item_prompt */
#include "sampler.h"   /* zp_rng_uniform */
#include "tokenizer.h" /* zp_tokenizer_* */
#include "paths.h"

static zp_status alloc_workload(bench_workload *w, int n) {
    memset(w, 0, sizeof *w);
    w->prompt = calloc((size_t)n, sizeof *w->prompt);
    w->prompt_len = calloc((size_t)n, sizeof *w->prompt_len);
    w->gen = calloc((size_t)n, sizeof *w->gen);
    w->n = n;
    if (!w->prompt || !w->prompt_len || !w->gen) { bench_workload_free(w); return zp_fail(ZP_ERR_OOM, "bench: no memory for %d requests", n); }
    return ZP_OK;
}

void bench_workload_free(bench_workload *w) {
    for (int i = 0; w->prompt && i < w->n; i++) free(w->prompt[i]);
    free(w->prompt);
    free(w->prompt_len);
    free(w->gen);
    memset(w, 0, sizeof *w);
}

zp_status bench_workload_fixed(int batch, int prompt, int gen, int vocab, uint64_t seed, bench_workload *w) {
    ZP_TRY(alloc_workload(w, batch));
    for (int r = 0; r < batch; r++) {
        w->prompt[r] = malloc(sizeof(int) * (size_t)prompt);
        if (!w->prompt[r]) { bench_workload_free(w); return zp_fail(ZP_ERR_OOM, "bench: no memory for prompts"); }
        for (int i = 0; i < prompt; i++) w->prompt[r][i] = (int)(zp_rng_uniform(seed, (uint64_t)r, 7, (uint32_t)i) * (float)vocab) % vocab;
        w->prompt_len[r] = prompt;
        w->gen[r] = gen;
    }
    return ZP_OK;
}

int bench_reasoning_length(uint64_t seed, int r, int max_tokens) {
    if (zp_rng_uniform(seed, (uint64_t)r, 11, 0) < 0.1f) return max_tokens;
    const float u1 = zp_rng_uniform(seed, (uint64_t)r, 11, 1) + 1.0f / 16777216.0f, u2 = zp_rng_uniform(seed, (uint64_t)r, 11, 2);
    const double z = sqrt(-2.0 * log((double)u1)) * cos(6.283185307179586 * (double)u2);
    const double len = 6000.0 * exp(0.6 * z);
    return len < 256 ? 256 : len > max_tokens ? max_tokens : (int)len;
}

/* Appends the rendered, tokenized prompts of one dataset to ids/lens (growing *n). */
static zp_status load_prompts(zp_tokenizer *t, const zp_chat_opts *co, const char *name, int ***ids, int **lens, int *n) {
    ds_dataset d;
    char err[ZP_DS_ERR];
    if (ds_open(name, zp_path(ZP_PATH_DATASETS), &d, err)) return zp_fail(ZP_ERR_FORMAT, "bench: %s", err);
    zp_status s = ZP_OK;
    int **ni = realloc(*ids, sizeof(int *) * (size_t)(*n + d.n));
    int *nl = ni ? realloc(*lens, sizeof(int) * (size_t)(*n + d.n)) : NULL;
    if (ni) *ids = ni;
    if (nl) *lens = nl;
    if (!ni || !nl) s = zp_fail(ZP_ERR_OOM, "bench: no memory for prompts");
    for (int i = 0; s == ZP_OK && i < d.n; i++) {
        s = item_prompt(t, *co, &d, &d.items[i], 1, NULL, &(*ids)[*n], &(*lens)[*n]);
        if (s == ZP_OK) (*n)++;
    }
    ds_free(&d);
    return s;
}

zp_status bench_workload_reasoning(const char *tokenizer_dir, const char *datasets, int requests, int max_tokens, int length_scale,
                                   uint64_t seed, bench_workload *w) {
    if (length_scale < 1) return zp_fail(ZP_ERR_INVALID, "bench: length scale %d (at least 1)", length_scale);
    zp_tokenizer *t;
    ZP_TRY(zp_tokenizer_load(tokenizer_dir, &t));
    zp_chat_opts co = {ZP_CHAT_QWEN3, 1, NULL}; /* item_prompt adds the math instruction */
    zp_status s = zp_chat_detect(tokenizer_dir, &co.family);
    int **ids = NULL, *lens = NULL, n = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", datasets);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); s == ZP_OK && name; name = strtok_r(NULL, ",", &save))
        s = load_prompts(t, &co, name, &ids, &lens, &n);
    zp_tokenizer_free(t);
    if (s == ZP_OK && n == 0) s = zp_fail(ZP_ERR_INVALID, "bench: no prompts in \"%s\"", datasets);
    if (s == ZP_OK) s = alloc_workload(w, requests);
    for (int r = 0; s == ZP_OK && r < requests; r++) {
        const int k = r % n;
        w->prompt[r] = malloc(sizeof(int) * (size_t)lens[k]);
        if (!w->prompt[r]) { s = zp_fail(ZP_ERR_OOM, "bench: no memory for prompts"); break; }
        memcpy(w->prompt[r], ids[k], sizeof(int) * (size_t)lens[k]);
        w->prompt_len[r] = lens[k];
        w->gen[r] = (bench_reasoning_length(seed, r, max_tokens) + length_scale - 1) / length_scale;
    }
    if (s != ZP_OK && w->prompt) bench_workload_free(w);
    for (int i = 0; i < n; i++) free(ids[i]);
    free(ids);
    free(lens);
    return s;
}
