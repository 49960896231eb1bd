/* plan_dump.c - runs a policy's host plan (policy_select) on one request's keys, window queries
 * and history as tests/reference/check_plans.py writes them, and prints the kept indices of each
 * KV head: the C side of the reference-oracle comparison. Not a test by itself.
 * Input (little-endian): int32 H_kv, n, D, G, w, n_hist, block_size, budget, has_history; then
 * float32 keys [H_kv][n][D], queries [H_kv][w][G][D], and history [H_kv][n] when has_history.
 * Output: one line a head, the kept token indices in ascending order; with --history a second
 * line a head, the new history of those tokens (for a replay that carries it, cadence.py).
 * With --adakv FLOOR instead, the heads' scores (scorer_plan_score of the policy's plan) go through
 * the engine's layer-wide selection with AdaKV's head budgets (scorer_head_keep) and each head's
 * kept indices are printed likewise.
 * Usage: plan_dump CASE.bin POLICY PARAMS_JSON WINDOW [--history | --adakv FLOOR] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

static int read_all(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

/* --adakv: every head scored by the policy's plan, then one selection for the layer. */
static int adakv_dump(const zp_policy *p, const float *keys, const float *q, const float *hist, int H, int n, int D, int G, int w,
                      int window, int n_hist, int bs, int budget, double floor_share, float *scratch) {
    zp_score_plan plan;
    if (policy_plan(p, budget, window, &plan) != ZP_OK) { fprintf(stderr, "plan_dump: %s\n", zp_last_error()); return 1; }
    plan.head_adakv = 1;
    plan.head_floor = floor_share;
    float *C = malloc(sizeof(float) * (size_t)H * n);
    int *m = malloc(sizeof(int) * (size_t)H), *cand = malloc(sizeof(int) * (size_t)H), *kept = malloc(sizeof(int) * (size_t)H);
    uint8_t *keep = malloc((size_t)H * n);
    int st = !C || !m || !cand || !kept || !keep;
    for (int k = 0; k < H && !st; k++) {
        const zp_score_view v = {.n = n, .head_dim = D, .group = G, .window = window, .scale = 1.0f / sqrtf((float)D),
                                 .keys = keys + (size_t)k * n * D, .queries = q + ((size_t)k * w + (size_t)(w - window)) * G * D,
                                 .layer = 0, .head = k};
        const float *c;
        st = scorer_plan_score(&plan, &v, hist ? hist + (size_t)k * n : NULL, hist ? n_hist : 0, bs, scratch, NULL, &c) != ZP_OK;
        if (!st) memcpy(C + (size_t)k * n, c, sizeof(float) * (size_t)n);
        m[k] = n;
    }
    if (!st) st = scorer_head_keep(&plan, C, m, n, H, budget, cand, kept, keep, NULL) != ZP_OK;
    if (st) fprintf(stderr, "plan_dump: %s\n", zp_last_error());
    for (int k = 0; k < H && !st; k++) {
        for (int t = 0, first = 1; t < n; t++)
            if (keep[(size_t)k * n + t]) printf(first ? "%d" : " %d", t), first = 0;
        printf("\n");
    }
    free(C), free(m), free(cand), free(kept), free(keep);
    return st;
}

int main(int argc, char **argv) {
    const int print_hist = argc == 6 && !strcmp(argv[5], "--history"), adakv = argc == 7 && !strcmp(argv[5], "--adakv");
    if (argc != 5 && !print_hist && !adakv) {
        fprintf(stderr, "usage: plan_dump CASE.bin POLICY PARAMS_JSON WINDOW [--history | --adakv FLOOR]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    int32_t h[9];
    if (!f || !read_all(f, h, sizeof h)) { fprintf(stderr, "plan_dump: cannot read %s\n", argv[1]); return 1; }
    const int H = h[0], n = h[1], D = h[2], G = h[3], w = h[4], n_hist = h[5], bs = h[6], budget = h[7], has_hist = h[8];
    const int window = atoi(argv[4]);
    if (H <= 0 || n <= 0 || D <= 0 || G <= 0 || w <= 0 || window <= 0 || window > w || budget <= 0 || budget > n) {
        fprintf(stderr, "plan_dump: bad header or window\n");
        return 1;
    }
    float *keys = malloc(sizeof(float) * (size_t)H * n * D), *q = malloc(sizeof(float) * (size_t)H * w * G * D);
    float *hist = has_hist ? malloc(sizeof(float) * (size_t)H * n) : NULL;
    float *scratch = malloc(sizeof(float) * ((size_t)6 * n + (size_t)n * D)), *newh = malloc(sizeof(float) * (size_t)n);
    uint8_t *keep = malloc((size_t)n);
    if (!keys || !q || (has_hist && !hist) || !scratch || !newh || !keep || !read_all(f, keys, sizeof(float) * (size_t)H * n * D) ||
        !read_all(f, q, sizeof(float) * (size_t)H * w * G * D) || (has_hist && !read_all(f, hist, sizeof(float) * (size_t)H * n))) {
        fprintf(stderr, "plan_dump: %s is truncated\n", argv[1]);
        return 1;
    }
    fclose(f);
    zp_policy p;
    if (policy_create(argv[2], argv[3], &p) != ZP_OK) { fprintf(stderr, "plan_dump: %s\n", zp_last_error()); return 1; }
    if (adakv) {
        const int st = adakv_dump(&p, keys, q, hist, H, n, D, G, w, window, n_hist, bs, budget, atof(argv[6]), scratch);
        policy_destroy(&p);
        free(keys), free(q), free(hist), free(scratch), free(newh), free(keep);
        return st;
    }
    for (int k = 0; k < H; k++) {
        /* the last `window` of the w stored queries */
        zp_select_input in = {{.n = n,
                               .head_dim = D,
                               .group = G,
                               .window = window,
                               .scale = 1.0f / sqrtf((float)D),
                               .keys = keys + (size_t)k * n * D,
                               .queries = q + ((size_t)k * w + (size_t)(w - window)) * G * D,
                               .layer = 0,
                               .head = k},
                              hist ? hist + (size_t)k * n : NULL,
                              hist ? n_hist : 0,
                              bs,
                              budget,
                              scratch};
        if (policy_select(&p, &in, keep, p.ops->needs_history ? newh : NULL, NULL) != ZP_OK) {
            fprintf(stderr, "plan_dump: %s\n", zp_last_error());
            return 1;
        }
        for (int t = 0, first = 1; t < n; t++)
            if (keep[t]) printf(first ? "%d" : " %d", t), first = 0;
        printf("\n");
        if (print_hist) {
            for (int t = 0, first = 1; t < n; t++)
                if (keep[t]) printf(first ? "%.9g" : " %.9g", p.ops->needs_history ? (double)newh[t] : 0.0), first = 0;
            printf("\n");
        }
    }
    policy_destroy(&p);
    free(keys), free(q), free(hist), free(scratch), free(newh), free(keep);
    return 0;
}
