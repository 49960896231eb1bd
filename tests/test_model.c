/* test_model.c - the model forward on mkmodel checkpoints of each tiny architecture:
 * prefill logits == token-by-token decode logits, a ragged multi-request batch == each
 * request alone, and golden outputs (tests/data/golden_<preset>.txt) that pin the CPU
 * engine's numbers. Regenerate goldens with ZP_REGEN_GOLDEN=1 after an intended change.
 * Random weights built in memory (zp_model_load_random) equal an f32 mkmodel checkpoint of the
 * same seed: identical logits. */
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "mkmodel.h"
#include "model.h"
#include "test_util.h"

#define GOLDEN_MAGIC "zipage-golden v1"

typedef struct {
    zp_backend *be;
    zp_model *m;
    zp_kv_storage kv;
} fixture;

static void fx_open(fixture *f, const char *preset, int num_blocks, int bs) {
    memset(f, 0, sizeof *f);
    CHECK_OK(zp_backend_cpu_create(2, &f->be));
    if (zp_model_load(zp_test_model(preset), f->be, &f->m) != ZP_OK ||
        zp_model_kv_alloc(f->m, num_blocks, bs, &f->kv) != ZP_OK) {
        fprintf(stderr, "fixture %s: %s\n", preset, zp_last_error());
        exit(1);
    }
}
static void fx_close(fixture *f) {
    zp_model_kv_free(f->m, &f->kv);
    zp_model_free(f->m);
    f->be->destroy(f->be);
}

static void prompt_of(int *ids, int n, int vocab, uint32_t salt) {
    for (int i = 0; i < n; i++) ids[i] = (int)(zp_rng_uniform(3, salt, 0, (uint32_t)i) * vocab) % vocab;
}

/* Logits of every position: prefill in one step vs one decode step per token. */
static void test_prefill_equals_decode(const char *preset) {
    enum { N = 37, BS = 16 };
    fixture f;
    fx_open(&f, preset, 8, BS);
    const int V = f.m->cfg.vocab;
    int ids[N], pos[N], slots[N], rows[N], bt[3] = {5, 1, 6}; /* scattered blocks */
    prompt_of(ids, N, V, 1);
    for (int t = 0; t < N; t++) { pos[t] = t; slots[t] = bt[t / BS] * BS + t % BS; rows[t] = t; }
    float *pre = malloc(sizeof(float) * N * V), *dec = malloc(sizeof(float) * V);
    int q0 = 0, ql = N, kvl = N;
    zp_batch b = {.n_tokens = N,
                  .n_seqs = 1,
                  .token_ids = ids,
                  .positions = pos,
                  .slot_mapping = slots,
                  .seq_q_start = &q0,
                  .seq_q_len = &ql,
                  .seq_kv_len = &kvl,
                  .block_tables = bt,
                  .max_blocks = 3,
                  .n_out = N,
                  .out_rows = rows,
                  .is_prefill = 1,
                  .n_views = 1};
    CHECK_OK(zp_model_forward(f.m, &b, &f.kv, pre));
    double scale = zp_max_abs(pre, (size_t)N * V), worst = 0;
    for (int t = 0; t < N; t++) {
        int one_q = 0, one_len = 1, kv_len = t + 1, row0 = 0;
        zp_batch d = {.n_tokens = 1,
                      .n_seqs = 1,
                      .token_ids = ids + t,
                      .positions = pos + t,
                      .slot_mapping = slots + t,
                      .seq_q_start = &one_q,
                      .seq_q_len = &one_len,
                      .seq_kv_len = &kv_len,
                      .block_tables = bt,
                      .max_blocks = 3,
                      .n_out = 1,
                      .out_rows = &row0,
                      .n_views = 1};
        CHECK_OK(zp_model_forward(f.m, &d, &f.kv, dec));
        worst = fmax(worst, zp_max_abs_diff(dec, pre + (size_t)t * V, V));
    }
    CHECK(scale > 1.0);
    if (worst > 1e-4 * scale) fprintf(stderr, "%s: prefill vs decode max diff %g (scale %g)\n", preset, worst, scale);
    CHECK(worst <= 1e-4 * scale);
    free(pre); free(dec);
    fx_close(&f);
}

/* Three requests of different lengths in one prefill step == each in its own step. */
static void test_ragged_batch(const char *preset) {
    enum { BS = 16 };
    const int len[3] = {5, 23, 12}, T = 40;
    fixture f;
    fx_open(&f, preset, 12, BS);
    const int V = f.m->cfg.vocab;
    int ids[40], pos[40], slots[40], q0[3], ql[3], kvl[3], rows[3], bt[3][2] = {{0, -1}, {3, 9}, {7, -1}};
    float *all = malloc(sizeof(float) * 3 * V), *one = malloc(sizeof(float) * V);
    for (int s = 0, t = 0; s < 3; s++) {
        prompt_of(ids + t, len[s], V, 10 + s);
        q0[s] = t; ql[s] = kvl[s] = len[s];
        for (int i = 0; i < len[s]; i++, t++) { pos[t] = i; slots[t] = bt[s][i / BS] * BS + i % BS; }
        rows[s] = t - 1;
    }
    zp_batch b = {.n_tokens = T,
                  .n_seqs = 3,
                  .token_ids = ids,
                  .positions = pos,
                  .slot_mapping = slots,
                  .seq_q_start = q0,
                  .seq_q_len = ql,
                  .seq_kv_len = kvl,
                  .block_tables = &bt[0][0],
                  .max_blocks = 2,
                  .n_out = 3,
                  .out_rows = rows,
                  .is_prefill = 1,
                  .n_views = 1};
    CHECK_OK(zp_model_forward(f.m, &b, &f.kv, all));
    for (int s = 0; s < 3; s++) {
        int z = 0, last = len[s] - 1;
        zp_batch a = {.n_tokens = len[s],
                      .n_seqs = 1,
                      .token_ids = ids + q0[s],
                      .positions = pos + q0[s],
                      .slot_mapping = slots + q0[s],
                      .seq_q_start = &z,
                      .seq_q_len = &ql[s],
                      .seq_kv_len = &kvl[s],
                      .block_tables = bt[s],
                      .max_blocks = 2,
                      .n_out = 1,
                      .out_rows = &last,
                      .is_prefill = 1,
                      .n_views = 1};
        CHECK_OK(zp_model_forward(f.m, &a, &f.kv, one));
        CHECK(zp_max_abs_diff(one, all + (size_t)s * V, V) <= 1e-4 * zp_max_abs(one, V));
    }
    free(all); free(one);
    fx_close(&f);
}

/* Golden: last-position logits (first 8 values and the sum of squares) of a fixed prompt and
 * 32 greedy tokens through the engine. */
static void test_golden(const char *preset) {
    enum { N = 20, G = 32 };
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = zp_test_model(preset);
    ec.block_size = 16;
    ec.n_threads = 2;
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&ec, &e));
    if (!e) return;
    const int V = zp_engine_model_config(e)->vocab;
    int ids[N];
    prompt_of(ids, N, V, 99);
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = G;
    sp.ignore_eos = 1;
    CHECK_OK(zp_engine_add_request(e, ids, N, &sp, 0, 0, 0));
    while (zp_engine_has_unfinished(e)) CHECK_OK(zp_engine_step(e));
    zp_output o;
    CHECK(zp_engine_poll(e, &o, 1) == 1);
    zp_engine_free(e);
    /* logits through the model directly */
    fixture f;
    fx_open(&f, preset, 2, 16);
    float *lg = malloc(sizeof(float) * V);
    int pos[N], slots[N], bt[2] = {0, 1};
    for (int t = 0; t < N; t++) pos[t] = slots[t] = t;
    zp_batch_one one;
    zp_batch_one_prefill(&one, ids, pos, slots, N, N, bt, 2);
    CHECK_OK(zp_model_forward(f.m, &one.b, &f.kv, lg));
    double ss = 0;
    for (int v = 0; v < V; v++) ss += (double)lg[v] * lg[v];
    char path[512];
    snprintf(path, sizeof path, "%s/golden_%s.txt", ZP_TEST_DATA, preset);
    if (getenv("ZP_REGEN_GOLDEN")) {
        FILE *w = fopen(path, "w");
        fprintf(w, "%s\n# CPU engine outputs for mkmodel --preset %s --seed 1 (bf16); regenerate: ZP_REGEN_GOLDEN=1 build/tests/test_model\n", GOLDEN_MAGIC, preset);
        fprintf(w, "sumsq %.9g\nlogits", ss);
        for (int v = 0; v < 8; v++) fprintf(w, " %.9g", lg[v]);
        fprintf(w, "\ngreedy");
        for (int i = 0; i < o.n_tokens; i++) fprintf(w, " %d", o.tokens[i]);
        fprintf(w, "\n");
        fclose(w);
    }
    FILE *r = fopen(path, "r");
    CHECK(r != NULL);
    if (r) {
        char line[256];
        double want_ss, want_lg[8];
        int tok[G], ok = fgets(line, sizeof line, r) && !strncmp(line, GOLDEN_MAGIC, strlen(GOLDEN_MAGIC));
        ok = ok && fgets(line, sizeof line, r) && fscanf(r, "sumsq %lf logits", &want_ss) == 1;
        for (int v = 0; ok && v < 8; v++) ok = fscanf(r, "%lf", &want_lg[v]) == 1;
        ok = ok && fscanf(r, " greedy") == 0;
        for (int i = 0; ok && i < G; i++) ok = fscanf(r, "%d", &tok[i]) == 1;
        CHECK(ok);
        if (ok) {
            CHECK(fabs(ss - want_ss) <= 1e-4 * want_ss);
            for (int v = 0; v < 8; v++) CHECK_NEAR(lg[v], want_lg[v], 1e-3);
            CHECK(o.n_tokens == G && memcmp(o.tokens, tok, sizeof tok) == 0);
        }
        fclose(r);
    }
    zp_output_free(&o);
    free(lg);
    fx_close(&f);
}

/* In-memory random weights == the f32 checkpoint mkmodel writes with the same seed. */
static void test_random_weights(const char *preset) {
    enum { N = 20 };
    char dir[512];
    snprintf(dir, sizeof dir, "%s/model-%s-f32-%ld", ZP_TEST_TMP, preset, (long)getpid());
    CHECK_OK(zp_mkmodel(preset, dir, 7, ZP_DTYPE_F32));
    zp_backend *be;
    CHECK_OK(zp_backend_cpu_create(2, &be));
    zp_model *m[2] = {NULL, NULL};
    zp_kv_storage kv[2];
    CHECK_OK(zp_model_load(dir, be, &m[0]));
    CHECK_OK(zp_model_load_random(preset, 7, be, &m[1]));
    CHECK(m[0]->n_params == m[1]->n_params);
    const int V = m[0]->cfg.vocab;
    int ids[N], pos[N], slots[N], bt[2] = {0, 1};
    prompt_of(ids, N, V, 9);
    for (int t = 0; t < N; t++) { pos[t] = t; slots[t] = t; }
    float *lg[2];
    for (int k = 0; k < 2; k++) {
        CHECK_OK(zp_model_kv_alloc(m[k], 2, 16, &kv[k]));
        lg[k] = malloc(sizeof(float) * V);
        zp_batch_one one;
        zp_batch_one_prefill(&one, ids, pos, slots, N, N, bt, 2);
        CHECK_OK(zp_model_forward(m[k], &one.b, &kv[k], lg[k]));
    }
    CHECK(memcmp(lg[0], lg[1], sizeof(float) * V) == 0);
    CHECK_FAILS(zp_model_load_random("no-such-preset", 7, be, &m[0]), ZP_ERR_INVALID, "neither a config file nor a preset");
    for (int k = 0; k < 2; k++) { free(lg[k]); zp_model_kv_free(m[k], &kv[k]); zp_model_free(m[k]); }
    be->destroy(be);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    const char *presets[] = {"tiny-qwen3", "tiny-qwen2", "tiny-llama", "tiny-qwen3-moe", "tiny-gpt-oss", "tiny-gpt-oss-mxfp4"};
    for (int i = 0; i < 6; i++) {
        test_prefill_equals_decode(presets[i]);
        test_ragged_batch(presets[i]);
        test_golden(presets[i]);
        test_random_weights(presets[i]);
    }
    return zp_test_finish("test_model");
}
