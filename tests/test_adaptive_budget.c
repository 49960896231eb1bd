/* test_adaptive_budget.c - the adaptive budget (`budget: adaptive`) on the CPU engine: each
 * compression keeps the fewest whole blocks, from budget_floor to N_max, whose candidates hold
 * budget_tau of the request's attention mass (compress_host.c zp_compress_measure, the count of
 * scorers/adaptive_budget.c); the target blocks it does not keep go back to the pool and the
 * request grows back to its cap before the next compression.
 * - tau 1 keeps every candidate of positive mass, more than N_max blocks hold, and a floor of N_max
 *   leaves no choice: both must give the fixed budget's tokens and compressions, for every policy
 *   the setting takes (attention windows, a stored and a live history, R-KV's score order, TOVA,
 *   MorphKV), synchronous and asynchronous.
 * - tau 0.5 keeps fewer blocks (counted after every step: each request's kept blocks within
 *   [floor, N_max], some below N_max, the engine's invariants every step, the mean retained tokens
 *   below the fixed budget's) and the worker thread gives the synchronous tokens; likewise with a
 *   prompt shared through the prefix cache (the first compression's fresh target blocks).
 * - The refusals, before anything runs.
 * The count rule itself is checked against Twilight's top-p kernel by tests/reference/check_topp.py. */
#include <stdlib.h>
#include <string.h>

#include "test_runner.h"
#include "test_util.h"

enum { NMAX = 4 };

static run_spec adaptive_spec(const char *policy) {
    run_spec rs = run_spec_default("tiny-qwen3");
    rs.ec.policy = policy;
    rs.ec.nmax = NMAX;
    rs.ec.window = 4;
    rs.sp.max_tokens = 150;
    rs.n_req = 3;
    rs.check_invariants = 1;
    return rs;
}

static void same_as_fixed(void) {
    static const char *const policies[] = {"zipage", "h2o", "snapkv-d", "rkv", "gkv", "tova", "morphkv"};
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        run_spec rs = adaptive_spec(policies[i]);
        run_result a, b, c, d;
        run_requests(&rs, &a);
        rs.ec.budget = "adaptive";
        rs.ec.budget_tau = 1.0f;
        run_requests(&rs, &b);
        rs.ec.async_compress = 1;
        run_requests(&rs, &c);
        rs.ec.async_compress = 0;
        rs.ec.budget_tau = 0.3f;
        rs.ec.budget_floor = NMAX;
        run_requests(&rs, &d);
        const int tau1 = run_same_outputs(&a, &b), tau1_async = run_same_outputs(&a, &c), floor = run_same_outputs(&a, &d);
        printf("  %-8s %lld compressions; adaptive tau 1: tokens %s the fixed budget's (async %s); floor N_max at tau 0.3: %s\n",
               policies[i], (long long)a.st.compressions, tau1 ? "equal" : "DIFFER from", tau1_async ? "equal" : "DIFFER",
               floor ? "equal" : "DIFFER");
        CHECK(a.st.compressions > 0 && b.st.compressions == a.st.compressions && d.st.compressions == a.st.compressions);
        CHECK(tau1 && tau1_async && floor);
        run_result_free(&a);
        run_result_free(&b);
        run_result_free(&c);
        run_result_free(&d);
    }
}

/* After every step: each request's kept blocks, counted once per compression. */
typedef struct {
    int done[8];
    int64_t kept[NMAX + 1], wrong;
} kept_ctx;

static void count_kept(zp_engine *e, void *vctx) {
    kept_ctx *k = vctx;
    for (int i = 0; i < e->sched.running.n; i++) {
        const zp_seq *q = e->sched.running.v[i];
        if (q->request_id < 0 || q->request_id >= 8 || q->compressing || q->n_compressions == k->done[q->request_id]) continue;
        k->done[q->request_id] = q->n_compressions;
        const int kb = q->keep_blocks;
        if (kb < e->cfg.budget_floor || kb > NMAX) k->wrong++;
        else k->kept[kb]++;
    }
}

/* rs at the adaptive budget, tau 0.5, its kept blocks counted into k after every step. */
static void counted_tau_half(run_spec *rs, kept_ctx *k) {
    rs->ec.budget = "adaptive";
    rs->ec.budget_tau = 0.5f;
    memset(k, 0, sizeof *k);
    rs->on_step = count_kept;
    rs->ctx = k;
}

static void fewer_blocks(void) {
    static const char *const policies[] = {"zipage", "h2o", "rkv"};
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        run_spec rs = adaptive_spec(policies[i]);
        run_result a, b, c;
        run_requests(&rs, &a);
        kept_ctx k;
        counted_tau_half(&rs, &k);
        run_requests(&rs, &b);
        rs.on_step = NULL;
        rs.ec.async_compress = 1;
        run_requests(&rs, &c);
        int64_t below = 0, all = 0;
        for (int kb = 1; kb <= NMAX; kb++) all += k.kept[kb], below += kb < NMAX ? k.kept[kb] : 0;
        printf("  %-8s tau 0.5: %lld compressions (fixed: %lld), kept blocks 1..%d: %lld %lld %lld %lld, mean retained %.1f tokens "
               "(fixed %.1f); async %s\n",
               policies[i], (long long)b.st.compressions, (long long)a.st.compressions, NMAX, (long long)k.kept[1], (long long)k.kept[2],
               (long long)k.kept[3], (long long)k.kept[4], b.st.mean_retained, a.st.mean_retained,
               run_same_outputs(&b, &c) ? "identical" : "DIFFERS");
        CHECK(k.wrong == 0 && all > 0 && below > 0);
        CHECK(b.st.mean_retained < a.st.mean_retained);
        CHECK(run_same_outputs(&b, &c));
        run_result_free(&a);
        run_result_free(&b);
        run_result_free(&c);
    }
}

/* A shared prompt of three blocks in the prefix cache: each request's first compression replaces
 * the shared blocks with fresh ones (the target's layout), and those it does not keep go back. */
static void shared_prompt(void) {
    run_spec rs = adaptive_spec("zipage");
    rs.shared_prompt = 1;
    rs.prompt_len = 50;
    kept_ctx k;
    counted_tau_half(&rs, &k);
    run_result a, b;
    run_requests(&rs, &a);
    rs.on_step = NULL;
    rs.ec.async_compress = 1;
    run_requests(&rs, &b);
    printf("  zipage   shared 50-token prompt, tau 0.5: %lld compressions, %lld prefix-hit tokens, kept blocks 1..%d: %lld %lld %lld %lld; async %s\n",
           (long long)a.st.compressions, (long long)a.st.prefix_hit_tokens, NMAX, (long long)k.kept[1], (long long)k.kept[2],
           (long long)k.kept[3], (long long)k.kept[4], run_same_outputs(&a, &b) ? "identical" : "DIFFERS");
    CHECK(a.st.prefix_hit_tokens > 0 && k.wrong == 0 && k.kept[1] + k.kept[2] + k.kept[3] > 0);
    CHECK(run_same_outputs(&a, &b));
    run_result_free(&a);
    run_result_free(&b);
}

static void refusals(void) {
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = zp_test_model("tiny-qwen3");
    ec.block_size = 16;
    ec.nmax = 3;
    ec.window = 4;
    ec.num_blocks = 64;
    zp_engine *e = NULL;
    ec.policy = "zipage";
    ec.budget = "adaptiv";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "budget \"adaptiv\" is not known (fixed, adaptive)");
    ec.budget = "adaptive";
    static const char *const capless[] = {"full", "snapkv"};
    for (int i = 0; i < 2; i++) {
        ec.policy = capless[i];
        CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "budget adaptive needs a policy that caps every request at N_max blocks");
    }
    static const char *const massless[] = {"streaming", "keynorm", "keydiff", "random"};
    for (int i = 0; i < 4; i++) {
        ec.policy = massless[i];
        CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "scores no attention mass to take the count over");
    }
    ec.policy = "zipage";
    ec.layer_budget = "pyramid";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_UNSUPPORTED, "budget adaptive: not with layer_budget pyramid");
    ec.layer_budget = "uniform";
    ec.head_budget = "adakv";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_UNSUPPORTED, "budget adaptive: not with head_budget adakv");
    ec.head_budget = "uniform";
    ec.budget_floor = 4;
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "budget_floor 4 must be in [1, nmax 3]");
    ec.budget_floor = 1;
    ec.budget_tau = 0.f;
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "budget_tau 0 must be in (0, 1]");
    ec.budget_tau = 0.9f;
    ec.max_concurrency = 17; /* 17 x 4 blocks > 64 */
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "budget adaptive: 17 query slots of requests that regrow to 4 blocks need 68");
    CHECK(e == NULL);
    ec.max_concurrency = 16;
    CHECK(zp_engine_init(&ec, &e) == ZP_OK);
    zp_engine_free(e);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    refusals();
    same_as_fixed();
    fewer_blocks();
    shared_prompt();
    return zp_test_finish("test_adaptive_budget");
}
