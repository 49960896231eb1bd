/* test_logprobs.c - log-probabilities of sampled tokens (zp_logprobs_compute, the engine's token
 * hook): rows whose log-softmax is known in closed form (uniform, log(i + 1), a large offset),
 * ties and the clamp of k; then the CPU engine (Zipage with compressions under way, sampling at
 * temperature 0.8) with want_logprobs: every hook call's logprob and top tokens against the
 * log-softmax of the raw logits row the logits hook saw for that step, and greedy's token being
 * its own top token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_runner.h"
#include "test_util.h"

static void test_closed_form(void) {
    enum { V = 1000 };
    static float row[V];
    zp_token_logprobs lp;
    for (int i = 0; i < V; i++) row[i] = 3.5f;
    zp_logprobs_compute(row, V, 7, 5, &lp);
    CHECK(fabsf(lp.logprob + logf((float)V)) < 1e-5f && lp.n_top == 5);
    for (int j = 0; j < 5; j++) CHECK(lp.top_id[j] == j && fabsf(lp.top_logprob[j] + logf((float)V)) < 1e-5f); /* ties: lower id first */
    for (int i = 0; i < V; i++) row[i] = logf((float)(i + 1)) + 1000.0f; /* p_i = (i + 1) / (V (V + 1) / 2), offset for stability */
    zp_logprobs_compute(row, V, 0, 3, &lp);
    const double z = log(V * (V + 1) / 2.0);
    CHECK(fabs(lp.logprob - (0.0 - z)) < 1e-3);
    CHECK(lp.top_id[0] == V - 1 && lp.top_id[1] == V - 2 && lp.top_id[2] == V - 3);
    CHECK(fabs(lp.top_logprob[0] - (log((double)V) - z)) < 1e-3);
    zp_logprobs_compute(row, V, 5, 50, &lp);
    CHECK(lp.n_top == ZP_MAX_LOGPROBS); /* k clamps */
    zp_logprobs_compute(row, 3, 1, 10, &lp);
    CHECK(lp.n_top == 3 && lp.top_id[0] == 2 && lp.top_id[2] == 0);
    zp_logprobs_compute(row, V, 5, 0, &lp);
    CHECK(lp.n_top == 0);
}

/* The engine: the logits hook keeps each request's row of the step; the token hook checks its
 * logprobs against that row's log-softmax. */
enum { MAXV = 1 << 17 };
typedef struct {
    float *row;             /* the last row the logits hook saw, and whose it was */
    int64_t id;
    int sample, vocab, calls, bad, greedy, top_ok;
} lp_ctx;
static lp_ctx g;

static void on_logits(void *ctx, int64_t id, int sample, int step, const float *logits, int vocab) {
    (void)ctx, (void)step;
    memcpy(g.row, logits, sizeof(float) * (size_t)vocab);
    g.id = id, g.sample = sample, g.vocab = vocab;
}

static void on_token(void *ctx, int64_t id, int sample, int tok, zp_finish_reason finish, const zp_token_logprobs *lp) {
    (void)ctx, (void)finish;
    g.calls++;
    if (!lp || id != g.id || sample != g.sample) { g.bad++; return; }
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < g.vocab; i++) mx = g.row[i] > mx ? g.row[i] : mx;
    for (int i = 0; i < g.vocab; i++) sum += exp(g.row[i] - mx);
    const double lse = mx + log(sum);
    int ok = fabs(lp->logprob - (g.row[tok] - lse)) < 1e-4 && lp->n_top == 4;
    for (int j = 0; ok && j < lp->n_top; j++) {
        int above = 0; /* the j-th top token has exactly j tokens ranked before it */
        const int t = lp->top_id[j];
        for (int i = 0; i < g.vocab; i++) above += g.row[i] > g.row[t] || (g.row[i] == g.row[t] && i < t);
        ok &= above == j && fabs(lp->top_logprob[j] - (g.row[t] - lse)) < 1e-4;
    }
    g.bad += !ok;
    g.top_ok += tok == lp->top_id[0];
}

static void test_engine(float temperature) {
    run_spec rs = run_spec_zipage("tiny-qwen3");
    rs.n_req = 3;
    rs.samples = 2;
    rs.sp.max_tokens = 40;
    rs.sp.temperature = temperature;
    rs.sp.want_logprobs = 1;
    rs.sp.top_logprobs = 4;
    rs.check_invariants = 1;
    rs.logits_hook = on_logits;
    rs.token_hook = on_token;
    memset(&g, 0, sizeof g);
    g.row = malloc(sizeof(float) * MAXV);
    run_result r;
    run_requests(&rs, &r);
    printf("logprobs at T %.1f: %d tokens, %d differ, %d were their step's top token, %lld compressions\n", temperature, g.calls, g.bad, g.top_ok,
           (long long)r.st.compressions);
    CHECK(g.calls == rs.n_req * rs.samples * rs.sp.max_tokens && g.bad == 0 && r.st.compressions > 0);
    if (temperature == 0) CHECK(g.top_ok == g.calls);
    else CHECK(g.top_ok < g.calls); /* sampling left the top token sometimes */
    run_result_free(&r);
    free(g.row);
}

int main(void) {
    test_closed_form();
    test_engine(0.8f);
    test_engine(0.0f);
    return zp_test_finish("test_logprobs");
}
