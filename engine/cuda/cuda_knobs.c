/* cuda_knobs.c - reads the CUDA backend's tuning knobs from the environment (cuda_knobs.h).
 * Not here: their use (backend_cuda.cu, decode_attn_cuda.cu, gemm_cuda.cu).
 */
#include "cuda_knobs.h"

#include <stdlib.h>
#include <string.h>

/* The index of the environment variable's value in vals[n] (-1: unset or empty); a value
 * outside them fails. */
static zp_status knob(const char *name, const char *const *vals, int n, const char *accepted, int *out) {
    const char *v = getenv(name);
    *out = -1;
    if (!v || !*v) return ZP_OK;
    for (int i = 0; i < n; i++)
        if (!strcmp(v, vals[i])) { *out = i; return ZP_OK; }
    return zp_fail(ZP_ERR_INVALID, "%s=%s: expected %s (unset: the default)", name, v, accepted);
}

zp_status zp_cuda_knobs_read(zp_cuda_knobs *k) {
    static const char *const off_on[] = {"0", "1"}, *const low[] = {"low"}, *const blocks[] = {"2", "3"}, *const waves[] = {"waves"},
                             *const kernels[] = {"async", "mma", "warp"};
    int cp, pr, db, ds, dk, gh, gt;
    ZP_TRY(knob("ZIPAGE_COMPRESS_PRIORITY", low, 1, "low", &cp));
    ZP_TRY(knob("ZIPAGE_PROFILE", off_on, 2, "0 or 1", &pr));
    ZP_TRY(knob("ZIPAGE_DECODE_BLOCKS", blocks, 2, "2 or 3", &db));
    ZP_TRY(knob("ZIPAGE_DECODE_SPLIT", waves, 1, "waves", &ds));
    ZP_TRY(knob("ZIPAGE_DECODE_KERNEL", kernels, 3, "async, mma or warp", &dk));
    ZP_TRY(knob("ZIPAGE_GEMM_HANDOFF", off_on, 2, "0 or 1", &gh));
    ZP_TRY(knob("ZIPAGE_GEMM_TUNE", off_on, 2, "0 or 1", &gt));
    k->compress_priority_low = cp == 0;
    k->profile = pr == 1;
    k->decode_blocks = db == 1 ? 3 : 2;
    k->decode_split_waves = ds == 0;
    k->decode_async = dk != 1;                 /* =mma: the register pipeline */
    k->decode_warp = dk == -1 || dk == 2;      /* the default (=warp says so explicitly) */
    k->gemm_handoff = gh != 0;
    k->gemm_tune = gt == 1;
    return ZP_OK;
}
