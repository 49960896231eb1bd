/* test_gguf.c - the GGUF reader on files written here: metadata of every value type, tensor
 * infos, alignment, dequantisation of F32 / F16 / BF16 / Q8_0 / Q4_0 / Q4_1 blocks against
 * hand-computed values, every block type (K-quants included) against the PyPI gguf package on
 * real Gemma 3 blocks and synthetic ones (tests/data/gguf/quants.gguf), an architecture the
 * engine does not run refused at load, and malformed files (bad magic, truncated data, unsupported K-quant,
 * misaligned offset; offsets that wrap, 2^80 values, overlapping tensors, nested arrays, a cut
 * metadata entry) named with file and tensor. Then, when `make models` has fetched it, the
 * real SmolLM2-135M-Instruct Q4_1 checkpoint: its golden greedy answer (skipped otherwise). */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "dtype.h"
#include "engine.h"
#include "gguf.h"
#include "model.h"
#include "backend.h"
#include "test_util.h"

typedef struct {
    uint8_t *b;
    size_t n, cap;
} buf;

static void put(buf *w, const void *p, size_t n) {
    if (w->n + n > w->cap) { w->cap = (w->n + n) * 2 + 64; w->b = realloc(w->b, w->cap); }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static void put_u32(buf *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(buf *w, uint64_t v) { put(w, &v, 8); }
static void put_str(buf *w, const char *s) { put_u64(w, strlen(s)); put(w, s, strlen(s)); }
static void put_f16(buf *w, float f) { uint16_t h = zp_f32_to_f16(f); put(w, &h, 2); }

/* Tensor data (32 values per tensor) in six types; returns the file bytes. */
static buf make_file(uint32_t bad_type, int truncate) {
    buf w = {0}, data = {0};
    put(&w, "GGUF", 4);
    put_u32(&w, 3);
    put_u64(&w, 6);            /* tensors */
    put_u64(&w, 4);            /* kvs */
    put_str(&w, "general.architecture"); put_u32(&w, 8); put_str(&w, "llama");
    put_str(&w, "llama.block_count"); put_u32(&w, 4); put_u32(&w, 2);
    put_str(&w, "llama.rope.freq_base"); put_u32(&w, 6); { float f = 10000.f; put(&w, &f, 4); }
    put_str(&w, "tokenizer.ggml.tokens"); put_u32(&w, 9); put_u32(&w, 8); put_u64(&w, 2); put_str(&w, "a"); put_str(&w, "b");
    const char *names[6] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"};
    const uint32_t types[6] = {0, 1, 30, 8, 2, 3};
    for (int t = 0; t < 6; t++) {
        while (data.n % 32) { uint8_t z = 0; put(&data, &z, 1); }
        put_str(&w, names[t]);
        put_u32(&w, 2); put_u64(&w, 16); put_u64(&w, 2); /* ne = [16, 2] */
        put_u32(&w, t == 5 && bad_type ? bad_type : types[t]);
        put_u64(&w, data.n);
        switch (t) {
        case 0: for (int i = 0; i < 32; i++) { float f = (float)i - 10.5f; put(&data, &f, 4); } break;
        case 1: for (int i = 0; i < 32; i++) put_f16(&data, (float)i * 0.25f); break;
        case 2: for (int i = 0; i < 32; i++) { uint16_t h = zp_f32_to_bf16((float)i * -2.f); put(&data, &h, 2); } break;
        case 3: put_f16(&data, 0.5f); for (int i = 0; i < 32; i++) { int8_t q = (int8_t)(i - 16); put(&data, &q, 1); } break;
        case 4: put_f16(&data, 2.0f); for (int j = 0; j < 16; j++) { uint8_t q = (uint8_t)((j & 15) | ((15 - j) << 4)); put(&data, &q, 1); } break;
        case 5: put_f16(&data, 0.5f); put_f16(&data, -1.0f); for (int j = 0; j < 16; j++) { uint8_t q = (uint8_t)(j | (j << 4)); put(&data, &q, 1); } break;
        }
    }
    while (w.n % 32) { uint8_t z = 0; put(&w, &z, 1); }
    put(&w, data.b, truncate ? data.n - 5 : data.n);
    free(data.b);
    return w;
}

static const char *write_tmp(const char *name, buf *w) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", ZP_TEST_TMP, name);
    FILE *f = fopen(path, "wb");
    fwrite(w->b, 1, w->n, f);
    fclose(f);
    free(w->b);
    return path;
}

static void test_synthetic(void) {
    buf w = make_file(0, 0);
    zp_gguf g;
    CHECK_OK(zp_gguf_open(write_tmp("ok.gguf", &w), &g));
    CHECK(g.n_tensors == 6 && g.n_kv == 4);
    CHECK(!strcmp(zp_gguf_get(&g, "general.architecture")->s, "llama") && zp_gguf_get(&g, "llama.block_count")->i == 2);
    CHECK(zp_gguf_get(&g, "tokenizer.ggml.tokens")->n_arr == 2 && zp_gguf_get(&g, "llama.rope.freq_base")->f == 10000.0);
    float x[32];
    const char *names[6] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"};
    for (int t = 0; t < 6; t++) {
        const zp_gguf_tensor *ten = zp_gguf_find(&g, names[t]);
        CHECK(ten && ten->ne[0] == 16 && ten->ne[1] == 2);
        if (!ten) continue;
        CHECK_OK(zp_gguf_dequantize(&g, ten, x));
        int ok = 1;
        for (int i = 0; i < 32; i++) {
            float want = t == 0 ? (float)i - 10.5f : t == 1 ? (float)i * 0.25f : t == 2 ? (float)i * -2.f : t == 3 ? 0.5f * (float)(i - 16)
                       : t == 4 ? 2.0f * (float)((i < 16 ? i : 15 - (i - 16)) - 8) : 0.5f * (float)(i < 16 ? i : i - 16) - 1.0f;
            if (x[i] != want) { ok = 0; fprintf(stderr, "%s[%d] = %g, want %g\n", names[t], i, x[i], want); }
        }
        CHECK(ok);
    }
    zp_gguf_close(&g);
    w = make_file(16, 0); /* IQ2_XXS */
    CHECK_FAILS(zp_gguf_open(write_tmp("k.gguf", &w), &g), ZP_ERR_UNSUPPORTED, "tensor q4_1: type unknown is not supported");
    w = make_file(0, 1);
    CHECK_FAILS(zp_gguf_open(write_tmp("trunc.gguf", &w), &g), ZP_ERR_FORMAT, "truncated");
    buf bad = {0};
    put(&bad, "GGML", 4);
    put_u32(&bad, 3); put_u64(&bad, 0); put_u64(&bad, 0);
    CHECK_FAILS(zp_gguf_open(write_tmp("magic.gguf", &bad), &g), ZP_ERR_FORMAT, "bad magic");
    CHECK_FAILS(zp_gguf_open("/nonexistent.gguf", &g), ZP_ERR_IO, "/nonexistent.gguf");
}

/* A file with `nest` levels of arrays in one key, then tensors "a" and "b" (F32, 32 values
 * each) at the given data offsets with a's dimensions ne0 x ne1. */
static buf crafted(int nest, uint64_t off_a, uint64_t off_b, uint64_t ne0, uint64_t ne1) {
    buf w = {0};
    put(&w, "GGUF", 4);
    put_u32(&w, 3);
    put_u64(&w, 2);
    put_u64(&w, 1);
    put_str(&w, "deep");
    put_u32(&w, 9);
    for (int i = 0; i < nest; i++) { put_u32(&w, 9); put_u64(&w, 1); }
    put_u32(&w, 4); put_u64(&w, 0);
    put_str(&w, "a"); put_u32(&w, 2); put_u64(&w, ne0); put_u64(&w, ne1); put_u32(&w, 0); put_u64(&w, off_a);
    put_str(&w, "b"); put_u32(&w, 1); put_u64(&w, 32); put_u32(&w, 0); put_u64(&w, off_b);
    while (w.n % 32) { uint8_t z = 0; put(&w, &z, 1); }
    for (int i = 0; i < 64; i++) { float f = (float)i; put(&w, &f, 4); }
    return w;
}

/* Crafted files that read memory outside the file, overflowed the stack or were accepted. */
static void test_crafted(void) {
    zp_gguf g;
    buf w = crafted(0, 0, 128, 16, 2);
    CHECK_OK(zp_gguf_open(write_tmp("c_ok.gguf", &w), &g));
    zp_gguf_close(&g);
    w = crafted(0, (uint64_t)-(16ll << 20), 128, 16, 2); /* offset wraps the address space */
    CHECK_FAILS(zp_gguf_open(write_tmp("c_wrap.gguf", &w), &g), ZP_ERR_FORMAT, "tensor a: offset 18446744073692774400 + 128 bytes lies outside the file");
    w = crafted(0, 0, 128, 1ull << 40, 1ull << 40); /* 2^80 values: int64 overflow */
    CHECK_FAILS(zp_gguf_open(write_tmp("c_numel.gguf", &w), &g), ZP_ERR_FORMAT, "tensor a: bad dimension");
    w = crafted(0, 0, 64, 16, 2); /* b starts inside a */
    CHECK_FAILS(zp_gguf_open(write_tmp("c_overlap.gguf", &w), &g), ZP_ERR_FORMAT, "tensors a and b overlap");
    w = crafted(100000, 0, 128, 16, 2); /* 100,000 nested arrays */
    CHECK_FAILS(zp_gguf_open(write_tmp("c_nest.gguf", &w), &g), ZP_ERR_FORMAT, "key deep nests arrays deeper than 4");
    w = crafted(0, 0, 128, 16, 2);
    w.n = 4 + 4 + 8 + 8 + 8 + 4; /* cut inside the first metadata entry, after its key */
    CHECK_FAILS(zp_gguf_open(write_tmp("c_cut.gguf", &w), &g), ZP_ERR_FORMAT, "c_cut.gguf");
}

/* Every block type against the PyPI gguf package's dequantisation (tests/data/gguf/quants.gguf:
 * real blocks of Gemma 3 270M Q4_K_M for Q4_K, Q6_K, Q5_0, Q8_0, seeded synthetic blocks for
 * Q2_K, Q3_K, Q5_K, Q4_0, Q4_1, Q5_1; make_quant_fixture.py). */
static void test_quants_oracle(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/gguf/quants.gguf", ZP_TEST_DATA);
    zp_gguf g;
    CHECK_OK(zp_gguf_open(path, &g));
    int types = 0;
    for (int i = 0; i < g.n_tensors; i++) {
        const zp_gguf_tensor *t = &g.tensors[i];
        if (strstr(t->name, ".expect")) continue;
        char ename[128];
        snprintf(ename, sizeof ename, "%s.expect", t->name);
        const zp_gguf_tensor *e = zp_gguf_find(&g, ename);
        CHECK(e && e->ne[0] == t->ne[0] && t->ne[0] == 4096);
        if (!e || e->ne[0] != 4096) continue;
        float got[4096], want[4096];
        CHECK_OK(zp_gguf_dequantize(&g, t, got));
        CHECK_OK(zp_gguf_dequantize(&g, e, want));
        int exact = 0;
        double worst = 0, scale = 0;
        for (int k = 0; k < 4096; k++) {
            exact += got[k] == want[k];
            worst = fmax(worst, fabs((double)got[k] - want[k]));
            scale = fmax(scale, fabs((double)want[k]));
        }
        printf("gguf %-9s %-5s: %d/4096 values equal to gguf-py's, max abs diff %.3g (max |x| %.3g)\n", t->name,
               zp_ggml_type_name(t->type), exact, worst, scale);
        CHECK(exact == 4096 && scale > 0);
        types++;
    }
    CHECK(types == 10);
    zp_gguf_close(&g);
}

/* A GGUF of an architecture the engine does not run is refused by name at model load. */
static void test_arch_refused(void) {
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/gguf_gemma", ZP_TEST_TMP);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
          "\"num_key_value_heads\":2,\"intermediate_size\":128,\"vocab_size\":100}", f);
    fclose(f);
    buf w = {0};
    put(&w, "GGUF", 4);
    put_u32(&w, 3); put_u64(&w, 0); put_u64(&w, 1);
    put_str(&w, "general.architecture"); put_u32(&w, 8); put_str(&w, "gemma3");
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    f = fopen(path, "wb");
    fwrite(w.b, 1, w.n, f);
    fclose(f);
    free(w.b);
    zp_backend *be;
    CHECK_OK(zp_backend_cpu_create(1, &be));
    zp_model *m = NULL;
    CHECK_FAILS(zp_model_load(dir, be, &m), ZP_ERR_UNSUPPORTED, "general.architecture \"gemma3\" is not supported (qwen3, qwen2, llama)");
    be->destroy(be);
}

/* The real model: a greedy answer pinned when this test was written (CPU engine). */
static int test_smollm2(void) {
    const char *dir = ZIPAGE_SOURCE_DIR "/models" "/cache/SmolLM2-135M-Instruct-Q4_1";
    char path[600];
    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fclose(f);
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = dir;
    ec.block_size = 16;
    ec.n_threads = 2;
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&ec, &e));
    if (!e) return 1;
    /* "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n" */
    const int prompt[16] = {1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198};
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = 16;
    CHECK_OK(zp_engine_add_request(e, prompt, 16, &sp, 0, 0, 0));
    while (zp_engine_has_unfinished(e)) CHECK_OK(zp_engine_step(e));
    zp_output o;
    CHECK(zp_engine_poll(e, &o, 1) == 1);
    const int want[8] = {504, 3575, 282, 4649, 314, 7042, 30, 2}; /* "The capital of France is Paris.<|im_end|>" */
    CHECK(o.n_tokens == 8 && !memcmp(o.tokens, want, sizeof want) && o.finish == ZP_FINISH_EOS);
    zp_output_free(&o);
    zp_engine_free(e);
    return 1;
}

/* `test_gguf`: synthetic files; `test_gguf real`: the downloaded SmolLM2 (exit 77 when absent). */
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "real")) {
        if (!test_smollm2()) {
            printf("test_gguf real: skipped (run `make models` first)\n");
            return 77;
        }
        return zp_test_finish("test_gguf real");
    }
    test_synthetic();
    test_crafted();
    test_quants_oracle();
    test_arch_refused();
    return zp_test_finish("test_gguf");
}
