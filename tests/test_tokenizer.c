/* test_tokenizer.c - the tokenizer against llama.cpp's test vectors (ids made with Hugging
 * Face tokenizers; tests/data/tokenizer/, provenance in tests/data/README.md): qwen2 and
 * deepseek-r1-qwen with the Qwen3 vocab.json + merges.txt, llama-bpe with the Llama-3
 * tiktoken file; round trips for every family (incl. SmolLM2's tokenizer.json), special
 * tokens, streaming decode of split UTF-8, malformed files, and speed of a 100 KB text. */
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "config.h"
#include "tokenizer.h"
#include "test_util.h"

#define SEP "\n__ggml_vocab_test__\n"

static zp_tokenizer *load(const char *preset) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", ZIPAGE_SOURCE_DIR "/models", preset);
    zp_tokenizer *t = NULL;
    CHECK_OK(zp_tokenizer_load(dir, &t));
    return t;
}

/* Runs every case of NAME.gguf.inp and compares with NAME.gguf.out (skip_bos: drop a
 * leading id the vectors carry, llama.cpp's BOS). Returns cases passed. */
static int run_vectors(zp_tokenizer *t, const char *name, int skip_bos, int *total) {
    char p1[512], p2[512], *inp, *outs;
    snprintf(p1, sizeof p1, "%s/tokenizer/%s.gguf.inp", ZP_TEST_DATA, name);
    snprintf(p2, sizeof p2, "%s/tokenizer/%s.gguf.out", ZP_TEST_DATA, name);
    CHECK_OK(zp_read_file(p1, &inp, NULL));
    CHECK_OK(zp_read_file(p2, &outs, NULL));
    int passed = 0, k = 0;
    char *case_start = inp, *line = outs;
    for (;; k++) {
        char *sep = strstr(case_start, SEP);
        if (!sep) break;
        *sep = 0;
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        int *ids, n;
        CHECK_OK(zp_tokenizer_encode(t, case_start, strlen(case_start), 0, &ids, &n));
        int want[512], m = 0, off = 0, v;
        for (char *p = line; sscanf(p, "%d%n", &v, &off) == 1 && m < 512; p += off) want[m++] = v;
        int b = skip_bos && m > 0 ? 1 : 0, ok = n == m - b && !memcmp(ids, want + b, sizeof(int) * (size_t)n);
        if (!ok) fprintf(stderr, "%s case %d (\"%.40s\"): %d ids, expected %d\n", name, k, case_start, n, m - b);
        passed += ok;
        /* round trip: decoding gives the text back */
        char *back;
        size_t blen;
        CHECK_OK(zp_tokenizer_decode(t, ids, n, &back, &blen));
        if (strcmp(back, case_start)) fprintf(stderr, "%s case %d: round trip differs\n", name, k);
        CHECK(!strcmp(back, case_start));
        free(back);
        free(ids);
        case_start = sep + strlen(SEP);
        line = nl ? nl + 1 : line + strlen(line);
    }
    free(inp);
    free(outs);
    *total = k;
    return passed;
}

static void test_vectors(void) {
    zp_tokenizer *q = load("Qwen3-8B"), *l = load("DeepSeek-R1-Distill-Llama-8B");
    int total, passed;
    passed = run_vectors(q, "ggml-vocab-qwen2", 0, &total);
    printf("qwen2 vectors: %d/%d\n", passed, total);
    CHECK(total >= 46 && passed == total);
    passed = run_vectors(q, "ggml-vocab-deepseek-r1-qwen", 0, &total);
    printf("deepseek-r1-qwen vectors: %d/%d\n", passed, total);
    CHECK(total >= 46 && passed == total);
    passed = run_vectors(l, "ggml-vocab-llama-bpe", 0, &total);
    printf("llama-bpe vectors: %d/%d\n", passed, total);
    CHECK(total >= 46 && passed == total);
    zp_tokenizer_free(q);
    zp_tokenizer_free(l);
}

static void test_families(void) {
    const char *text = "<|im_start|>user\nSolve $x^2-5x+6=0$ ... 数学 Ä\n<think>\n12345</think> def f(a): return a**2<|im_end|>";
    const struct { const char *preset; const char *pretok; const char *special; int special_id; } fam[] = {
        {"Qwen3-8B", "qwen2", "<think>", 151667},
        {"DeepSeek-R1-Distill-Qwen-1.5B", "qwen2", "<｜Assistant｜>", 151645},
        {"DeepSeek-R1-Distill-Llama-8B", "llama3", "<｜Assistant｜>", 128012},
        {"SmolLM2-135M-Instruct", "gpt2", "<|im_start|>", 1},
    };
    for (int f = 0; f < 4; f++) {
        zp_tokenizer *t = load(fam[f].preset);
        if (!t) continue;
        CHECK(!strcmp(zp_tokenizer_pretok_name(t), fam[f].pretok));
        CHECK(zp_tokenizer_find(t, fam[f].special) == fam[f].special_id);
        int *ids, n;
        CHECK_OK(zp_tokenizer_encode(t, text, strlen(text), 1, &ids, &n));
        char *back;
        CHECK_OK(zp_tokenizer_decode(t, ids, n, &back, NULL));
        CHECK(!strcmp(back, text));
        free(back);
        free(ids);
        zp_tokenizer_free(t);
    }
    /* special tokens: the "special" flags of each family's files (Qwen3 and R1-Llama's
     * tokenizer_config.json added_tokens_decoder, SmolLM2's tokenizer.json added_tokens), the set
     * Hugging Face's decode(skip_special_tokens=True) leaves out; ordinary and non-special added
     * tokens (<think>, R1's <｜Assistant｜>) are not */
    const struct { const char *preset; int id, special; } sp[] = {
        {"Qwen3-8B", 151643, 1}, {"Qwen3-8B", 151645, 1}, {"Qwen3-8B", 151667, 0}, {"Qwen3-8B", 151657, 0}, {"Qwen3-8B", 100, 0},
        {"DeepSeek-R1-Distill-Llama-8B", 128001, 1}, {"DeepSeek-R1-Distill-Llama-8B", 128012, 0}, {"DeepSeek-R1-Distill-Llama-8B", 128013, 0},
        {"DeepSeek-R1-Distill-Llama-8B", 5000, 0}, {"SmolLM2-135M-Instruct", 2, 1}, {"SmolLM2-135M-Instruct", 0, 1}, {"SmolLM2-135M-Instruct", 100, 0},
    };
    for (size_t k = 0; k < sizeof sp / sizeof *sp; k++) {
        zp_tokenizer *t = load(sp[k].preset);
        if (!t) continue;
        if (zp_tokenizer_is_special(t, sp[k].id) != sp[k].special) fprintf(stderr, "%s id %d: special %d\n", sp[k].preset, sp[k].id, !sp[k].special);
        CHECK(zp_tokenizer_is_special(t, sp[k].id) == sp[k].special);
        zp_tokenizer_free(t);
    }
    zp_tokenizer *s = load("SmolLM2-135M-Instruct"); /* documented in shared/models/README.md */
    int *ids, n;
    CHECK_OK(zp_tokenizer_encode(s, "Hello world! 123", 16, 1, &ids, &n));
    const int want[7] = {19556, 905, 17, 216, 33, 34, 35};
    CHECK(n == 7 && !memcmp(ids, want, sizeof want));
    free(ids);
    /* Digits isolates every numeric code point, not only ASCII (HF on gsm8k-test-724: " ¾") */
    CHECK_OK(zp_tokenizer_encode(s, " ate \xc2\xbe of", 10, 1, &ids, &n));
    const int want2[4] = {15563, 216, 43124, 282};
    CHECK(n == 4 && !memcmp(ids, want2, sizeof want2));
    free(ids);
    zp_tokenizer_free(s);
    zp_tokenizer *q = load("Qwen3-8B");
    CHECK_OK(zp_tokenizer_encode(q, "<|im_start|>", 12, 1, &ids, &n));
    CHECK(n == 1 && ids[0] == 151644);
    free(ids);
    CHECK_OK(zp_tokenizer_encode(q, "<|im_start|>", 12, 0, &ids, &n)); /* not parsed as special */
    CHECK(n > 1);
    free(ids);
    /* streaming decode holds back an incomplete UTF-8 character */
    CHECK_OK(zp_tokenizer_encode(q, "数", strlen("数"), 0, &ids, &n));
    char out[64];
    zp_detok_state st = {{0}, 0};
    size_t got = 0;
    for (int i = 0; i < n; i++) got += zp_tokenizer_decode_stream(q, ids[i], &st, out + got, sizeof out - got);
    CHECK(got == strlen("数") && !memcmp(out, "数", got) && st.n_pending == 0);
    free(ids);
    /* a character cut after its first token (龘 is two tokens) decodes to U+FFFD, as Hugging
     * Face's decode does; the whole character decodes to itself */
    CHECK_OK(zp_tokenizer_encode(q, "龘", strlen("龘"), 0, &ids, &n));
    CHECK(n == 2);
    if (n == 2) {
        char *txt;
        size_t len;
        CHECK_OK(zp_tokenizer_decode(q, ids, 1, &txt, &len));
        CHECK(len == 3 && !memcmp(txt, "\xEF\xBF\xBD", 3));
        free(txt);
        CHECK_OK(zp_tokenizer_decode(q, ids, 2, &txt, &len));
        CHECK(!strcmp(txt, "龘"));
        free(txt);
    }
    free(ids);
    zp_tokenizer_free(q);
}

/* Golden ids of a fixed multilingual / maths / code text set made with the reference
 * tokenizers (tests/device/make_tokenizer_goldens.py on the GPU machine). */
static void test_goldens(void) {
    const struct { const char *file, *preset; } fam[] = {{"qwen3", "Qwen3-8B"}, {"r1qwen", "DeepSeek-R1-Distill-Qwen-7B"},
                                                        {"r1llama", "DeepSeek-R1-Distill-Llama-8B"}, {"smollm2", "SmolLM2-135M-Instruct"}};
    for (int f = 0; f < 4; f++) {
        zp_tokenizer *t = load(fam[f].preset);
        char path[512], *txt;
        snprintf(path, sizeof path, "%s/tokenizer/golden_%s.jsonl", ZP_TEST_DATA, fam[f].file);
        CHECK_OK(zp_read_file(path, &txt, NULL));
        int cases = 0, ok = 0;
        for (char *line = strtok(txt, "\n"); t && line; line = strtok(NULL, "\n")) {
            cJSON *o = cJSON_Parse(line);
            const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "text"), *want = cJSON_GetObjectItemCaseSensitive(o, "ids");
            int *ids, n, same;
            CHECK_OK(zp_tokenizer_encode(t, text->valuestring, strlen(text->valuestring), 1, &ids, &n));
            same = n == cJSON_GetArraySize(want);
            for (int i = 0; same && i < n; i++) same = ids[i] == cJSON_GetArrayItem(want, i)->valueint;
            if (!same) fprintf(stderr, "golden %s case %d differs: \"%.50s\"\n", fam[f].file, cases, text->valuestring);
            ok += same;
            cases++;
            free(ids);
            cJSON_Delete(o);
        }
        printf("golden %s: %d/%d\n", fam[f].file, ok, cases);
        CHECK(cases == 17 && ok == cases);
        free(txt);
        zp_tokenizer_free(t);
    }
}

/* Writes DIR/tokenizer.json: letters a-z (ids 0-25), "a"*k for k = 2..60 (ids 26..), a
 * ByteLevel pre-tokenizer, the given merges and added tokens. Loads it; returns the status. */
static zp_status load_crafted(const char *name, const char *merges, const char *added, zp_tokenizer **t) {
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/tok_%s", ZP_TEST_TMP, name);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return zp_fail(ZP_ERR_IO, "%s", path);
    fprintf(f, "{\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (int c = 0; c < 26; c++) fprintf(f, "%s\"%c\":%d", c ? "," : "", 'a' + c, c);
    for (int k = 2; k <= 60; k++) {
        fprintf(f, ",\"");
        for (int i = 0; i < k; i++) fputc('a', f);
        fprintf(f, "\":%d", 24 + k);
    }
    fprintf(f, "},\"merges\":%s},\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"added_tokens\":%s}", merges, added);
    fclose(f);
    *t = NULL;
    return zp_tokenizer_load(dir, t);
}

/* Crafted files that crashed or hung the loader: each loads or fails with one error, quickly. */
static void test_crafted(void) {
    zp_tokenizer *t;
    CHECK_FAILS(load_crafted("nonstring", "[[1,2]]", "[]", &t), ZP_ERR_FORMAT, "merge 0 is malformed");
    CHECK_OK(load_crafted("nomerges", "[]", "[]", &t)); /* no merges: every byte its own token */
    int *ids, n;
    if (t) {
        CHECK_OK(zp_tokenizer_encode(t, "abc", 3, 1, &ids, &n));
        CHECK(n == 3 && ids[0] == 0 && ids[1] == 1 && ids[2] == 2);
        free(ids);
        zp_tokenizer_free(t);
    }
    /* 1,770 distinct merges ("a"*i + "a"*j) over an 85-token vocabulary: the merge table grows */
    size_t cap = 1 << 18, len = 0;
    char *m = malloc(cap);
    CHECK(m != NULL);
    if (!m) return;
    len += (size_t)snprintf(m + len, cap - len, "[");
    int count = 0;
    for (int i = 1; i < 60; i++)
        for (int j = 1; i + j <= 60; j++) {
            len += (size_t)snprintf(m + len, cap - len, "%s\"%.*s %.*s\"", count++ ? "," : "", i, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                    j, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        }
    snprintf(m + len, cap - len, "]");
    CHECK_OK(load_crafted("manymerges", m, "[]", &t));
    free(m);
    if (t) {
        CHECK_OK(zp_tokenizer_encode(t, "aaaaaaa", 7, 1, &ids, &n));
        CHECK(n == 1 && ids[0] == 24 + 7);
        free(ids);
        zp_tokenizer_free(t);
    }
    CHECK_FAILS(load_crafted("emptyadded", "[]", "[{\"id\":90,\"content\":\"\",\"special\":true}]", &t), ZP_ERR_FORMAT,
                "added token 90 has empty content");
    CHECK_FAILS(load_crafted("hugeid", "[]", "[{\"id\":16777216,\"content\":\"<x>\",\"special\":true}]", &t), ZP_ERR_FORMAT,
                "token id 16777216 out of range");
    /* a split regex with a byte that is not UTF-8 (found by fuzz_tokenizer: PCRE2 was told not to
     * check the pattern and read out of bounds); now PCRE2 checks it and the file is refused */
    char dir[4096], path[4200], *txt = NULL;
    snprintf(dir, sizeof dir, "%s/tok_badregex", ZP_TEST_TMP);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    size_t n_txt = 0;
    CHECK_OK(zp_read_file(ZIPAGE_SOURCE_DIR "/tests/fuzz/regress/tokenizer/crash-regex-invalid-utf8.json", &txt, &n_txt));
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(txt, 1, n_txt, f) == n_txt && fclose(f) == 0);
    free(txt);
    CHECK_FAILS(zp_tokenizer_load(dir, &t), ZP_ERR_FORMAT, "split regex does not compile at offset 6: UTF-8 error");
    /* a vocab that is an array (found by fuzz_tokenizer: its entries have no token string, a NULL read) */
    f = fopen(path, "wb");
    CHECK(f && fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": [0]}}", f) >= 0 && fclose(f) == 0);
    CHECK_FAILS(zp_tokenizer_load(dir, &t), ZP_ERR_FORMAT, "model.vocab is not an object of token strings to ids");
}

int main(void) {
    test_crafted();
    test_goldens();
    test_vectors();
    test_families();
    return zp_test_finish("test_tokenizer");
}
