/* trig_dump.c - runs the harness's TriAttention scorers (scorers/trig.c) on the cases
 * check_triattention.py sends on stdin and prints what the oracle compares: per case
 * "n D G P budget R", then F = D/2 RoPE frequencies, then per query head of the group its q_re,
 * q_im and q_abs [F], then the group's n post-RoPE keys [n][D]. Out: G lines of the n raw scores,
 * then one line of the kept tokens of one (layer, KV head) in the per_layer_perhead rule: the
 * prompt [0, P), and the top min(budget - P, n - P) decode tokens of scorer_trig_group's scores
 * (scorer_topk: ties to the earlier token).
 * No checks here: the oracle compares. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "scorers.h"

static int read_floats(float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (scanf("%f", &x[i]) != 1) return 0;
    return 1;
}

int main(void) {
    int n, D, G, P, budget;
    long long R;
    while (scanf("%d %d %d %d %d %lld", &n, &D, &G, &P, &budget, &R) == 6) {
        if (n < 1 || D < 2 || D % 2 || G < 1 || P < 0 || P > n || n > 1 << 20 || D > 512 || G > 64) return 2;
        const int F = D / 2, m = n - P;
        float *w = malloc(sizeof(float) * F), *q = malloc(sizeof(float) * 3 * F * (size_t)G), *keys = malloc(sizeof(float) * (size_t)n * D);
        float *sc = malloc(sizeof(float) * (size_t)n * G), *agg = malloc(sizeof(float) * (size_t)(m > 0 ? m : 1));
        double *C = malloc(sizeof(double) * F), *S = malloc(sizeof(double) * F);
        uint8_t *keep = malloc((size_t)(m > 0 ? m : 1));
        if (!w || !q || !keys || !sc || !agg || !C || !S || !keep) return 3;
        if (!read_floats(w, F) || !read_floats(q, 3 * (size_t)F * G) || !read_floats(keys, (size_t)n * D)) return 2;
        scorer_trig_phase(w, F, R, C, S);
        for (int g = 0; g < G; g++) {
            const float *qg = q + (size_t)g * 3 * F;
            float *row = sc + (size_t)g * n;
            scorer_trig_score(keys, n, D, qg, qg + F, qg + 2 * F, C, S, row);
            for (int t = 0; t < n; t++) printf("%.9g%c", row[t], t + 1 < n ? ' ' : '\n');
        }
        float *all = malloc(sizeof(float) * (size_t)n), *tmp = malloc(sizeof(float) * (size_t)n);
        if (!all || !tmp || scorer_trig_group(keys, n, D, G, q, C, S, P, all, tmp) != ZP_OK) return 3;
        for (int t = 0; t < m; t++) agg[t] = all[P + t];
        free(all);
        free(tmp);
        const int k = budget - P < m ? budget - P : m;
        scorer_topk(agg, m, k > 0 ? k : 0, keep);
        for (int t = 0; t < P; t++) printf("%d ", t);
        for (int t = 0; t < m; t++)
            if (keep[t]) printf("%d ", P + t);
        printf("\n");
        free(w); free(q); free(keys); free(sc); free(agg); free(C); free(S); free(keep);
    }
    return 0;
}
