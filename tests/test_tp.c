/* test_tp.c - tensor parallelism on one machine: the sharding arithmetic (every query head,
 * KV head and intermediate row owned by exactly one rank, a rank's query heads reading its own
 * KV heads, sizes that do not split refused naming the count), each rank's weights the
 * documented slices of the whole model's, and a group of 2 or 4 ranks - threads of this
 * process, each with its own backend and model, summing through the local communicator -
 * giving the whole model's logits and greedy tokens over a prefill and 24 decode steps, on
 * Qwen3 (q/k norms), Qwen2 (QKV bias) and Llama shapes. The ranks run the real forward
 * (zp_model_forward on zp_model_load_rank models); only the transport is local.
 * Argument "cuda": the same on the GPU (CUDA backends of one device, fp32), else the CPU.
 * Arguments "nccl P": rank r on GPU r (CUDA backends, fp32) summing through NCCL, P 1 (a group
 * of one through the NCCL path: bit-identical to no communicator), 2 or 4; exit 77 (skipped)
 * with fewer than P GPUs or without NCCL. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "model.h"
#include "sampler.h" /* zp_rng_uniform */
#include "test_util.h"
#include "tp.h"

enum { N_PROMPT = 29, N_DECODE = 24, BS = 16, N_BLOCKS = 6 };

static int use_cuda, use_nccl;

static zp_status backend_create(int device, zp_backend **be) {
    return use_cuda ? zp_backend_cuda_create(device, 1, NULL, be) : zp_backend_cpu_create(1, be);
}

/* ---------------------------------------------------------------- arithmetic */

static zp_model_config shape(int hq, int hkv, int inter) {
    zp_model_config c;
    memset(&c, 0, sizeof c);
    c.n_heads = hq, c.n_kv_heads = hkv, c.intermediate = inter, c.head_dim = 128, c.hidden = 4096;
    return c;
}

static void test_arithmetic(void) {
    const zp_model_config q8b = shape(32, 8, 12288); /* Qwen3-8B */
    for (int p = 1; p <= 8; p *= 2) {
        int q_owner[32], kv_owner[8], i_seen = 0, ok = 1;
        memset(q_owner, -1, sizeof q_owner), memset(kv_owner, -1, sizeof kv_owner);
        for (int r = 0; r < p; r++) {
            zp_tp_shard s;
            CHECK_OK(zp_tp_shard_of(&q8b, p, r, &s));
            ok &= s.size == p && s.rank == r && s.nq == 32 / p && s.nkv == 8 / p && s.ni == 12288 / p && s.i0 == r * s.ni;
            for (int h = s.q0; h < s.q0 + s.nq; h++) ok &= q_owner[h] == -1, q_owner[h] = r;
            for (int h = s.kv0; h < s.kv0 + s.nkv; h++) ok &= kv_owner[h] == -1, kv_owner[h] = r;
            i_seen += s.ni;
            zp_model_config rc = zp_tp_shard_config(&q8b, &s);
            ok &= rc.n_heads == s.nq && rc.n_kv_heads == s.nkv && rc.intermediate == s.ni && rc.hidden == 4096 && rc.head_dim == 128;
        }
        for (int h = 0; h < 32; h++) ok &= q_owner[h] >= 0 && q_owner[h] == kv_owner[h / 4]; /* GQA group 4: its KV head on its rank */
        for (int h = 0; h < 8; h++) ok &= kv_owner[h] >= 0;
        if (!ok) fprintf(stderr, "tp arithmetic: size %d\n", p);
        CHECK(ok && i_seen == 12288);
    }
    zp_tp_shard s;
    CHECK_FAILS(zp_tp_shard_of(&q8b, 3, 0, &s), ZP_ERR_INVALID, "8 key-value heads (num_key_value_heads; a rank holds whole KV heads) do not split into 3");
    CHECK_FAILS(zp_tp_shard_of(&q8b, 3, 0, &s), ZP_ERR_INVALID, "sizes that split this model: 1, 2, 4, 8");
    CHECK_FAILS(zp_tp_shard_of(&q8b, 16, 0, &s), ZP_ERR_INVALID, "8 key-value heads");
    const zp_model_config odd = shape(8, 4, 390);
    CHECK_FAILS(zp_tp_shard_of(&odd, 4, 1, &s), ZP_ERR_INVALID, "390 intermediate rows (intermediate_size) do not split into 4");
    CHECK_FAILS(zp_tp_shard_of(&q8b, 2, 2, &s), ZP_ERR_INVALID, "rank 2: expected 0 to 1");
    CHECK_FAILS(zp_tp_shard_of(&q8b, 0, 0, &s), ZP_ERR_INVALID, "size 0");
}

/* ---------------------------------------------------------------- models */

typedef struct {
    const char *source;
    int size, rank, device;
    zp_comm *comm;
    float *logits;  /* [(1 + N_DECODE) * V] */
    int tokens[N_DECODE + 1];
    zp_status status;
    char error[512];
} rank_job;

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* One rank: a prefill of N_PROMPT tokens over a scattered block table, then N_DECODE greedy
 * decode steps, keeping every step's logits. */
static zp_status rank_run(rank_job *j) {
    zp_backend *be = NULL;
    zp_model *m = NULL;
    zp_kv_storage kv;
    memset(&kv, 0, sizeof kv);
    zp_tp_shard t = {.size = j->size, .rank = j->rank};
    zp_status s = backend_create(j->device, &be);
    if (s == ZP_OK) s = zp_model_load_rank(j->source, 1, 7, be, &t, j->comm, &m);
    if (s == ZP_OK) s = zp_model_kv_alloc(m, N_BLOCKS, BS, &kv);
    int ids[N_PROMPT], pos[N_PROMPT], slots[N_PROMPT], bt[4] = {3, 0, 5, 1};
    const int V = m ? m->cfg.vocab : 0;
    for (int i = 0; i < N_PROMPT; i++) {
        ids[i] = (int)(zp_rng_uniform(11, 5, 0, (uint32_t)i) * 1024) % 1024;
        pos[i] = i, slots[i] = bt[i / BS] * BS + i % BS;
    }
    if (s == ZP_OK) {
        zp_batch_one one;
        zp_batch_one_prefill(&one, ids, pos, slots, N_PROMPT, N_PROMPT, bt, 4);
        s = zp_model_forward(m, &one.b, &kv, j->logits);
    }
    for (int g = 0; s == ZP_OK && g < N_DECODE; g++) {
        int tok = j->tokens[g] = argmax(j->logits + (size_t)g * V, V), p = N_PROMPT + g, slot = bt[p / BS] * BS + p % BS;
        int q0 = 0, ql = 1, kvl = p + 1, row = 0;
        zp_batch d = {.n_tokens = 1,
                      .n_seqs = 1,
                      .token_ids = &tok,
                      .positions = &p,
                      .slot_mapping = &slot,
                      .seq_q_start = &q0,
                      .seq_q_len = &ql,
                      .seq_kv_len = &kvl,
                      .block_tables = bt,
                      .max_blocks = 4,
                      .n_out = 1,
                      .out_rows = &row,
                      .n_views = 1};
        s = zp_model_forward(m, &d, &kv, j->logits + (size_t)(g + 1) * V);
    }
    if (s == ZP_OK) j->tokens[N_DECODE] = argmax(j->logits + (size_t)N_DECODE * V, V);
    if (s != ZP_OK) snprintf(j->error, sizeof j->error, "%s", zp_last_error());
    if (m) zp_model_kv_free(m, &kv), zp_model_free(m);
    if (be) be->destroy(be);
    return s;
}

static void *rank_thread(void *arg) {
    rank_job *j = arg;
    j->status = rank_run(j);
    return NULL;
}

/* The whole model and a group of p ranks on source: logits within fp32 reordering of the sums
 * (1e-5 of the largest logit; a group of one: bit-identical), greedy tokens equal, and every
 * rank bit-identical to rank 0. Ranks sum through NCCL (rank r on GPU r) or the local comm. */
static void test_group(const char *source, int p) {
    const int V = 1024;
    rank_job whole = {.source = source, .size = 1, .logits = calloc((size_t)(1 + N_DECODE) * V, sizeof(float)), .status = ZP_OK};
    CHECK_OK(rank_run(&whole));
    zp_comm *comm[4];
    rank_job jobs[4];
    pthread_t th[4];
    const int devices[4] = {0, 1, 2, 3};
    CHECK_OK(use_nccl ? zp_comm_nccl_create(p, devices, comm) : zp_comm_local_create(p, comm));
    for (int r = 0; r < p; r++) {
        jobs[r] = (rank_job){.source = source,
                             .size = p,
                             .rank = r,
                             .device = use_nccl ? r : 0,
                             .comm = comm[r],
                             .logits = calloc((size_t)(1 + N_DECODE) * V, sizeof(float)),
                             .status = ZP_OK};
        CHECK(pthread_create(&th[r], NULL, rank_thread, &jobs[r]) == 0);
    }
    for (int r = 0; r < p; r++) pthread_join(th[r], NULL);
    double scale = zp_max_abs(whole.logits, (size_t)(1 + N_DECODE) * V), worst = 0;
    int same_tokens = 1, ranks_agree = 1;
    for (int r = 0; r < p; r++) {
        if (jobs[r].status != ZP_OK) fprintf(stderr, "%s, TP %d, rank %d: %s\n", source, p, r, jobs[r].error);
        CHECK(jobs[r].status == ZP_OK);
        ranks_agree &= !memcmp(jobs[r].logits, jobs[0].logits, sizeof(float) * (size_t)(1 + N_DECODE) * V);
    }
    worst = zp_max_abs_diff(jobs[0].logits, whole.logits, (size_t)(1 + N_DECODE) * V);
    for (int g = 0; g <= N_DECODE; g++) same_tokens &= jobs[0].tokens[g] == whole.tokens[g];
    printf("test_tp: %s, TP %d%s: max |logit - TP 1| %.3g (scale %.3g), greedy tokens %s, ranks %s\n", source, p,
           use_nccl ? " over NCCL" : "", worst, scale, same_tokens ? "equal" : "DIFFER", ranks_agree ? "bit-identical" : "DIFFER");
    CHECK(scale > 0.1 && worst <= (p == 1 ? 0.0 : 1e-5 * scale));
    CHECK(same_tokens && ranks_agree);
    for (int r = 0; r < p; r++) free(jobs[r].logits), comm[r]->destroy(comm[r]);
    free(whole.logits);
}

/* Rank r's weights are the slices tp.h names of the whole model's (CPU weights are host fp32). */
static void test_slices(const char *source) {
    zp_backend *be;
    zp_model *full, *part;
    CHECK_OK(zp_backend_cpu_create(1, &be));
    CHECK_OK(zp_model_load_random(source, 7, be, &full));
    zp_comm *comm[2];
    CHECK_OK(zp_comm_local_create(2, comm));
    zp_tp_shard t = {.size = 2, .rank = 1};
    CHECK_OK(zp_model_load_rank(source, 1, 7, be, &t, comm[1], &part));
    const zp_model_config *c = &full->cfg;
    const int H = c->hidden, D = c->head_dim, I = c->intermediate, Hq = c->n_heads, Hkv = c->n_kv_heads;
    const zp_tp_shard *s = &part->tp;
    CHECK(s->size == 2 && s->rank == 1 && s->q0 == Hq / 2 && s->kv0 == Hkv / 2 && s->i0 == I / 2);
    CHECK(part->cfg.n_heads == Hq / 2 && part->cfg.n_kv_heads == Hkv / 2 && part->cfg.intermediate == I / 2);
    int ok = 1;
    for (int l = 0; l < c->n_layers; l++) {
        const float *fq = full->layers[l].wqkv, *pq = part->layers[l].wqkv;
        const int qr = s->nq * D, kr = s->nkv * D;
        for (int r = 0; r < qr; r++) ok &= !memcmp(pq + (size_t)r * H, fq + (size_t)(s->q0 * D + r) * H, sizeof(float) * H);
        for (int r = 0; r < 2 * kr; r++) { /* k rows, then v rows */
            const int src = Hq * D + (r < kr ? 0 : Hkv * D) + s->kv0 * D + r % kr;
            ok &= !memcmp(pq + (size_t)(qr + r) * H, fq + (size_t)src * H, sizeof(float) * H);
        }
        const float *fo = full->layers[l].wo, *po = part->layers[l].wo;
        for (int r = 0; r < H; r++) ok &= !memcmp(po + (size_t)r * qr, fo + (size_t)r * Hq * D + s->q0 * D, sizeof(float) * qr);
        const float *fg = full->layers[l].w_gate_up, *pg = part->layers[l].w_gate_up;
        for (int r = 0; r < 2 * s->ni; r++) /* gate rows, then up rows */
            ok &= !memcmp(pg + (size_t)r * H, fg + (size_t)((r < s->ni ? 0 : I) + s->i0 + r % s->ni) * H, sizeof(float) * H);
        const float *fd = full->layers[l].w_down, *pd = part->layers[l].w_down;
        for (int r = 0; r < H; r++) ok &= !memcmp(pd + (size_t)r * s->ni, fd + (size_t)r * I + s->i0, sizeof(float) * s->ni);
        if (c->qkv_bias) {
            const float *fb = full->layers[l].bqkv, *pb = part->layers[l].bqkv;
            ok &= !memcmp(pb, fb + s->q0 * D, sizeof(float) * qr) && !memcmp(pb + qr, fb + Hq * D + s->kv0 * D, sizeof(float) * kr) &&
                  !memcmp(pb + qr + kr, fb + (Hq + Hkv) * D + s->kv0 * D, sizeof(float) * kr);
        }
    }
    if (!ok) fprintf(stderr, "%s: rank 1's weights are not the whole model's slices\n", source);
    CHECK(ok);
    zp_model *m = NULL;
    CHECK_FAILS(zp_model_load_rank(source, 1, 7, be, &t, NULL, &m), ZP_ERR_INVALID, "needs a communicator of its group (got none)");
    CHECK_FAILS(zp_model_load_rank(source, 1, 7, be, &t, comm[0], &m), ZP_ERR_INVALID, "got one of another size or rank");
    zp_tp_shard four = {.size = 4};
    zp_comm *c4[4];
    CHECK_OK(zp_comm_local_create(4, c4));
    if (!strcmp(source, "tiny-qwen3")) CHECK_FAILS(zp_model_load_rank(source, 1, 7, be, &four, c4[0], &m), ZP_ERR_INVALID, "2 key-value heads");
    for (int r = 0; r < 4; r++) c4[r]->destroy(c4[r]);
    zp_model_free(part), zp_model_free(full);
    comm[0]->destroy(comm[0]), comm[1]->destroy(comm[1]);
    be->destroy(be);
}

/* The local communicator's abort: a rank waiting in a sum for a rank that failed gets an error,
 * and so does a sum begun after the abort. */
typedef struct {
    zp_comm *comm;
    zp_backend *be;
    zp_status status;
} abort_job;

static void *waiting_rank(void *arg) {
    abort_job *j = arg;
    void *buf;
    j->status = j->be->alloc(j->be, 4, ZP_ACT_F32, &buf);
    if (j->status == ZP_OK) j->status = j->comm->all_reduce(j->comm, j->be, buf, ZP_ACT_F32, 4), j->be->release(j->be, buf);
    return NULL;
}

static void test_abort(void) {
    zp_comm *comm[2];
    zp_backend *be;
    CHECK_OK(zp_comm_local_create(2, comm));
    CHECK_OK(zp_backend_cpu_create(1, &be));
    abort_job j = {comm[0], be, ZP_OK};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, waiting_rank, &j) == 0);
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL); /* rank 0 is waiting for rank 1, which fails instead */
    comm[1]->abort(comm[1]);
    pthread_join(th, NULL);
    CHECK(j.status == ZP_ERR_BACKEND); /* its message is its thread's: "rank 0 of 2: the group was stopped" */
    void *buf;
    CHECK_OK(be->alloc(be, 4, ZP_ACT_F32, &buf));
    CHECK_FAILS(comm[1]->all_reduce(comm[1], be, buf, ZP_ACT_F32, 4), ZP_ERR_BACKEND, "rank 1 of 2: the group was stopped after an error on another rank");
    be->release(be, buf);
    comm[0]->destroy(comm[0]), comm[1]->destroy(comm[1]);
    be->destroy(be);
    printf("  local communicator: abort releases a rank waiting in a sum, later sums fail\n");
}

/* NCCL's abort (ncclCommAbort): a sum on an aborted group fails, and its communicators are
 * then freed without ncclCommDestroy. */
static void test_nccl_abort(int p) {
    zp_comm *comm[4];
    const int devices[4] = {0, 1, 2, 3};
    CHECK_OK(zp_comm_nccl_create(p, devices, comm));
    zp_backend *be;
    CHECK_OK(backend_create(0, &be));
    for (int r = 0; r < p; r++) comm[r]->abort(comm[r]);
    void *buf;
    CHECK_OK(be->alloc(be, 4, ZP_ACT_F32, &buf));
    CHECK_FAILS(comm[0]->all_reduce(comm[0], be, buf, ZP_ACT_F32, 4), ZP_ERR_BACKEND, "the group was stopped after an error");
    be->release(be, buf);
    for (int r = 0; r < p; r++) comm[r]->destroy(comm[r]);
    be->destroy(be);
    printf("  nccl: an aborted group's sums fail, its communicators free\n");
}

int main(int argc, char **argv) {
    use_nccl = argc > 2 && !strcmp(argv[1], "nccl");
    use_cuda = use_nccl || (argc > 1 && !strcmp(argv[1], "cuda"));
    const int p = use_nccl ? atoi(argv[2]) : 0;
    if (use_nccl && p != 1 && p != 2 && p != 4) { fprintf(stderr, "test_tp nccl P: P is 1, 2 or 4\n"); return 2; }
    if (use_cuda) {
        zp_backend *probe;
        zp_comm *probe_comm[4];
        const int devices[4] = {0, 1, 2, 3};
        if (backend_create(use_nccl ? p - 1 : 0, &probe) != ZP_OK) {
            printf("test_tp %s: no GPU %d here (%s): skipped\n", argv[1], use_nccl ? p - 1 : 0, zp_last_error());
            return 77;
        }
        probe->destroy(probe);
        if (use_nccl && zp_comm_nccl_create(p, devices, probe_comm) != ZP_OK) {
            printf("test_tp nccl %d: %s: skipped\n", p, zp_last_error());
            return 77;
        }
        for (int r = 0; use_nccl && r < p; r++) probe_comm[r]->destroy(probe_comm[r]);
    }
    const char *qwen3 = zp_test_kv4_config("tp_qwen3", "Qwen3ForCausalLM", "qwen3", ""),
               *qwen2 = zp_test_kv4_config("tp_qwen2", "Qwen2ForCausalLM", "qwen2", ""),
               *llama = zp_test_kv4_config("tp_llama", "LlamaForCausalLM", "llama", "");
    if (use_nccl) { /* every policy-free forward of the shapes that split into p */
        if (p <= 2) test_group("tiny-qwen3", p), test_group("tiny-llama", p);
        test_group(qwen3, p), test_group(qwen2, p), test_group(llama, p);
        test_nccl_abort(p);
        return zp_test_finish("test_tp nccl");
    }
    test_arithmetic();
    test_abort();
    test_slices("tiny-qwen3");
    test_slices(qwen2);
    test_group("tiny-qwen3", 2);
    test_group("tiny-llama", 2);
    test_group(qwen3, 2);
    test_group(qwen3, 4);
    test_group(qwen2, 4);
    test_group(llama, 4);
    return zp_test_finish(use_cuda ? "test_tp cuda" : "test_tp");
}
