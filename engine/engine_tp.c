/* engine_tp.c - an engine's tensor-parallel group (tp.h, comm.h): tp ranks, each with its own
 * backend, model share (its query and KV heads, its MLP rows), KV storage and compressor.
 * Rank 0's parts are the engine's own (be, model, kv, comp); ranks 1.. are its peers. On CUDA
 * rank r runs on GPU base + r (device cuda:base, base 0 for "cuda") and the ranks sum through
 * NCCL; on the CPU, and with tp_local on any device, every rank runs on the engine's device
 * and they sum through the local communicator.
 * The scheduler, the pool and the sampler run once, on the engine thread: each step's batch
 * (one block table per request, the same for every rank) goes to every rank's forward, each on
 * a thread of its own, ranks 1.. without the LM head (rank 0 samples from its logits); every
 * rank compresses its own KV heads with the same plan (selection is per KV head); the pool
 * has the fewest blocks any rank's memory holds. At tp 1 each function is the plain call on
 * rank 0, on the calling thread.
 * Deliberately not here: a group of several processes (one process, one thread per rank, so the
 * batch is shared memory rather than broadcast), a timeout for a rank that hangs (one that
 * fails aborts the group: engine_ranks_run), replicated KV heads (tp.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

engine_rank engine_rank_of(zp_engine *e, int r) {
    if (r == 0) return (engine_rank){e->be, e->model, &e->kv, &e->comp};
    zp_engine_peer *p = &e->peers[r - 1];
    return (engine_rank){p->be, p->model, &p->kv, &p->comp};
}

/* Makes rank r's device the calling thread's (before freeing its memory). */
static void bind_rank(zp_engine *e, int r) {
    engine_rank k = engine_rank_of(e, r);
    if (k.be && k.be->bind) (void)k.be->bind(k.be); /* a device that cannot be bound frees nothing better unbound */
}

typedef struct {
    zp_engine *e;
    int rank;
    engine_rank_fn fn;
    void *arg;
    zp_status status;
    char error[512];
} rank_job;

static void run_job(rank_job *j) {
    engine_rank k = engine_rank_of(j->e, j->rank);
    j->status = k.be->bind ? k.be->bind(k.be) : ZP_OK;
    if (j->status == ZP_OK) j->status = j->fn(j->e, j->rank, &k, j->arg);
    if (j->status == ZP_OK) return;
    snprintf(j->error, sizeof j->error, "%s", zp_last_error());
    zp_engine *e = j->e;
    if (e->n_comms && !atomic_exchange(&e->tp_stopped, 1)) { /* the first failure releases the others */
        atomic_store(&e->tp_failed_rank, j->rank);
        for (int r = 0; r < e->n_comms; r++) e->comms[r]->abort(e->comms[r]);
    }
}

/* The first failure among a run's jobs, rather than a rank its abort stopped (a failure may
 * also be another call's: the compression worker's). */
static zp_status jobs_status(zp_engine *e, const rank_job *jobs, int P) {
    int first = -1;
    for (int r = 0; r < P; r++)
        if (jobs[r].status != ZP_OK && (first < 0 || r == atomic_load(&e->tp_failed_rank))) first = r;
    return first < 0 ? ZP_OK : zp_fail(jobs[first].status, "tensor-parallel rank %d of %d: %s", first, P, jobs[first].error);
}

/* The engine thread's runs go to one persistent thread per rank 1.. (no thread start per step;
 * each keeps its OpenMP team); a run that finds the pool busy (the compression worker's, during
 * a step) starts threads of its own. */
struct engine_rank_pool {
    pthread_mutex_t busy; /* held by the caller whose run the workers serve */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned gen;         /* runs begun */
    int remaining, quit, n_started;
    rank_job *jobs;       /* [tp] the run's */
    pthread_t *th;        /* [tp] rank r's worker at r (0 unused) */
    struct pool_arg { engine_rank_pool *p; int rank; } *args;
};

static void *pool_worker(void *arg) {
    const struct pool_arg *a = arg;
    engine_rank_pool *p = a->p;
    unsigned seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
        if (p->quit) break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        run_job(&p->jobs[a->rank]);
        pthread_mutex_lock(&p->mu);
        if (--p->remaining == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void pool_free(engine_rank_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int r = 1; r <= p->n_started; r++) pthread_join(p->th[r], NULL);
    pthread_cond_destroy(&p->go), pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu), pthread_mutex_destroy(&p->busy);
    free(p->jobs), free(p->th), free(p->args), free(p);
}

static zp_status pool_create(int P, engine_rank_pool **out) {
    engine_rank_pool *p = calloc(1, sizeof *p);
    ZP_CHECK_ALLOC(p);
    p->jobs = calloc((size_t)P, sizeof *p->jobs);
    p->th = calloc((size_t)P, sizeof *p->th);
    p->args = calloc((size_t)P, sizeof *p->args);
    if (!p->jobs || !p->th || !p->args) {
        free(p->jobs), free(p->th), free(p->args), free(p);
        return zp_fail(ZP_ERR_OOM, "tensor parallelism: no memory for the threads of %d ranks", P);
    }
    pthread_mutex_init(&p->busy, NULL), pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL), pthread_cond_init(&p->done, NULL);
    for (int r = 1; r < P; r++, p->n_started++) {
        p->args[r] = (struct pool_arg){p, r};
        if (pthread_create(&p->th[r], NULL, pool_worker, &p->args[r]) != 0) {
            pool_free(p);
            return zp_fail(ZP_ERR_BACKEND, "tensor parallelism: cannot start the thread of rank %d of %d", r, P);
        }
    }
    *out = p;
    return ZP_OK;
}

/* A run on the pool, whose busy lock the caller holds. */
static zp_status run_pooled(zp_engine *e, engine_rank_pool *p, engine_rank_fn fn, void *arg) {
    const int P = e->tp;
    for (int r = 0; r < P; r++) p->jobs[r] = (rank_job){e, r, fn, arg, ZP_OK, ""};
    pthread_mutex_lock(&p->mu);
    p->remaining = P - 1;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    run_job(&p->jobs[0]);
    pthread_mutex_lock(&p->mu);
    while (p->remaining) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    zp_status s = jobs_status(e, p->jobs, P);
    pthread_mutex_unlock(&p->busy);
    return s;
}

static void *rank_thread(void *arg) {
    run_job(arg);
    return NULL;
}

/* A run on threads started for it. */
static zp_status run_spawned(zp_engine *e, engine_rank_fn fn, void *arg) {
    const int P = e->tp;
    rank_job *jobs = calloc((size_t)P, sizeof *jobs);
    pthread_t *th = calloc((size_t)P, sizeof *th);
    if (!jobs || !th) {
        free(jobs), free(th);
        return zp_fail(ZP_ERR_OOM, "tensor parallel: no memory for %d rank jobs", P);
    }
    int started = 1;
    for (int r = 0; r < P; r++) jobs[r] = (rank_job){e, r, fn, arg, ZP_OK, ""};
    for (; started < P; started++)
        if (pthread_create(&th[started], NULL, rank_thread, &jobs[started]) != 0) break;
    if (started < P) { /* the ranks started would wait in a sum for the missing one: the group stops */
        if (!atomic_exchange(&e->tp_stopped, 1))
            for (int r = 0; r < e->n_comms; r++) e->comms[r]->abort(e->comms[r]);
        for (int r = 1; r < started; r++) pthread_join(th[r], NULL);
        free(jobs), free(th);
        return zp_fail(ZP_ERR_BACKEND, "tensor parallelism: cannot start the thread of rank %d of %d; the group is stopped", started, P);
    }
    run_job(&jobs[0]);
    for (int r = 1; r < P; r++) pthread_join(th[r], NULL);
    zp_status s = jobs_status(e, jobs, P);
    free(jobs), free(th);
    return s;
}

zp_status engine_ranks_run(zp_engine *e, engine_rank_fn fn, void *arg) {
    const int P = e->tp > 1 ? e->tp : 1;
    if (atomic_load(&e->tp_stopped))
        return zp_fail(ZP_ERR_INVALID, "tensor parallelism: the group of %d ranks was stopped after an error on one of them: create a new engine", P);
    if (P == 1) {
        engine_rank k = engine_rank_of(e, 0);
        return fn(e, 0, &k, arg);
    }
    if (e->rank_pool && pthread_mutex_trylock(&e->rank_pool->busy) == 0) return run_pooled(e, e->rank_pool, fn, arg);
    return run_spawned(e, fn, arg);
}

/* ---------------------------------------------------------------- the group */

/* The GPU of device "cuda" / "cuda:N" (base N), -1 for the CPU. */
zp_status engine_device_base(const char *device, int *base) {
    *base = -1;
    if (!device || !strcmp(device, "cpu")) return ZP_OK;
    if (!strcmp(device, "cuda")) { *base = 0; return ZP_OK; }
    char *end;
    long d = strncmp(device, "cuda:", 5) ? -1 : strtol(device + 5, &end, 10);
    if (d < 0 || *end) return zp_fail(ZP_ERR_UNSUPPORTED, "device \"%s\" is not supported (cpu, cuda, cuda:N)", device);
    *base = (int)d;
    return ZP_OK;
}

/* Rank r's backend: the engine's device, or GPU base + r. */
static zp_status rank_backend(const zp_engine_config *c, int base, int local, int r, zp_backend **out) {
    char dev[32];
    if (base < 0 || local) snprintf(dev, sizeof dev, "%s", c->device ? c->device : "cpu");
    else snprintf(dev, sizeof dev, "cuda:%d", base + r);
    return zp_backend_create(dev, c->precision, c->n_threads, &c->backend, out);
}

static zp_status rank_model(const zp_engine_config *c, int r, zp_backend *be, zp_comm *comm, zp_model **out) {
    const int P = c->tp > 1 ? c->tp : 1;
    zp_tp_shard t = {.size = P, .rank = r}; /* the loader computes the shares from the model's shape */
    return zp_model_load_rank(c->model_dir, c->random_weights, c->weight_seed, be, P > 1 ? &t : NULL, comm, out);
}

zp_status engine_tp_open(zp_engine *e) {
    const zp_engine_config *c = &e->cfg;
    const int P = c->tp > 1 ? c->tp : 1;
    int base = -1; /* tp 1: the engine's device as named */
    if (P > 1) {
        ZP_TRY(engine_device_base(c->device, &base));
        e->comms = calloc((size_t)P, sizeof *e->comms);
        e->peers = calloc((size_t)P - 1, sizeof *e->peers);
        ZP_CHECK_ALLOC(e->comms);
        ZP_CHECK_ALLOC(e->peers);
        e->tp = P;
    }
    for (int r = P - 1; r >= 0; r--) { /* the backends first: a missing GPU is named before NCCL starts */
        zp_backend *be = NULL;
        zp_status s = rank_backend(c, base, c->tp_local, r, &be);
        if (s != ZP_OK && P > 1) {
            char why[512]; /* zp_fail writes the buffer zp_last_error reads */
            snprintf(why, sizeof why, "%s", zp_last_error());
            return zp_fail(s, "tp %d: rank %d: %s", P, r, why);
        }
        if (s != ZP_OK) return s;
        if (r == 0) e->be = be;
        else e->peers[r - 1].be = be;
    }
    if (P > 1) {
        int devices[64];
        for (int r = 0; r < P; r++) devices[r] = base + r;
        ZP_TRY(base < 0 || c->tp_local ? zp_comm_local_create(P, e->comms) : zp_comm_nccl_create(P, devices, e->comms));
        e->n_comms = P;
    }
    for (int r = P - 1; r >= 0; r--) { /* rank 0 last: its device stays the engine thread's */
        engine_rank k = engine_rank_of(e, r);
        zp_model *m = NULL;
        if (P > 1 && k.be->bind) ZP_TRY(k.be->bind(k.be)); /* its weights go to its device */
        ZP_TRY(rank_model(c, r, k.be, P > 1 ? e->comms[r] : NULL, &m));
        if (r == 0) e->model = m;
        else e->peers[r - 1].model = m;
    }
    e->model_cfg = e->model->whole_cfg;
    return P > 1 ? pool_create(P, &e->rank_pool) : ZP_OK;
}

void engine_tp_close(zp_engine *e) {
    pool_free(e->rank_pool); /* no run is in flight: the engine's and the worker's have returned */
    e->rank_pool = NULL;
    for (int r = 1; e->peers && r < e->tp; r++) {
        zp_engine_peer *p = &e->peers[r - 1];
        bind_rank(e, r);
        compressor_free(&p->comp);
        if (p->model) { zp_model_kv_free(p->model, &p->kv); zp_model_free(p->model); }
        if (p->be) p->be->destroy(p->be);
    }
    free(e->peers);
    e->peers = NULL;
    if (e->be) bind_rank(e, 0);
}

void engine_tp_move(zp_engine *to, zp_engine *from) {
    engine_tp_kv_free(from);
    for (int r = 1; r < from->tp; r++) compressor_free(&from->peers[r - 1].comp); /* `to` makes its own */
    to->be = from->be, to->model = from->model, to->peers = from->peers, to->comms = from->comms;
    to->n_comms = from->n_comms, to->tp = from->tp, to->model_cfg = from->model_cfg, to->rank_pool = from->rank_pool;
    from->be = NULL, from->model = NULL, from->peers = NULL, from->comms = NULL, from->n_comms = 0, from->tp = 1, from->rank_pool = NULL;
}

void engine_tp_free_comms(zp_engine *e) {
    for (int r = 0; r < e->n_comms; r++) e->comms[r]->destroy(e->comms[r]);
    free(e->comms);
    e->comms = NULL;
    e->n_comms = 0;
}

/* ---------------------------------------------------------------- per-rank steps */

typedef struct {
    const zp_batch *b;
    float *logits;
} forward_arg;

static zp_status rank_forward(zp_engine *e, int r, engine_rank *k, void *arg) {
    (void)e;
    const forward_arg *a = arg;
    if (r == 0) return zp_model_forward(k->model, a->b, k->kv, a->logits);
    zp_batch b = *a->b; /* the same rows and tables; only rank 0 computes logits */
    b.n_out = 0;
    return zp_model_forward(k->model, &b, k->kv, NULL);
}

zp_status engine_tp_forward(zp_engine *e, const zp_batch *b, float *logits) {
    forward_arg a = {b, logits};
    return engine_ranks_run(e, rank_forward, &a);
}

typedef struct {
    const zp_compress_item *items;
    int n;
} compress_arg;

static zp_status rank_compress(zp_engine *e, int r, engine_rank *k, void *arg) {
    (void)e, (void)r;
    const compress_arg *a = arg;
    return compressor_run(k->comp, k->model, k->kv, a->items, a->n);
}

/* What the compressor reads of a request selected for compression (its planned target). */
static zp_status compress_item(const zp_engine *e, zp_seq *q, zp_compress_item *it) {
    if (q->compressing == ZP_COMPRESS_NONE)
        return zp_fail(ZP_ERR_INVALID, "compression of request %lld: it was not selected for compression",
                       (long long)q->request_id);
    *it = (zp_compress_item){.request_id = q->request_id,
                             .blocks = q->blocks,
                             .n_blocks = q->n_blocks,
                             .target = q->target,
                             .n_kv = q->n_kv,
                             .qid = q->qid,
                             .compressed = q->compressed,
                             .next_pos = q->n_done,
                             .n_prompt = q->n_prompt,
                             .run_base = q->run_base,
                             .runs = q->runs,
                             .new_runs = q->new_runs,
                             .kept_blocks = q->keep_blocks,
                             .new_kept_blocks = e->plan.budget_adaptive ? &q->new_keep_blocks : NULL};
    if (q->new_runs) /* a layer the compaction leaves (a sliding one) stays uniform */
        for (size_t i = 0, n = (size_t)e->model->cfg.n_layers * (size_t)e->model->cfg.n_kv_heads; i < n; i++) q->new_runs[i] = -1;
    return ZP_OK;
}

zp_status engine_tp_compress(zp_engine *e, zp_seq *const *seqs, int n) {
    zp_compress_item *items = malloc(sizeof *items * (size_t)(n > 0 ? n : 1));
    if (!items) return zp_fail(ZP_ERR_OOM, "compression: no memory for %d requests", n);
    zp_status st = ZP_OK;
    for (int i = 0; i < n && st == ZP_OK; i++) st = compress_item(e, seqs[i], items + i);
    compress_arg a = {items, n};
    if (st == ZP_OK) st = engine_ranks_run(e, rank_compress, &a);
    free(items);
    return st;
}

typedef struct {
    int num_blocks, block_size;
} kv_arg;

static zp_status rank_kv_alloc(zp_engine *e, int r, engine_rank *k, void *arg) {
    (void)r;
    const kv_arg *a = arg;
    return zp_model_kv_alloc_grouped(k->model, a->num_blocks, a->block_size, e->plan.kv_fp8, e->plan.kv_calibrate, k->kv);
}

zp_status engine_tp_kv_alloc(zp_engine *e, int num_blocks, int block_size) {
    kv_arg a = {num_blocks, block_size};
    return engine_ranks_run(e, rank_kv_alloc, &a);
}

void engine_tp_kv_free(zp_engine *e) {
    for (int r = e->tp - 1; r >= 0; r--) { /* rank 0 last: the engine thread's device again */
        engine_rank k = engine_rank_of(e, r);
        bind_rank(e, r);
        if (k.model) zp_model_kv_free(k.model, k.kv);
    }
}

/* Each peer's compressor is rank 0's: the same policy, parameters, layer plan and path. */
static zp_status rank_compression(zp_engine *e, int r, engine_rank *k, void *arg) {
    const int *a = arg; /* n_qslots, with_scores, history_live */
    if (r > 0) {
        ZP_TRY(compressor_init(k->comp, e->plan.ops, e->cfg.policy_params, &e->plan.geo, e->plan.history_live));
        k->comp->layers = e->comp.layers;
        k->comp->device = e->comp.device;
    }
    ZP_TRY(zp_model_kv_alloc_compression(k->model, k->kv, &e->plan.geo, a[0], a[1]));
    k->kv->history_live = a[2];
    return ZP_OK;
}

zp_status engine_tp_compression(zp_engine *e, int n_qslots, int with_scores, int history_live) {
    int a[3] = {n_qslots, with_scores, history_live};
    return engine_ranks_run(e, rank_compression, a);
}

void engine_tp_compress_stats(const zp_engine *e, zp_compress_stats *out) {
    *out = e->comp.stats; /* counts of request compressions, their time and tokens kept: rank 0's */
    for (int r = 1; r < e->tp; r++) out->tokens_evicted += e->peers[r - 1].comp.stats.tokens_evicted; /* each rank its heads' */
}

void engine_tp_reset_compress_stats(zp_engine *e) {
    for (int r = 0; r < e->tp; r++) memset(&engine_rank_of(e, r).comp->stats, 0, sizeof e->comp.stats);
}
