/* test_fidelity.c - the fidelity math on constructed distributions (KL of identical logits is
 * 0, of a known pair equals the closed form, shift invariance; worst-window and first
 * disagreement bookkeeping), and end to end on tiny checkpoints (tiny-llama, and tiny-gpt-oss:
 * sliding layers, sinks, experts): full KV against itself and a budget larger than the trajectory
 * give KL 0 and agreement 1, a tight budget does not. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fidelity.h"
#include "test_util.h"

static void test_math(void) {
    float a[3] = {1.f, 2.f, 3.f}, b[3] = {3.f, 2.f, 1.f}, c[3] = {11.f, 12.f, 13.f};
    CHECK_NEAR(fidelity_kl(a, a, 3), 0.0, 1e-12);
    CHECK_NEAR(fidelity_kl(a, c, 3), 0.0, 1e-9); /* logits shifted by a constant: same distribution */
    double z = exp(1) + exp(2) + exp(3), p[3] = {exp(1) / z, exp(2) / z, exp(3) / z}, want = 0;
    for (int i = 0; i < 3; i++) want += p[i] * log(p[i] / p[2 - i]);
    CHECK_NEAR(fidelity_kl(a, b, 3), want, 1e-9);
    CHECK(fidelity_argmax(a, 3) == 2 && fidelity_argmax(b, 3) == 0);
    const double kl[6] = {0, 0, 0.6, 0.3, 0, 0};
    const int agree[6] = {1, 1, 0, 1, 0, 1};
    fidelity_result r;
    fidelity_summarize(kl, agree, 6, 2, &r);
    CHECK_NEAR(r.mean_kl, 0.15, 1e-12);
    CHECK_NEAR(r.worst_window_kl, 0.45, 1e-12); /* steps 2-3 */
    CHECK_NEAR(r.agreement, 4.0 / 6, 1e-12);
    CHECK(r.first_disagreement == 2 && r.steps == 6);
}

static void test_engine(const char *preset) {
    zp_engine_config full = zp_engine_config_default();
    full.model_dir = zp_test_model(preset);
    full.block_size = 16;
    full.n_threads = 2;
    const int prompt[12] = {5, 9, 100, 7, 33, 250, 8, 61, 2, 17, 400, 3};
    fidelity_ref ref;
    CHECK_OK(fidelity_reference(&full, prompt, 12, 80, &ref));
    fidelity_result r;
    CHECK_OK(fidelity_compare(&ref, &full, 16, &r));
    CHECK(r.steps == 80 && r.mean_kl == 0.0 && r.agreement == 1.0 && r.first_disagreement == -1);
    zp_engine_config big = full;
    big.policy = "zipage";
    big.nmax = 8; /* 9 x 16 = 144 > 12 + 80 tokens: never compresses */
    big.window = 4;
    CHECK_OK(fidelity_compare(&ref, &big, 16, &r));
    CHECK(r.mean_kl == 0.0 && r.agreement == 1.0);
    zp_engine_config tight = big;
    tight.nmax = 1; /* 16 tokens: tiny-gpt-oss's sliding window */
    CHECK_OK(fidelity_compare(&ref, &tight, 16, &r));
    printf("  %s: tight budget: mean KL %.3g, agreement %.3f, retained %.3f\n", preset, r.mean_kl, r.agreement, r.retained_share);
    CHECK(r.mean_kl > 0.0 && r.retained_share < 0.7);
    fidelity_ref_free(&ref);
}

int main(void) {
    test_math();
    test_engine("tiny-llama");
    test_engine("tiny-gpt-oss");
    return zp_test_finish("test_fidelity");
}
