/* test_gptoss_engine.c (label cpu) - a gpt-oss model (the tiny-gpt-oss preset: sliding layers of
 * window 16 beside full layers, attention sinks, 8 biased experts, top 2) through the whole CPU
 * engine. Full KV: every token generated; the same greedy tokens whether the requests run
 * together (ragged prefills and decodes in one batch, each with its own window), one at a time or
 * in a pool of 14 blocks (preempted, recomputed; Zipage there too, its invariants each step);
 * the sliding layers' ring (blocks of their own, at most the window's, half a block's bytes); the
 * prefix cache serving a shared prompt, the ring's blocks of the first query's window included. Every evicting policy: on the same weights
 * with every layer sliding, compressions leave exactly the greedy tokens of full KV (a sliding
 * layer keeps its window whatever the policy: nothing it reads is evicted); on the preset, each
 * compresses at its cap with the invariants checked and repeats exactly; what is not built (a live
 * history, the position shift) is refused by name; a budget under the window runs, the sliding
 * layers keeping their window. The model's numbers
 * against transformers: test_gptoss_hf; its forward (prefill equals decode, ragged batches,
 * golden): test_model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "test_runner.h"
#include "test_util.h"

static const char *const PRESET = "tiny-gpt-oss";

static run_spec gptoss_spec(void) {
    run_spec rs = run_spec_default(PRESET);
    rs.sp.temperature = 0.0f; /* greedy */
    rs.sp.max_tokens = 48;    /* prompts of 9 to 44 tokens: prefill and decode cross the window */
    rs.check_invariants = 1;
    return rs;
}

/* The preset's weights with every layer sliding: ZP_TEST_TMP/gptoss-all-sliding (config.json
 * rewritten, model.safetensors linked). */
static const char *all_sliding_model(void) {
    static char dir[1024];
    const char *src = zp_test_model(PRESET);
    snprintf(dir, sizeof dir, "%s/gptoss-all-sliding", ZP_TEST_TMP);
    mkdir(dir, 0755);
    char path[1200], target[1200];
    snprintf(path, sizeof path, "%s/config.json", src);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return dir;
    char cfg[8192];
    size_t n = fread(cfg, 1, sizeof cfg - 1, f);
    fclose(f);
    cfg[n] = 0;
    char *lt = strstr(cfg, "\"layer_types\"");
    char *end = lt ? strchr(lt, ']') : NULL;
    CHECK(lt && end);
    if (!lt || !end) return dir;
    snprintf(path, sizeof path, "%s/config.json", dir);
    f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return dir;
    fprintf(f, "%.*s\"layer_types\": [\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\"%s",
            (int)(lt - cfg), cfg, end);
    fclose(f);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(target, sizeof target, "%s/model.safetensors", src);
    unlink(path);
    CHECK(symlink(target, path) == 0);
    return dir;
}

static run_spec policy_spec(const char *model_dir, const zp_policy_ops *ops, const char *trig) {
    run_spec rs = gptoss_spec();
    rs.ec.model_dir = model_dir;
    rs.ec.policy = ops->name;
    rs.ec.nmax = 2; /* 32 tokens kept: over the window of 16 */
    rs.ec.window = 4;
    if (ops->needs_stats) rs.ec.policy_params = trig;
    if (!strcmp(ops->name, "h2o")) rs.ec.policy_params = "{\"history\": \"window\"}"; /* the live history is refused */
    return rs;
}

/* zp_engine_init of ec fails with ZP_ERR_UNSUPPORTED or ZP_ERR_INVALID naming `what`. */
static void check_refused(zp_engine_config ec, zp_status code, const char *what) {
    zp_engine *e = NULL;
    CHECK_FAILS(zp_engine_init(&ec, &e), code, what);
    CHECK(e == NULL);
}

/* What the sliding layers' ring holds (on_step): the most blocks of one request, its longest
 * length, the engine's block bytes. */
typedef struct {
    int most_ring, longest;
    size_t block_bytes;
} ring_probe;

static void probe_ring(zp_engine *e, void *ctx) {
    ring_probe *p = ctx;
    p->block_bytes = zp_engine_block_bytes(e);
    for (int i = 0; i < e->sched.running.n; i++) {
        const zp_seq *q = e->sched.running.v[i];
        if (q->n_ring - q->ring_first > p->most_ring) p->most_ring = q->n_ring - q->ring_first;
        if (q->n_tokens > p->longest) p->longest = q->n_tokens;
    }
}

static int tokens_of(const run_result *r) {
    int total = 0;
    for (int i = 0; i < r->n_req * r->samples; i++) total += r->n[i];
    return total;
}

int main(void) {
    run_spec rs = gptoss_spec();
    run_result together, alone, shared, shared_cached;
    run_requests(&rs, &together);
    printf("  full KV, together : %d tokens over %d requests, at most %d running\n", tokens_of(&together), together.n_req,
           together.max_running);
    CHECK(tokens_of(&together) == rs.n_req * rs.sp.max_tokens);
    CHECK(together.max_running > 1);
    rs.ec.max_num_seqs = 1;
    run_requests(&rs, &alone);
    printf("  full KV, one by one: %s\n", run_same_outputs(&together, &alone) ? "the same tokens" : "OTHER TOKENS");
    CHECK(run_same_outputs(&together, &alone));
    /* a pool of 14 blocks: requests wait, and running ones are preempted (recomputed) for the
     * blocks of both tables; the tokens stay those of an unconstrained pool */
    rs = gptoss_spec();
    rs.ec.num_blocks = 14;
    run_result tight;
    run_requests(&rs, &tight);
    printf("  full KV, 14 blocks: %lld preemptions, %s\n", (long long)tight.st.preemptions,
           run_same_outputs(&together, &tight) ? "the same tokens" : "OTHER TOKENS");
    CHECK(tight.st.preemptions > 0 && run_same_outputs(&together, &tight));
    run_result_free(&tight);
    /* and Zipage under the cap in that pool: every token, the invariants each step */
    rs.ec.policy = "zipage";
    rs.ec.nmax = 2;
    rs.ec.window = 4;
    run_requests(&rs, &tight);
    printf("  zipage, 14 blocks: %lld compressions, %lld preemptions, %lld suspensions, %d tokens\n", (long long)tight.st.compressions,
           (long long)tight.st.preemptions, (long long)tight.st.suspensions, tokens_of(&tight));
    CHECK(tight.st.compressions > 0 && tokens_of(&tight) == rs.n_req * rs.sp.max_tokens);
    run_result_free(&tight);
    rs = gptoss_spec();
    rs.shared_prompt = 1;
    rs.prompt_len = 40; /* two and a half blocks: the cache serves two of them, the ring's of the window too */
    rs.ec.enable_prefix_cache = 0;
    run_requests(&rs, &shared);
    rs.ec.enable_prefix_cache = 1;
    ring_probe probe = {0};
    rs.on_step = probe_ring;
    rs.ctx = &probe;
    run_requests(&rs, &shared_cached);
    printf("  shared prompt, prefix cache: %lld cached tokens, %s\n", (long long)shared_cached.st.prefix_hit_tokens,
           run_same_outputs(&shared, &shared_cached) ? "the same tokens" : "OTHER TOKENS");
    CHECK(shared_cached.st.prefix_hit_tokens == (int64_t)(rs.n_req - 1) * 32);
    CHECK(run_same_outputs(&shared, &shared_cached));
    /* one at a time: each request's blocks were freed (the ring's long before it finished) and
     * are revived from the free list */
    rs.ec.max_num_seqs = 1;
    run_result serial;
    run_requests(&rs, &serial);
    printf("  the same, one at a time: %lld cached tokens, %s\n", (long long)serial.st.prefix_hit_tokens,
           run_same_outputs(&shared, &serial) ? "the same tokens" : "OTHER TOKENS");
    CHECK(serial.st.prefix_hit_tokens == (int64_t)(rs.n_req - 1) * 32 && run_same_outputs(&shared, &serial));
    run_result_free(&serial);
    rs.ec.max_num_seqs = gptoss_spec().ec.max_num_seqs;
    /* the ring: 88 tokens per request (87 between steps), a window of 16 in blocks of 16: the sliding layers' K/V in
     * at most 2 blocks of their own, each block half the bytes of a whole-model block (2 of the 4
     * layers: K and V, 16 tokens, 2 KV heads of 64 floats) */
    printf("  the sliding layers' blocks: at most %d held by a request of %d tokens; block %zu bytes\n", probe.most_ring, probe.longest,
           probe.block_bytes);
    CHECK(probe.longest == 40 + 48 - 1 && probe.most_ring == 2); /* a finished request has left by then */
    CHECK(probe.block_bytes == 2u * 2 * 16 * 2 * 64 * sizeof(float));
    const zp_policy_ops *const *reg = policy_registry();
    char trig[700];
    snprintf(trig, sizeof trig, "{\"stats\": \"%s\"}", zp_test_trig_stats("tiny-gpt-oss", 4, 4, 32)); /* the preset's shape */
    const char *sliding = all_sliding_model();
    run_spec fs = gptoss_spec();
    fs.ec.model_dir = sliding;
    run_result sliding_full;
    run_requests(&fs, &sliding_full);
    CHECK(tokens_of(&sliding_full) == fs.n_req * fs.sp.max_tokens);
    int ran = 0;
    for (int p = 0; reg[p]; p++) {
        if (!reg[p]->evicts) continue;
        run_spec rs = policy_spec(sliding, reg[p], trig);
        run_result a, b, c;
        run_requests(&rs, &a);
        rs.ec.model_dir = zp_test_model(PRESET);
        run_requests(&rs, &b);
        run_requests(&rs, &c);
        printf("  %-11s: every layer sliding: %lld compressions, %s; the preset: %lld compressions, reruns %s\n", reg[p]->name,
               (long long)a.st.compressions, run_same_outputs(&a, &sliding_full) ? "the tokens of full KV" : "OTHER TOKENS",
               (long long)b.st.compressions, run_same_outputs(&b, &c) ? "identical" : "DIFFER");
        CHECK(a.st.compressions > 0 && run_same_outputs(&a, &sliding_full));
        CHECK(b.st.compressions > 0 && tokens_of(&b) == rs.n_req * rs.sp.max_tokens && run_same_outputs(&b, &c));
        run_result_free(&a), run_result_free(&b), run_result_free(&c);
        ran++;
    }
    CHECK(ran > 5);
    const zp_policy_ops *h2o = policy_find("h2o"), *streaming = policy_find("streaming"), *zipage = policy_find("zipage");
    zp_engine_config ec = policy_spec(zp_test_model(PRESET), h2o, trig).ec;
    ec.policy_params = NULL; /* h2o's own default: the live history */
    check_refused(ec, ZP_ERR_UNSUPPORTED, "a live history over sliding-window layers or attention sinks is not built");
    ec = policy_spec(zp_test_model(PRESET), streaming, trig).ec;
    ec.policy_params = "{\"position_shift\": true}";
    check_refused(ec, ZP_ERR_UNSUPPORTED, "position_shift with sliding-window layers is not built");
    /* PyramidKV's schedule over the full layers only (1 and 3): theirs is a two-layer pyramid, the
     * sliding layers keep the cap (never compressed); with no full layer it is refused */
    run_spec pyr = policy_spec(zp_test_model(PRESET), zipage, trig);
    pyr.ec.nmax = 4;
    pyr.ec.layer_budget = "pyramid";
    zp_engine *pe = NULL;
    CHECK_OK(zp_engine_init(&pyr.ec, &pe));
    if (pe) {
        zp_layer_plan two;
        CHECK_OK(zp_layer_plan_resolve("pyramid", 20, &pe->plan.geo, 2, &two));
        printf("  pyramid: layer budgets %d %d %d %d (a two-layer pyramid: %d %d)\n", pe->layers.budget[0], pe->layers.budget[1],
               pe->layers.budget[2], pe->layers.budget[3], two.budget[0], two.budget[1]);
        CHECK(pe->layers.budget[0] == pe->plan.geo.budget && pe->layers.budget[2] == pe->plan.geo.budget);
        CHECK(pe->layers.budget[1] == two.budget[0] && pe->layers.budget[3] == two.budget[1] && two.budget[0] > two.budget[1]);
        zp_layer_plan_free(&two);
        zp_engine_free(pe);
    }
    run_result pa, pb;
    run_requests(&pyr, &pa);
    run_requests(&pyr, &pb);
    CHECK(pa.st.compressions > 0 && tokens_of(&pa) == pyr.n_req * pyr.sp.max_tokens && run_same_outputs(&pa, &pb));
    run_result_free(&pa), run_result_free(&pb);
    pyr.ec.model_dir = sliding;
    check_refused(pyr.ec, ZP_ERR_INVALID, "layer_budget pyramid needs at least 2 layers it compresses (the model has 0)");
    /* a budget under the sliding window (8 tokens, window 16): the sliding layers keep their
     * window whatever the budget, so with every layer sliding the tokens are full KV's */
    run_spec small = policy_spec(sliding, zipage, trig);
    small.ec.nmax = 1;
    small.ec.block_size = 8;
    run_result under;
    run_requests(&small, &under);
    printf("  zipage, budget 8 under the window of 16, every layer sliding: %lld compressions, %s\n", (long long)under.st.compressions,
           run_same_outputs(&under, &sliding_full) ? "the tokens of full KV" : "OTHER TOKENS");
    CHECK(under.st.compressions > 0 && run_same_outputs(&under, &sliding_full));
    run_result_free(&under);
    run_result_free(&sliding_full);
    run_result_free(&together), run_result_free(&alone), run_result_free(&shared), run_result_free(&shared_cached);
    return zp_test_finish("test_gptoss_engine");
}
