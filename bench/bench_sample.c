/* bench_sample.c - the CUDA sampler (backend op `sample`) alone: R logits rows of the Qwen3
 * vocabulary (151,936) drawn as random-weight logits (normal, sd 1.3), sampled by each rule the
 * engine uses: greedy, temperature alone (inverse CDF), the reasoning workload's T 0.6 / top-p
 * 0.95 / top-k 20, top-p 0.95 alone on a peaked row (a small nucleus). Reports the median of 9
 * calls after a warm-up, in milliseconds and as the row bytes read per second against the copy
 * bandwidth of the same run (one read of the logits is the floor: a sampler near 1.0 reads each
 * row about once). The host's part of a call (rows up, ids down, the synchronisation) is
 * included, as in a decode step. A benchmark for the GPU machine; without a GPU it exits 77.
 * Usage: bench_sample [R, default 512] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend.h"
#include "bench_clock.h"
#include "sampler.h"

static void die(const char *what) {
    fprintf(stderr, "bench_sample: %s: %s\n", what, zp_last_error());
    exit(1);
}

int main(int argc, char **argv) {
    const int V = 151936, R = argc > 1 ? atoi(argv[1]) : 512;
    if (R < 1 || R > 65536) { fprintf(stderr, "bench_sample: R must be 1..65536 (got %s)\n", argv[1]); return 2; }
    zp_backend *be;
    if (zp_backend_cuda_create(0, 0, NULL, &be) != ZP_OK) {
        printf("bench_sample: skipped (%s)\n", zp_last_error());
        return 77;
    }
    float *x = malloc(sizeof(float) * (size_t)V * R);
    int *ids = malloc(sizeof(int) * (size_t)R);
    zp_sample_row *rows = malloc(sizeof *rows * (size_t)R);
    if (!x || !ids || !rows) die("host memory");
    struct { const char *name; float T, top_p; int top_k, peaked; } set[] = {
        {"greedy", 0.f, 1.f, 0, 0}, {"T 0.6", 0.6f, 1.f, 0, 0}, {"T 0.6 top-p 0.95 top-k 20", 0.6f, 0.95f, 20, 0},
        {"T 0.6 top-p 0.95 (peaked)", 0.6f, 0.95f, 0, 1}};
    double bw;
    if (be->copy_bandwidth(be, &bw) != ZP_OK) die("copy bandwidth");
    void *d;
    if (be->alloc(be, (size_t)V * R, ZP_ACT_F32, &d) != ZP_OK) die("logits");
    printf("bench_sample: %d rows x %d logits (fp32, %.0f MB); copy bandwidth %.0f GB/s (read + write)\n", R, V,
           4e-6 * V * R, bw / 1e9);
    for (size_t s = 0; s < sizeof set / sizeof set[0]; s++) {
        for (size_t i = 0; i < (size_t)V * R; i++) { /* Box-Muller on the engine's own Philox numbers */
            const float u1 = zp_rng_uniform(5, i, 0, 0) * 0.999f + 1e-4f, u2 = zp_rng_uniform(5, i, 1, 0);
            x[i] = (set[s].peaked ? -4.0f : 0.f) + (set[s].peaked ? 2.0f : 1.3f) * sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
        }
        if (set[s].peaked)
            for (int r = 0; r < R; r++) for (int j = 0; j < 6; j++) x[(size_t)r * V + (size_t)(r * 7919 + j * 104729) % V] = 9.f + j;
        if (be->from_host(be, d, ZP_ACT_F32, x, 0, (size_t)V * R) != ZP_OK) die("upload");
        for (int r = 0; r < R; r++)
            rows[r] = (zp_sample_row){.temperature = set[s].T, .top_p = set[s].top_p, .top_k = set[s].top_k, .step = 1, .seed = 42, .request_id = (uint64_t)r};
        double t[9];
        int host = 0;
        if (be->sample(be, d, R, V, rows, ids) != ZP_OK) die("sample"); /* warm-up */
        for (int it = 0; it < 9; it++) {
            for (int r = 0; r < R; r++) rows[r].step = (uint32_t)(it + 2);
            const double t0 = zp_now();
            if (be->sample(be, d, R, V, rows, ids) != ZP_OK) die("sample");
            t[it] = zp_now() - t0;
        }
        for (int r = 0; r < R; r++) host += ids[r] < 0;
        qsort(t, 9, sizeof t[0], bench_cmp_double);
        const double gbs = 4.0 * V * R / t[4];
        printf("  %-28s %8.3f ms  %6.0f GB/s of logits  ratio %.2f  (%d rows left to the host)\n", set[s].name, 1e3 * t[4],
               gbs / 1e9, gbs / bw, host);
    }
    be->release(be, d);
    be->destroy(be);
    free(x);
    free(ids);
    free(rows);
    return 0;
}
