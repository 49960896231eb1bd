/* handoff_cpu.c - the backend's gemm_handoff contract (backend.h) on the CPU, as a test mode
 * (backend option cpu_handoff, set when the backend is created): an op called with a NULL buffer writes
 * its rows into, or reads them from, one of two slots around the plain fp32 op: the operand
 * slot (a norm's or the decode attention's rows for the GEMM after it) and the output slot (a
 * GEMM's rows for the norm or the RoPE store after it). The model's hand-over wiring thus runs
 * in CI, with results bit-identical to the plain path (same sums, other buffers). A slot is
 * taken once: a consumer with nothing handed over, or a producer over rows nobody took, fails
 * by name. Not a speed path (the rows still go through memory), and no fp32 rounding is
 * skipped: the bf16 hand-over itself is CUDA's (tests/test_cuda_ops.c).
 */
#include <stdlib.h>

#include "cpu_ops.h"

typedef struct {
    float *buf;
    size_t cap, n; /* n: values handed over and not yet taken (0: none) */
} cpu_slot;

struct cpu_handoff {
    zp_backend base;   /* the plain ops */
    cpu_slot x, y;     /* GEMM operand; GEMM output */
};

/* The slot's buffer for a producer of n values (checking that the last hand-over was taken). */
static zp_status slot_produce(cpu_slot *s, size_t n, const char *who, float **out) {
    if (s->n) return zp_fail(ZP_ERR_BACKEND, "cpu %s: hands over %zu values, but the %zu handed over before were never taken", who, n, s->n);
    if (n > s->cap) {
        float *b = realloc(s->buf, sizeof(float) * n);
        if (!b) return zp_fail(ZP_ERR_OOM, "cpu %s: cannot hold %zu handed-over values", who, n);
        s->buf = b;
        s->cap = n;
    }
    s->n = n;
    *out = s->buf;
    return ZP_OK;
}

/* The n values handed over to a consumer (once). */
static zp_status slot_take(cpu_slot *s, size_t n, const char *who, const float **in) {
    if (s->n != n) return zp_fail(ZP_ERR_BACKEND, "cpu %s: its input is NULL but %zu values were handed over, not %zu", who, s->n, n);
    s->n = 0;
    *in = s->buf;
    return ZP_OK;
}

#define HO(be) ((struct cpu_handoff *)*cpu_handoff_state(be))

static zp_status ho_rmsnorm(zp_backend *be, void *out, const void *x, const void *w, int rows, int H, float eps) {
    struct cpu_handoff *h = HO(be);
    float *o = out;
    if (!out) ZP_TRY(slot_produce(&h->x, (size_t)rows * H, "rmsnorm", &o));
    return h->base.rmsnorm(be, o, x, w, rows, H, eps);
}

static zp_status ho_add_rmsnorm(zp_backend *be, void *out, void *x, const void *y, const void *w, int rows, int H, float eps) {
    struct cpu_handoff *h = HO(be);
    const float *yy = y;
    float *o = out;
    if (!y) ZP_TRY(slot_take(&h->y, (size_t)rows * H, "add_rmsnorm", &yy));
    if (!out) ZP_TRY(slot_produce(&h->x, (size_t)rows * H, "add_rmsnorm", &o));
    return h->base.add_rmsnorm(be, o, x, yy, w, rows, H, eps);
}

static zp_status ho_matmul(zp_backend *be, void *out, const void *x, const void *w, const void *bias, int M, int N, int K) {
    struct cpu_handoff *h = HO(be);
    const float *xx = x;
    float *o = out;
    if (!x) ZP_TRY(slot_take(&h->x, (size_t)M * K, "matmul", &xx));
    if (!out && bias) return zp_fail(ZP_ERR_BACKEND, "cpu matmul: out is NULL with a bias (only bias-free GEMMs hand over)");
    if (!out) ZP_TRY(slot_produce(&h->y, (size_t)M * N, "matmul", &o));
    return h->base.matmul(be, o, xx, w, bias, M, N, K);
}

static zp_status ho_qkv_rope_store(zp_backend *be, const zp_attn_dims *d, const void *qkv, void *q_out, const void *q_norm,
                                  const void *k_norm, void *k_cache, void *v_cache, int layer) {
    struct cpu_handoff *h = HO(be);
    const float *in = qkv;
    const size_t n = (size_t)cpu_batch(be)->n_tokens * (d->n_heads + 2 * d->n_kv_heads) * d->head_dim;
    if (!qkv) ZP_TRY(slot_take(&h->y, n, "qkv_rope_store", &in));
    return h->base.qkv_rope_store(be, d, in, q_out, q_norm, k_norm, k_cache, v_cache, layer);
}

static zp_status ho_attn_decode(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache, const void *v_cache,
                               int layer) {
    struct cpu_handoff *h = HO(be);
    float *o = out;
    if (!out) ZP_TRY(slot_produce(&h->x, (size_t)cpu_batch(be)->n_tokens * d->n_heads * d->head_dim, "attn_decode", &o));
    return h->base.attn_decode(be, d, o, q, k_cache, v_cache, layer);
}

zp_status cpu_handoff_install(zp_backend *be) {
    struct cpu_handoff *h = calloc(1, sizeof *h);
    if (!h) return zp_fail(ZP_ERR_OOM, "cpu backend: out of memory (hand-over mode)");
    h->base = *be;
    *cpu_handoff_state(be) = h;
    be->gemm_handoff = 1;
    be->rmsnorm = ho_rmsnorm;
    be->add_rmsnorm = ho_add_rmsnorm;
    be->matmul = ho_matmul;
    be->qkv_rope_store = ho_qkv_rope_store;
    be->attn_decode = ho_attn_decode;
    return ZP_OK;
}

void cpu_handoff_free(void *state) {
    struct cpu_handoff *h = state;
    if (!h) return;
    free(h->x.buf);
    free(h->y.buf);
    free(h);
}
