/* comm_nccl.cu - zp_comm over NCCL for ranks on GPUs (comm.h): ncclAllReduce (sum) in place on
 * the CUDA backend's model stream, in the buffer's own type (fp32, or bf16 operands: NCCL
 * rounds its partial sums to bf16 then). libnccl.so.2 is opened at run time (dlopen), so the
 * build needs only nccl.h and a machine without NCCL still runs everything else; the
 * communicators of one process's GPUs come from ncclCommInitAll (one thread per rank).
 * Deliberately not here: multi-process start-up (ncclGetUniqueId over a launcher), NVLink
 * multicast (the caller's environment keeps NCCL_NVLS_ENABLE=0), a fallback of our own. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "comm.h"
#include "cuda_common.cuh"

typedef struct {
    void *lib;
    ncclResult_t (*init_all)(ncclComm_t *, int, const int *);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*destroy)(ncclComm_t);
    ncclResult_t (*abort)(ncclComm_t);
    const char *(*error_string)(ncclResult_t);
} nccl_api;

static nccl_api api;

/* Opens libnccl.so.2 once (the first caller's thread; ranks are created before their threads). */
static zp_status nccl_open(void) {
    if (api.lib) return ZP_OK;
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return zp_fail(ZP_ERR_UNSUPPORTED, "nccl: cannot load libnccl.so.2 (%s): install NCCL (e.g. pip install nvidia-nccl-cu13, then LD_LIBRARY_PATH)", dlerror());
    nccl_api a;
    a.lib = lib;
    *(void **)&a.init_all = dlsym(lib, "ncclCommInitAll");
    *(void **)&a.all_reduce = dlsym(lib, "ncclAllReduce");
    *(void **)&a.destroy = dlsym(lib, "ncclCommDestroy");
    *(void **)&a.abort = dlsym(lib, "ncclCommAbort");
    *(void **)&a.error_string = dlsym(lib, "ncclGetErrorString");
    if (!a.init_all || !a.all_reduce || !a.destroy || !a.abort || !a.error_string) {
        dlclose(lib);
        return zp_fail(ZP_ERR_UNSUPPORTED, "nccl: libnccl.so.2 lacks ncclCommInitAll, ncclAllReduce, ncclCommDestroy, ncclCommAbort or ncclGetErrorString");
    }
    api = a;
    return ZP_OK;
}

#define ZP_NCCL_CHECK(call)                                                                                   \
    do {                                                                                                      \
        ncclResult_t r_ = (call);                                                                             \
        if (r_ != ncclSuccess)                                                                                \
            return zp_fail(ZP_ERR_BACKEND, "nccl: %s failed at %s:%d: %s", #call, __FILE__, __LINE__, api.error_string(r_)); \
    } while (0)

typedef struct {
    zp_comm base;
    ncclComm_t comm;
    int device;
    int aborted; /* ncclCommAbort freed comm */
} nccl_rank;

static zp_status nccl_all_reduce(zp_comm *c, zp_backend *be, void *buf, zp_act_type type, size_t n) {
    nccl_rank *r = (nccl_rank *)c;
    if (strcmp(be->name, "cuda")) return zp_fail(ZP_ERR_INVALID, "nccl all-reduce: rank %d runs on a %s backend, not cuda", c->rank, be->name);
    cuda_ctx *ctx = CUDA_CTX(be);
    if (ctx->device != r->device)
        return zp_fail(ZP_ERR_INVALID, "nccl all-reduce: rank %d's communicator is on GPU %d, its backend on GPU %d", c->rank, r->device, ctx->device);
    if (r->aborted) return zp_fail(ZP_ERR_BACKEND, "nccl all-reduce: rank %d of %d: the group was stopped after an error", c->rank, c->size);
    const ncclDataType_t t = type == ZP_ACT_F32 || ctx->fp32 ? ncclFloat32 : ncclBfloat16;
    ZP_NCCL_CHECK(api.all_reduce(buf, buf, n, t, ncclSum, r->comm, ctx->stream));
    return ZP_OK;
}

static void nccl_abort(zp_comm *c) {
    nccl_rank *r = (nccl_rank *)c;
    if (r->aborted) return;
    r->aborted = 1;
    (void)api.abort(r->comm); /* its kernels end; an error here leaves nothing better to do */
}

static void nccl_destroy(zp_comm *c) {
    nccl_rank *r = (nccl_rank *)c;
    if (!r->aborted) api.destroy(r->comm);
    free(r);
}

extern "C" zp_status zp_comm_nccl_create(int size, const int *devices, zp_comm **ranks) {
    if (size < 1 || size > 64) return zp_fail(ZP_ERR_INVALID, "nccl communicator: %d ranks, expected 1 to 64", size);
    ZP_TRY(nccl_open());
    ncclComm_t comms[64];
    ZP_NCCL_CHECK(api.init_all(comms, size, devices));
    for (int k = 0; k < size; k++) {
        nccl_rank *r = (nccl_rank *)calloc(1, sizeof *r);
        if (!r) {
            for (int j = 0; j < k; j++) ranks[j]->destroy(ranks[j]);
            for (int j = k; j < size; j++) api.destroy(comms[j]);
            return zp_fail(ZP_ERR_OOM, "nccl communicator: no memory");
        }
        r->base.size = size, r->base.rank = k, r->base.all_reduce = nccl_all_reduce, r->base.abort = nccl_abort, r->base.destroy = nccl_destroy;
        r->comm = comms[k], r->device = devices[k];
        ranks[k] = &r->base;
    }
    return ZP_OK;
}
