/* comm_local.c - zp_comm for ranks that are threads of one process (comm.h): each rank copies
 * its buffer to its host slot, waits for the group, sums every slot in rank order (so that
 * every rank computes bit-identical values) and copies the sum back to its buffer, then waits
 * again before a slot may be reused. Also the stand-in of zp_comm_nccl_create in builds without
 * NCCL. Its barrier is a generation count under a mutex, so that abort (comm.h) releases the
 * ranks waiting in it. Deliberately not here: GPU-to-GPU transfers (NCCL's), timeouts (a rank
 * that never arrives and is never aborted blocks the group). */
#include "comm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int size, refs;
    pthread_mutex_t mu;   /* the barrier's state, refs */
    pthread_cond_t cv;
    int arrived, aborted;
    unsigned generation;
    float **slot;       /* [size] host copies of each rank's buffer */
    size_t *cap;        /* [size] their capacities (floats) */
    zp_status *status;  /* [size] each rank's copy-out result of this collective */
} local_group;

typedef struct {
    zp_comm base;
    local_group *g;
    float *sum;
    size_t sum_cap;
} local_rank;

static int grow(float **p, size_t *cap, size_t n) {
    if (*cap >= n) return 1;
    float *q = realloc(*p, sizeof(float) * n);
    if (!q) return 0;
    *p = q, *cap = n;
    return 1;
}

/* Waits for every rank of the group; 0 when the group was aborted (before or while waiting). */
static int group_wait(local_group *g) {
    pthread_mutex_lock(&g->mu);
    if (!g->aborted && ++g->arrived == g->size) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->cv);
    } else {
        for (const unsigned gen = g->generation; !g->aborted && gen == g->generation;) pthread_cond_wait(&g->cv, &g->mu);
    }
    const int ok = !g->aborted;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static zp_status stopped(const zp_comm *c) {
    return zp_fail(ZP_ERR_BACKEND, "all-reduce: rank %d of %d: the group was stopped after an error on another rank", c->rank, c->size);
}

static zp_status local_all_reduce(zp_comm *c, zp_backend *be, void *buf, zp_act_type type, size_t n) {
    local_rank *r = (local_rank *)c;
    local_group *g = r->g;
    const int me = c->rank;
    /* phase 1: every slot filled (a slot is only read between the two waits) */
    zp_status s = grow(&g->slot[me], &g->cap[me], n) && grow(&r->sum, &r->sum_cap, n)
                      ? be->to_host(be, g->slot[me], buf, type, 0, n)
                      : zp_fail(ZP_ERR_OOM, "all-reduce: no host memory for %zu values", n);
    g->status[me] = s;
    if (!group_wait(g)) return stopped(c);
    int failed = -1;
    for (int k = 0; k < g->size && failed < 0; k++)
        if (g->status[k] != ZP_OK) failed = k;
    if (failed < 0) { /* phase 2: the same sum on every rank, in rank order */
        memcpy(r->sum, g->slot[0], sizeof(float) * n);
        for (int k = 1; k < g->size; k++)
            for (size_t i = 0; i < n; i++) r->sum[i] += g->slot[k][i];
    }
    if (!group_wait(g)) return stopped(c);
    if (failed >= 0) return failed == me ? s : zp_fail(ZP_ERR_BACKEND, "all-reduce: rank %d of %d failed", failed, g->size);
    return be->from_host(be, buf, type, r->sum, 0, n);
}

static void local_abort(zp_comm *c) {
    local_group *g = ((local_rank *)c)->g;
    pthread_mutex_lock(&g->mu);
    g->aborted = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void local_destroy(zp_comm *c) {
    local_rank *r = (local_rank *)c;
    local_group *g = r->g;
    pthread_mutex_lock(&g->mu);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&g->mu);
    free(r->sum);
    free(r);
    if (!last) return;
    for (int k = 0; k < g->size; k++) free(g->slot[k]);
    free(g->slot), free(g->cap), free(g->status);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

zp_status zp_comm_local_create(int size, zp_comm **ranks) {
    if (size < 1 || size > 64) return zp_fail(ZP_ERR_INVALID, "local communicator: %d ranks, expected 1 to 64", size);
    local_group *g = calloc(1, sizeof *g);
    if (!g) return zp_fail(ZP_ERR_OOM, "local communicator: no memory");
    g->size = g->refs = size;
    g->slot = calloc((size_t)size, sizeof *g->slot);
    g->cap = calloc((size_t)size, sizeof *g->cap);
    g->status = calloc((size_t)size, sizeof *g->status);
    int ok = g->slot && g->cap && g->status;
    int have_cv = ok && pthread_cond_init(&g->cv, NULL) == 0;
    int have_mu = have_cv && pthread_mutex_init(&g->mu, NULL) == 0;
    int made = 0;
    for (; have_mu && made < size; made++) {
        local_rank *r = calloc(1, sizeof *r);
        if (!r) break;
        r->base = (zp_comm){size, made, local_all_reduce, local_abort, local_destroy};
        r->g = g;
        ranks[made] = &r->base;
    }
    if (made == size) return ZP_OK;
    for (int k = 0; k < made; k++) free(ranks[k]);
    if (have_mu) pthread_mutex_destroy(&g->mu);
    if (have_cv) pthread_cond_destroy(&g->cv);
    free(g->slot), free(g->cap), free(g->status), free(g);
    return zp_fail(ZP_ERR_OOM, "local communicator: no memory for %d ranks", size);
}

#ifndef ZP_HAVE_NCCL
zp_status zp_comm_nccl_create(int size, const int *devices, zp_comm **ranks) {
    (void)size, (void)devices, (void)ranks;
    return zp_fail(ZP_ERR_UNSUPPORTED, "nccl: this build has no NCCL communicator (it needs CUDA and nccl.h: make deps fetches the header)");
}
#endif
