/* cuda_knobs.h - the CUDA backend's tuning knobs, read from the environment once per backend
 * (benchmark A/B switches: the defaults are what the measurements chose, bench/RESULTS.md).
 * Plain C, built with or without CUDA, so that the CPU tests check the parsing.
 * Not here: what each knob does (the backend files named below).
 */
#ifndef ZP_CUDA_KNOBS_H
#define ZP_CUDA_KNOBS_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int compress_priority_low; /* ZIPAGE_COMPRESS_PRIORITY=low: decode blocks dispatched before compression's */
    int profile;               /* ZIPAGE_PROFILE=1: CUDA events around every op */
    int decode_blocks;         /* ZIPAGE_DECODE_BLOCKS=2|3: the register-pipeline decode kernel's blocks per SM */
    int decode_split_waves;    /* ZIPAGE_DECODE_SPLIT=waves: decode partitions by wave efficiency */
    int decode_async;          /* the cp.async decode kernels; 0: ZIPAGE_DECODE_KERNEL=mma (register pipeline) */
    int decode_warp;           /* a warp per item where it fills the SMs; 0: ZIPAGE_DECODE_KERNEL=async or mma */
    int gemm_handoff;          /* bf16 rows handed between ops; 0: ZIPAGE_GEMM_HANDOFF=0 */
    int gemm_tune;             /* ZIPAGE_GEMM_TUNE=1: cublasLt algorithms timed per shape */
} zp_cuda_knobs;

/* Fills k from the environment (unset or empty: the default). A value outside a knob's set
 * fails with ZP_ERR_INVALID naming the variable, the value and the accepted values, so that a
 * mistyped A/B switch does not run the default under another label. */
zp_status zp_cuda_knobs_read(zp_cuda_knobs *k);

#ifdef __cplusplus
}
#endif
#endif
