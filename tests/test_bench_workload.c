/* test_bench_workload.c - the request sets of `zipage bench`: the reasoning output lengths
 * follow the documented distribution (a tenth at max_tokens, the rest log-normal around a
 * median of 6,000 with 5%-95% near 2.2k-16.3k, clipped to [256, max]) and are seeded; the
 * reasoning prompts are the real AIME24 + AMC23 problems through the chat template, cycled
 * (request i and i + 70 share a prompt; every prompt opens with the same system turn, so the
 * prefix cache has work); the fixed workload's tokens are inside the vocabulary. */
#include <stdlib.h>
#include <string.h>

#include "bench_workload.h"
#include "test_util.h"

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void test_lengths(void) {
    enum { N = 4000, MAX = 32768 };
    int *len = malloc(sizeof(int) * N), at_max = 0, n = 0;
    for (int r = 0; r < N; r++) {
        const int l = bench_reasoning_length(5, r, MAX);
        CHECK(l >= 256 && l <= MAX);
        CHECK(l == bench_reasoning_length(5, r, MAX));
        if (l == MAX) at_max++;
        else len[n++] = l;
    }
    qsort(len, (size_t)n, sizeof *len, cmp_int);
    const double frac = (double)at_max / N, med = len[n / 2], q05 = len[n / 20], q95 = len[n - n / 20];
    printf("  lengths: %.3f at max, median %.0f, 5%% %.0f, 95%% %.0f\n", frac, med, q05, q95);
    CHECK(frac > 0.08 && frac < 0.12);
    CHECK(med > 5600 && med < 6400);
    CHECK(q05 > 1900 && q05 < 2500);
    CHECK(q95 > 14500 && q95 < 18000);
    int other = 0;
    for (int r = 0; r < 64; r++) other += bench_reasoning_length(6, r, MAX) != bench_reasoning_length(5, r, MAX);
    CHECK(other > 50); /* another seed, other lengths */
    free(len);
}

static void test_prompts(void) {
    bench_workload w;
    CHECK_OK(bench_workload_reasoning(ZIPAGE_SOURCE_DIR "/models" "/tiny-qwen3-vocab", "aime24,amc23", 72, 4096, 1, 1, &w));
    CHECK(w.n == 72);
    CHECK(w.prompt_len[0] == w.prompt_len[70] && !memcmp(w.prompt[0], w.prompt[70], sizeof(int) * (size_t)w.prompt_len[0]));
    CHECK(w.prompt_len[1] == w.prompt_len[71] && !memcmp(w.prompt[1], w.prompt[71], sizeof(int) * (size_t)w.prompt_len[1]));
    CHECK(memcmp(w.prompt[0], w.prompt[1], sizeof(int) * 20) == 0); /* the shared chat/system prefix */
    double mean = 0;
    for (int i = 0; i < 70; i++) { mean += w.prompt_len[i]; CHECK(w.gen[i] >= 256 && w.gen[i] <= 4096); }
    printf("  prompts: mean %.1f tokens over the 70 problems\n", mean / 70);
    CHECK(mean / 70 > 60 && mean / 70 < 400);
    /* the scaled replica: the same prompts, each output length the full-size one / 8 rounded up */
    bench_workload s8;
    CHECK_OK(bench_workload_reasoning(ZIPAGE_SOURCE_DIR "/models" "/tiny-qwen3-vocab", "aime24,amc23", 72, 4096, 8, 1, &s8));
    int scaled = 0;
    for (int i = 0; i < 72; i++) {
        scaled += s8.gen[i] == (w.gen[i] + 7) / 8;
        CHECK(s8.prompt_len[i] == w.prompt_len[i] && !memcmp(s8.prompt[i], w.prompt[i], sizeof(int) * (size_t)w.prompt_len[i]));
    }
    CHECK(scaled == 72);
    bench_workload_free(&s8);
    CHECK_FAILS(bench_workload_reasoning(ZIPAGE_SOURCE_DIR "/models" "/tiny-qwen3-vocab", "aime24", 4, 4096, 0, 1, &w), ZP_ERR_INVALID,
                "length scale 0");
    bench_workload_free(&w);
    CHECK_FAILS(bench_workload_reasoning(ZIPAGE_SOURCE_DIR "/models" "/tiny-qwen3-vocab", "aime99", 4, 4096, 1, 1, &w), ZP_ERR_FORMAT, "aime99");
    CHECK_OK(bench_workload_fixed(3, 50, 7, 1000, 2, &w));
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 50; i++) CHECK(w.prompt[r][i] >= 0 && w.prompt[r][i] < 1000);
    CHECK(w.gen[2] == 7 && w.prompt_len[2] == 50);
    bench_workload_free(&w);
}

int main(void) {
    test_lengths();
    test_prompts();
    return zp_test_finish("test_bench_workload");
}
