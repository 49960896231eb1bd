/* backend_options.h - what the public engine API says of a backend without its op table: the
 * tuning options an engine is created with and the kinds of device work its statistics time.
 * Not here: the op table (backend.h), which only the engine, the backends and their tests see.
 */
#ifndef ZP_BACKEND_OPTIONS_H
#define ZP_BACKEND_OPTIONS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of device work that profiling (ZIPAGE_PROFILE=1, CUDA) times separately. */
typedef enum { ZP_OP_GEMM, ZP_OP_ATTENTION, ZP_OP_ELEMENTWISE, ZP_OP_SAMPLING, ZP_OP_COUNT } zp_op_kind;

/* A backend's tuning options (benchmark A/B switches; the defaults are what the measurements
 * chose, bench/RESULTS.md). The library reads no environment: the command line sets them
 * (tools/cli_options.c: flags, and the ZIPAGE_* variables for the benchmark scripts). What each
 * does is in the backend file named. */
typedef struct {
    int compress_priority_low; /* compression's stream below the model's: decode blocks first (backend_cuda.cu) */
    int profile;               /* CUDA events around every op (backend_cuda.cu) */
    int gemm_tune;             /* cublasLt algorithms timed per GEMM shape (gemm_cuda.cu) */
} zp_backend_options;

/* The measured defaults. */
zp_backend_options zp_backend_options_default(void);

#ifdef __cplusplus
}
#endif

#endif
