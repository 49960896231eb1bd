/* test_cuda_engine.c (label gpu) - the whole engine on CUDA against the CPU engine on tiny
 * checkpoints of the three architectures: teacher-forced prefill logits close (bf16 weights
 * are exact copies of the checkpoint; activations enter GEMMs as bf16: tolerance 3e-2 of the
 * logit scale) and 64 greedy tokens identical, with full KV and with every policy (sync and
 * async compression). Exits 77 (skipped) without a GPU. */
#include <string.h>

#include "test_runner.h"
#include "test_util.h"

static void teacher_forced(const char *preset) {
    enum { N = 300, BS = 16 };
    zp_backend *be[2];
    zp_model *m[2] = {NULL, NULL};
    zp_kv_storage kv[2];
    CHECK_OK(zp_backend_cpu_create(2, &be[0]));
    CHECK_OK(zp_backend_cuda_create(0, &be[1]));
    int ids[N], pos[N], slots[N], bt[N / BS + 1], z = 0, n = N, last = N - 1;
    for (int i = 0; i < N; i++) { ids[i] = (int)(zp_rng_uniform(4, 0, 0, (uint32_t)i) * 1000) % 1000; pos[i] = i; }
    for (int b = 0; b <= N / BS; b++) bt[b] = (b * 7) % (N / BS + 1); /* scattered */
    for (int i = 0; i < N; i++) slots[i] = bt[i / BS] * BS + i % BS;
    float *lg[2];
    for (int k = 0; k < 2; k++) {
        CHECK_OK(zp_model_load(zp_test_model(preset), be[k], &m[k]));
        CHECK_OK(zp_model_kv_alloc(m[k], N / BS + 1, BS, &kv[k]));
        lg[k] = malloc(sizeof(float) * (size_t)m[k]->cfg.vocab);
        zp_batch b = {N, 1, ids, pos, slots, &z, &n, &n, bt, N / BS + 1, 1, &last, 1, 0, NULL, NULL};
        CHECK_OK(zp_model_forward(m[k], &b, &kv[k], lg[k]));
    }
    const int V = m[0]->cfg.vocab;
    double scale = zp_max_abs(lg[0], V), diff = zp_max_abs_diff(lg[0], lg[1], V);
    printf("  %-10s prefill %d tokens: max|dlogit| %.3e (max|logit| %.2f, rel %.2e)\n", preset, N, diff, scale, diff / scale);
    CHECK(diff <= 3e-2 * scale);
    for (int k = 0; k < 2; k++) { free(lg[k]); zp_model_kv_free(m[k], &kv[k]); zp_model_free(m[k]); be[k]->destroy(be[k]); }
}

static void greedy_parity(const char *preset, const char *policy, int async) {
    run_spec rs = run_spec_default(preset);
    rs.sp.max_tokens = 64;
    rs.ec.policy = policy;
    rs.ec.nmax = 2;
    rs.ec.window = 4;
    rs.ec.async_compress = async;
    rs.check_invariants = 1;
    run_result cpu, gpu;
    run_requests(&rs, &cpu);
    rs.ec.device = "cuda";
    run_requests(&rs, &gpu);
    int same = run_same_outputs(&cpu, &gpu), agree = 0, total = 0;
    for (int r = 0; r < rs.n_req; r++) {
        int k = 0;
        while (k < cpu.n[r] && k < gpu.n[r] && cpu.tokens[r][k] == gpu.tokens[r][k]) k++;
        agree += k;
        total += cpu.n[r];
    }
    printf("  %-10s %-9s %s: greedy %d/%d tokens identical, %lld compressions\n", preset, policy, async ? "async" : "sync ", agree, total,
           (long long)gpu.st.compressions);
    CHECK(same);
    CHECK(cpu.st.compressions == gpu.st.compressions);
    run_result_free(&cpu);
    run_result_free(&gpu);
}

int main(void) {
    zp_backend *probe;
    if (zp_backend_cuda_create(0, &probe) != ZP_OK) {
        printf("test_cuda_engine: skipped (%s)\n", zp_last_error());
        return 77;
    }
    probe->destroy(probe);
    const char *presets[3] = {"tiny-qwen3", "tiny-qwen2", "tiny-llama"};
    for (int i = 0; i < 3; i++) teacher_forced(presets[i]);
    const zp_policy_ops *const *reg = policy_registry();
    for (int i = 0; i < 3; i++)
        for (int p = 0; reg[p]; p++) {
            greedy_parity(presets[i], reg[p]->name, 0);
            if (reg[p]->evicts && i == 0) greedy_parity(presets[i], reg[p]->name, 1);
        }
    return zp_test_finish("test_cuda_engine");
}
