/* test_sampler.c - Philox known-answer vectors (Random123 kat_vectors), greedy, top-k/top-p
 * support, and that sampled frequencies follow the softmax. */
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "test_util.h"

static void test_philox_kat(void) {
    const uint32_t ctr[3][4] = {{0, 0, 0, 0}, {~0u, ~0u, ~0u, ~0u}, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}};
    const uint32_t key[3][2] = {{0, 0}, {~0u, ~0u}, {0xa4093822, 0x299f31d0}};
    const uint32_t want[3][4] = {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
                                 {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
                                 {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (int i = 0; i < 3; i++) {
        uint32_t o[4];
        zp_philox4x32(ctr[i], key[i], o);
        CHECK(memcmp(o, want[i], sizeof o) == 0);
    }
    float u = zp_rng_uniform(5, 7, 1, 3);
    CHECK(u >= 0.f && u < 1.f);
    CHECK(u == zp_rng_uniform(5, 7, 1, 3));
    CHECK(u != zp_rng_uniform(5, 7, 1, 4));
    CHECK(u != zp_rng_uniform(5, 7, 2, 3));
    CHECK(u != zp_rng_uniform(6, 7, 1, 3));
}

static void test_greedy_and_filters(void) {
    float lg[6], scratch[12];
    zp_sampling_params sp = zp_sampling_default();
    const float base[6] = {0.1f, 2.0f, 1.9f, -1.f, 0.f, 1.0f};
    memcpy(lg, base, sizeof lg);
    CHECK(zp_sample_token(lg, 6, &sp, NULL, 0, 0.99f, scratch) == 1);
    sp.temperature = 1.0f;
    sp.top_k = 2; /* only ids 1 and 2 may ever come out */
    for (int i = 0; i < 200; i++) {
        memcpy(lg, base, sizeof lg);
        int t = zp_sample_token(lg, 6, &sp, NULL, 0, zp_rng_uniform(1, 0, 0, (uint32_t)i), scratch);
        CHECK(t == 1 || t == 2);
    }
    sp.top_k = 0;
    sp.top_p = 0.3f; /* p(1) = 0.35 alone reaches 0.3 */
    for (int i = 0; i < 50; i++) {
        memcpy(lg, base, sizeof lg);
        CHECK(zp_sample_token(lg, 6, &sp, NULL, 0, zp_rng_uniform(1, 0, 0, (uint32_t)i), scratch) == 1);
    }
    /* repetition penalty: a penalised leader loses to the runner-up under greedy */
    sp = zp_sampling_default();
    sp.repetition_penalty = 2.0f;
    int hist[2] = {1, 1};
    memcpy(lg, base, sizeof lg);
    CHECK(zp_sample_token(lg, 6, &sp, hist, 2, 0.5f, scratch) == 2);
    CHECK_NEAR(lg[1], 1.0f, 1e-6); /* divided once, not twice */
}

static void test_frequencies(void) {
    const float base[4] = {0.f, 1.f, 2.f, -0.5f};
    double p[4], z = 0;
    for (int i = 0; i < 4; i++) z += p[i] = exp(base[i] / 0.8);
    zp_sampling_params sp = zp_sampling_default();
    sp.temperature = 0.8f;
    int count[4] = {0};
    const int N = 40000;
    float lg[4], scratch[8];
    for (int i = 0; i < N; i++) {
        memcpy(lg, base, sizeof lg);
        count[zp_sample_token(lg, 4, &sp, NULL, 0, zp_rng_uniform(9, 3, 0, (uint32_t)i), scratch)]++;
    }
    for (int i = 0; i < 4; i++) CHECK_NEAR((double)count[i] / N, p[i] / z, 0.01);
}

/* Naive reference: full descending sort, top-k, nucleus, inverse CDF on the kept mass. */
static int naive_sample(const float *logits, int V, float T, float top_p, int top_k, float u) {
    double mx = -1e30, z = 0;
    for (int i = 0; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
    double *p = malloc(sizeof(double) * V);
    int *idx = malloc(sizeof(int) * V);
    for (int i = 0; i < V; i++) { p[i] = exp((logits[i] - mx) / T); z += p[i]; idx[i] = i; }
    for (int i = 1; i < V; i++) { /* insertion sort by p desc, id asc */
        int x = idx[i], j = i - 1;
        while (j >= 0 && (p[idx[j]] < p[x] || (p[idx[j]] == p[x] && idx[j] > x))) { idx[j + 1] = idx[j]; j--; }
        idx[j + 1] = x;
    }
    int n = top_k > 0 && top_k < V ? top_k : V;
    if (top_p < 1) { double acc = 0; int keep = 0; while (keep < n) { acc += p[idx[keep++]] / z; if (acc >= top_p) break; } n = keep; }
    double mass = 0, acc = 0;
    for (int i = 0; i < n; i++) mass += p[idx[i]] / z;
    int tok = idx[n - 1];
    for (int i = 0; i < n; i++) { acc += p[idx[i]] / z; if (acc > u * mass) { tok = idx[i]; break; } }
    free(p); free(idx);
    return tok;
}

static void test_filters_match_naive(void) {
    enum { V = 3000 };
    float base[V], lg[V], scratch[2 * V];
    for (int i = 0; i < V; i++) base[i] = 4.0f * (zp_rng_uniform(8, 1, 0, (uint32_t)i) - 0.5f);
    const struct { float T, top_p; int top_k; } cfg[] = {{0.6f, 0.95f, 0}, {1.0f, 0.5f, 0}, {0.8f, 1.0f, 20}, {0.6f, 0.9f, 50}};
    int mismatches = 0;
    for (int c = 0; c < 4; c++) {
        zp_sampling_params sp = zp_sampling_default();
        sp.temperature = cfg[c].T; sp.top_p = cfg[c].top_p; sp.top_k = cfg[c].top_k;
        for (int i = 0; i < 40; i++) {
            float u = zp_rng_uniform(2, (uint64_t)c, 0, (uint32_t)i);
            memcpy(lg, base, sizeof lg);
            mismatches += zp_sample_token(lg, V, &sp, NULL, 0, u, scratch) != naive_sample(base, V, cfg[c].T, cfg[c].top_p, cfg[c].top_k, u);
        }
    }
    CHECK(mismatches <= 2); /* float vs double accumulation may move a draw at a CDF boundary */
}

int main(void) {
    test_philox_kat();
    test_greedy_and_filters();
    test_frequencies();
    test_filters_match_naive();
    return zp_test_finish("test_sampler");
}
