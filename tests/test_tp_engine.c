/* test_tp_engine.c - tensor parallelism through the whole engine (engine_tp.c): requests that
 * outgrow their cap, scheduled once and run by a group of 2 (and 4) ranks - each its own
 * backend, model share, KV pool and compressor, summing through the local communicator - give
 * the greedy tokens, compression counts and tokens evicted of the same engine at tp 1, for
 * every policy; with asynchronous compression too; on a checkpoint (its tensors sliced at
 * load) and on seeded weights of a shape with 4 KV heads. The oracle is the unsharded engine,
 * whose forward matches transformers (test_hf_parity) and whose compression matches the
 * authors' kernels (tests/reference); what is shown here is that sharding changes nothing.
 * Argument "cuda": CUDA backends in fp32, every rank on GPU 0 (tp_local); "nccl": rank r on
 * GPU r through NCCL, exit 77 (skipped) with fewer than 2 GPUs or without NCCL. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "policy.h"
#include "test_util.h"

enum { N_REQ = 3, MAX_TOK = 70, BS = 16 };

static const char *device = "cpu";
static int tp_local = 0;

typedef struct {
    int tokens[N_REQ][MAX_TOK], n[N_REQ];
    zp_engine_stats st;
    int ok;
} outcome;

static zp_engine_config engine_config(const char *source, int random, const char *policy, int tp, int async) {
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = source;
    ec.random_weights = random;
    ec.weight_seed = 5;
    ec.device = device;
    ec.precision = "fp32";
    ec.n_threads = 1;
    ec.block_size = BS;
    ec.num_blocks = 40;
    ec.max_num_seqs = 8;
    ec.policy = policy;
    ec.nmax = 2;
    ec.window = strcmp(policy, "full") ? 8 : 0;
    ec.async_compress = async;
    ec.tp = tp;
    ec.tp_local = tp_local;
    ec.cuda_graphs = 0; /* tp 1 as the group: no graphs either way */
    return ec;
}

/* Runs the requests on *ep (reinitialised to the configuration when not NULL, else created),
 * leaving the engine there when keep, else freeing it. */
static void run_on(zp_engine **ep, int keep, const char *source, int random, const char *policy, int tp, int async, outcome *o) {
    memset(o, 0, sizeof *o);
    zp_engine_config ec = engine_config(source, random, policy, tp, async);
    zp_status s = *ep ? zp_engine_reinit(ep, &ec) : zp_engine_init(&ec, ep);
    CHECK_OK(s);
    if (s != ZP_OK) return;
    zp_engine *e = *ep;
    const int V = zp_engine_model_config(e)->vocab, lens[N_REQ] = {20, 27, 45}; /* 45 > the 32-token budget: SnapKV compresses it */
    zp_sampling_params sp = zp_sampling_default();
    sp.temperature = 0;
    sp.max_tokens = MAX_TOK;
    sp.ignore_eos = 1;
    for (int r = 0; r < N_REQ; r++) {
        int ids[64];
        for (int i = 0; i < lens[r]; i++) ids[i] = (int)(zp_rng_uniform(11, (uint64_t)r, 0, (uint32_t)i) * V) % V;
        CHECK_OK(zp_engine_add_request(e, ids, lens[r], &sp, r, 0, 3));
    }
    for (int steps = 0; zp_engine_has_unfinished(e) && steps < 5000 && s == ZP_OK; steps++) {
        s = zp_engine_step(e);
        if (s == ZP_OK) s = zp_engine_check_invariants(e);
    }
    CHECK_OK(s);
    zp_output out[N_REQ];
    const int n = zp_engine_poll(e, out, N_REQ);
    CHECK(n == N_REQ);
    for (int i = 0; i < n; i++) {
        const int r = (int)out[i].request_id;
        o->n[r] = out[i].n_tokens;
        memcpy(o->tokens[r], out[i].tokens, sizeof(int) * (size_t)(out[i].n_tokens < MAX_TOK ? out[i].n_tokens : MAX_TOK));
        zp_output_free(&out[i]);
    }
    zp_engine_get_stats(e, &o->st);
    o->ok = s == ZP_OK && n == N_REQ;
    if (!keep) zp_engine_free(e), *ep = NULL;
}

static void run(const char *source, int random, const char *policy, int tp, int async, outcome *o) {
    zp_engine *e = NULL;
    run_on(&e, 0, source, random, policy, tp, async, o);
}

/* Greedy tokens, compressions and tokens evicted of tp ranks against tp 1. */
static int same(const outcome *a, const outcome *b, int *first_diff) {
    *first_diff = -1;
    for (int r = 0; r < N_REQ && *first_diff < 0; r++) {
        if (a->n[r] != b->n[r]) *first_diff = 0;
        for (int t = 0; t < a->n[r] && t < MAX_TOK && *first_diff < 0; t++)
            if (a->tokens[r][t] != b->tokens[r][t]) *first_diff = t;
    }
    return a->ok && b->ok && *first_diff < 0 && a->st.compressions == b->st.compressions && a->st.tokens_evicted == b->st.tokens_evicted &&
           a->st.num_blocks == b->st.num_blocks;
}

static void every_policy(const char *name, const char *source, int random, int tp) {
    const zp_policy_ops *const *reg = policy_registry();
    int compressed = 0;
    for (int i = 0; reg[i]; i++) {
        if (reg[i]->needs_stats) continue; /* TriAttention: not with tensor parallelism yet (the engine refuses it) */
        outcome one, group;
        run(source, random, reg[i]->name, 1, 0, &one);
        run(source, random, reg[i]->name, tp, 0, &group);
        int diff;
        const int ok = same(&one, &group, &diff);
        printf("  %-10s %-9s tp %d: %s (%lld compressions, %lld tokens evicted)\n", name, reg[i]->name, tp, ok ? "= tp 1" : "DIFFERS",
               (long long)group.st.compressions, (long long)group.st.tokens_evicted);
        if (!ok)
            fprintf(stderr, "tp %d %s %s: first differing token %d; compressions %lld/%lld, evicted %lld/%lld\n", tp, name, reg[i]->name, diff,
                    (long long)one.st.compressions, (long long)group.st.compressions, (long long)one.st.tokens_evicted,
                    (long long)group.st.tokens_evicted);
        CHECK(ok);
        CHECK(!reg[i]->evicts || one.st.compressions > 0); /* the comparison covers compressions */
        compressed += one.st.compressions > 0;
    }
    CHECK(compressed >= 10);
    outcome one, group;
    run(source, random, "zipage", 1, 0, &one);
    run(source, random, "zipage", tp, 1, &group); /* the worker compresses every rank's heads */
    int diff;
    printf("  %-10s zipage    tp %d, async compression: %s\n", name, tp, same(&one, &group, &diff) ? "= tp 1" : "DIFFERS");
    CHECK(same(&one, &group, &diff));
    zp_engine *e = NULL; /* a sweep's engine: the group's weights kept, a new pool and policy */
    run_on(&e, 1, source, random, "zipage", tp, 0, &group);
    run_on(&e, 0, source, random, "h2o", tp, 0, &group);
    run(source, random, "h2o", 1, 0, &one);
    printf("  %-10s h2o       tp %d after a reinit from zipage: %s\n", name, tp, same(&one, &group, &diff) ? "= tp 1" : "DIFFERS");
    CHECK(same(&one, &group, &diff));
}

/* A rank that fails while the others wait in a sum: they get an error instead of waiting for
 * ever, the error names the failed rank, and the group takes no more steps. */
static zp_status fail_or_sum(zp_engine *e, int r, engine_rank *k, void *arg) {
    (void)e, (void)arg;
    if (r == 1) return zp_fail(ZP_ERR_BACKEND, "an injected failure");
    void *buf;
    ZP_TRY(k->be->alloc(k->be, 8, ZP_ACT_F32, &buf));
    zp_status s = k->model->comm->all_reduce(k->model->comm, k->be, buf, ZP_ACT_F32, 8); /* rank 1 never arrives */
    k->be->release(k->be, buf);
    return s;
}

static void failed_rank(const char *ckpt) {
    zp_engine_config ec = engine_config(ckpt, 0, "zipage", 2, 0);
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&ec, &e));
    if (!e) return;
    CHECK_FAILS(engine_ranks_run(e, fail_or_sum, NULL), ZP_ERR_BACKEND, "tensor-parallel rank 1 of 2: an injected failure");
    zp_sampling_params sp = zp_sampling_default();
    const int ids[4] = {5, 6, 7, 8};
    CHECK_OK(zp_engine_add_request(e, ids, 4, &sp, 0, 0, 1));
    CHECK_FAILS(zp_engine_step(e), ZP_ERR_INVALID, "was stopped after an error on one of them: create a new engine");
    zp_engine_abandon(e);
    CHECK_FAILS(zp_engine_reinit(&e, &ec), ZP_ERR_INVALID, "group was stopped after an error");
    zp_engine_free(e);
    printf("  a rank failing while another waits in a sum: the wait ends with an error naming the rank, the group stops\n");
}

static void refusals(const char *ckpt) {
    zp_engine *e = NULL;
    zp_engine_config ec = engine_config(ckpt, 0, "zipage", 3, 0);
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "do not split into 3");
    ec = engine_config(ckpt, 0, "zipage", 1, 0);
    CHECK_OK(zp_engine_init(&ec, &e));
    zp_engine_config other = ec;
    other.tp = 2;
    CHECK_FAILS(zp_engine_reinit(&e, &other), ZP_ERR_INVALID, "tensor parallelism");
    zp_engine_free(e);
    ec.tp = 2;
    float *lg;
    int rows, vocab;
    const int prompt[3] = {1, 2, 3};
    CHECK_FAILS(zp_prompt_logits(&ec, prompt, 3, 0, &lg, &rows, &vocab), ZP_ERR_INVALID, "tp 2 refused");
}

int main(int argc, char **argv) {
    const int nccl = argc > 1 && !strcmp(argv[1], "nccl");
    if (nccl || (argc > 1 && !strcmp(argv[1], "cuda"))) {
        device = "cuda";
        tp_local = !nccl;
        zp_backend *probe;
        if (zp_backend_cuda_create(nccl ? 1 : 0, 1, NULL, &probe) != ZP_OK) {
            printf("test_tp_engine %s: no GPU %d here (%s): skipped\n", argv[1], nccl ? 1 : 0, zp_last_error());
            return 77;
        }
        probe->destroy(probe);
        zp_comm *probe_comm[2];
        const int devices[2] = {0, 1};
        if (nccl && zp_comm_nccl_create(2, devices, probe_comm) != ZP_OK) {
            printf("test_tp_engine nccl: %s: skipped\n", zp_last_error());
            return 77;
        }
        for (int r = 0; nccl && r < 2; r++) probe_comm[r]->destroy(probe_comm[r]);
    }
    const char *ckpt = zp_test_model("tiny-qwen3"), *kv4 = zp_test_kv4_config("tp_engine_kv4", "Qwen3ForCausalLM", "qwen3", "");
    every_policy("tiny-qwen3", ckpt, 0, 2);
    every_policy("4 KV heads", kv4, 1, nccl ? 2 : 4);
    if (!nccl) refusals(ckpt);
    failed_rank(ckpt);
    return zp_test_finish(nccl ? "test_tp_engine nccl" : !strcmp(device, "cuda") ? "test_tp_engine cuda" : "test_tp_engine");
}
