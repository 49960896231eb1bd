/* test_datasets.c - every dataset opens with its documented item count and fields, subset
 * selection (--ids, --limit, stratified by LiveCodeBench difficulty), and malformed files
 * (bad JSON line, missing field, truncated file, missing file) named with file and line. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <math.h>

#include "dataset.h"
#include "item_prompt.h"
#include "tokenizer.h"
#include "passkey.h"
#include "prompts.h"
#include "test_util.h"

static void test_open_all(void) {
    const struct { const char *name; int n; int code; } want[] = {{"aime24", 30, 0}, {"aime25", 30, 0}, {"amc23", 40, 0},
                                                                   {"math500", 500, 0}, {"gsm8k", 1319, 0}, {"livecodebench", 279, 1}};
    char err[ZP_DS_ERR];
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        ds_dataset d;
        int rc = ds_open(want[i].name, ZIPAGE_SOURCE_DIR "/datasets/data", &d, err);
        if (rc) fprintf(stderr, "%s\n", err);
        CHECK(rc == 0);
        if (rc) continue;
        CHECK(d.n == want[i].n && d.is_code == want[i].code);
        int stdin_n = 0, fn_n = 0;
        for (int k = 0; k < d.n; k++) {
            CHECK(d.items[k].id && d.items[k].problem);
            if (!want[i].code) CHECK(d.items[k].answer != NULL);
            else {
                stdin_n += !strcmp(d.items[k].test_type, "stdin");
                fn_n += !strcmp(d.items[k].test_type, "functional") && d.items[k].fn_name;
                CHECK(d.items[k].tests_json && d.items[k].tests_json[0] == '[');
            }
        }
        if (want[i].code) CHECK(stdin_n == 175 && fn_n == 104); /* README: 175 AtCoder, 104 LeetCode */
        ds_free(&d);
    }
}

static void test_select(void) {
    char err[ZP_DS_ERR];
    ds_dataset d;
    CHECK(ds_open("livecodebench", ZIPAGE_SOURCE_DIR "/datasets/data", &d, err) == 0);
    int *idx, n;
    CHECK(ds_select(&d, NULL, 0, 0, &idx, &n, err) == 0 && n == 279);
    free(idx);
    CHECK(ds_select(&d, NULL, 30, 1, &idx, &n, err) == 0 && n == 30);
    int easy = 0, medium = 0, hard = 0;
    for (int i = 0; i < n; i++) {
        const char *c = d.items[idx[i]].difficulty;
        easy += !strcmp(c, "easy"); medium += !strcmp(c, "medium"); hard += !strcmp(c, "hard");
    }
    CHECK(easy == 7 && medium == 10 && hard == 13); /* 67/89/123 of 279, largest remainder */
    for (int i = 1; i < n; i++) CHECK(idx[i] > idx[i - 1]); /* file order kept */
    free(idx);
    CHECK(ds_select(&d, "lcb-abc365_b,lcb-3485", 0, 0, &idx, &n, err) == 0 && n == 2);
    free(idx);
    CHECK(ds_select(&d, "lcb-nope", 0, 0, &idx, &n, err) == -1 && strstr(err, "lcb-nope"));
    ds_free(&d);
    CHECK(ds_open("aime24", ZIPAGE_SOURCE_DIR "/datasets/data", &d, err) == 0);
    CHECK(ds_select(&d, NULL, 5, 0, &idx, &n, err) == 0 && n == 5 && idx[4] == 4);
    free(idx);
    ds_free(&d);
}

static void test_malformed(void) {
    char err[ZP_DS_ERR], path[512];
    const char *cases[][2] = {{"{\"id\":\"a\",\"problem\":\"p\",\"answer\":\"1\"}\n{\"id\":\"b\",\"problem\":", "line 2 is not a JSON object"},
                              {"{\"id\":\"a\",\"problem\":\"p\"}\n", "line 1 (a) has no \"answer\""},
                              {"\n\n", "no items"},
                              {"{\"id\":\"a\",\"problem\":\"p\",\"answer\":3.5}\n", "line 1 (a): \"answer\" must be a string"},
                              {"{\"id\":\"a\",\"problem\":\"p\",\"answer\":\"1\",\"anwser\":\"2\"}\n", "line 1 has the unknown key \"anwser\""},
                              {"{\"id\":\"a\",\"problem\":\"p\",\"answer\":\"1\"}\n{\"id\":\"b\",\"problem\":\"caf\xe9\",\"answer\":\"1\"}\n",
                               "line 2 is not valid UTF-8 (byte 25 of the line)"},
                              {"{\"id\":\"a\",\"problem\":\"\xed\xa0\x80\",\"answer\":\"1\"}\n", "line 1 is not valid UTF-8"}, /* a surrogate */
                              {"{\"id\":\"a\",\"problem\":\"\xc0\xaf\",\"answer\":\"1\"}\n", "line 1 is not valid UTF-8"}, /* overlong */
                              {"{\"id\":\"\",\"problem\":\"p\",\"answer\":\"1\"}\n", "line 1: \"id\" must be non-empty"},
                              {"{\"id\":\"a,b\",\"problem\":\"p\",\"answer\":\"1\"}\n", "line 1: \"id\" must be non-empty and without commas"},
                              {"{\"id\":\"a\",\"problem\":\"p\",\"answer\":\"1\"}\n{\"id\":\"a\",\"problem\":\"q\",\"answer\":\"2\"}\n",
                               "lines 1 and 2 have the same id \"a\""},
                              {"{\"id\":\"a\",\"problem\":\"p\",\"answer\":\"1\"} trailing\n", "line 1 has text after its JSON object"},
                              {"{\"id\":\"a\",\"problem\":\"p\\u0000hidden\",\"answer\":\"1\"}\n", "line 1 contains a NUL character"}};
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        snprintf(path, sizeof path, "%s/bad%d.jsonl", ZP_TEST_TMP, i);
        FILE *f = fopen(path, "w");
        fputs(cases[i][0], f);
        fclose(f);
        ds_dataset d;
        CHECK(ds_open(path, NULL, &d, err) == -1);
        if (!strstr(err, cases[i][1]) || !strstr(err, path)) fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err, cases[i][1]);
        CHECK(strstr(err, cases[i][1]) && strstr(err, path));
    }
    ds_dataset d;
    /* a name that is no dataset lists the names there are */
    CHECK(ds_open("gsm9k", ZIPAGE_SOURCE_DIR "/datasets/data", &d, err) == -1);
    if (!strstr(err, "unknown dataset \"gsm9k\" (known: aime24, aime25, amc23, gsm8k, livecodebench, math500, passkey, passkey-N;"))
        fprintf(stderr, "unknown dataset: %s\n", err);
    CHECK(strstr(err, "unknown dataset \"gsm9k\" (known: aime24, aime25, amc23, gsm8k, livecodebench, math500, passkey, passkey-N;"));
    snprintf(path, sizeof path, "%s/no_such.jsonl", ZP_TEST_TMP); /* a path names the file */
    CHECK(ds_open(path, NULL, &d, err) == -1 && strstr(err, "no_such.jsonl: cannot open"));
    snprintf(path, sizeof path, "%s/dir.jsonl", ZP_TEST_TMP); /* a directory (or a FIFO) is not a file */
    mkdir(path, 0755);
    CHECK(ds_open(path, NULL, &d, err) == -1 && strstr(err, "dir.jsonl"));
}

static void test_prompts(void) {
    char err[ZP_DS_ERR];
    ds_dataset d;
    CHECK(ds_open("livecodebench", ZIPAGE_SOURCE_DIR "/datasets/data", &d, err) == 0);
    int checked = 0;
    for (int i = 0; i < d.n; i++) {
        char *p = ds_user_prompt(&d, &d.items[i]);
        CHECK(p && !strncmp(p, "### Question:\n", 14) && strstr(p, d.items[i].problem) && strstr(p, "### Answer:"));
        if (!strcmp(d.items[i].test_type, "functional")) CHECK(p && strstr(p, d.items[i].starter_code) && strstr(p, "starter code"));
        else CHECK(p && strstr(p, "# YOUR CODE HERE") && strstr(p, "stdin"));
        checked++;
        free(p);
    }
    CHECK(checked == 279);
    ds_free(&d);
    CHECK(ds_open("amc23", ZIPAGE_SOURCE_DIR "/datasets/data", &d, err) == 0);
    char *p = ds_user_prompt(&d, &d.items[0]);
    CHECK(p && !strcmp(p, d.items[0].problem));
    free(p);
    ds_free(&d);
}

/* The generated passkey task: names, item count, keys and depths fixed for every machine, and
 * RULER's string_match_all (NVIDIA/RULER scripts/eval/synthetic/constants.py: a reference
 * counts when r.lower() in pred.lower(); one reference per item here). */
static void test_passkey(void) {
    char err[ZP_DS_ERR];
    ds_dataset d, e;
    CHECK(ds_open("passkey", NULL, &d, err) == 0 && !strcmp(d.name, "passkey-512") && d.context_tokens == 512 && d.n == PASSKEY_ITEMS);
    CHECK(ds_open("passkey-2048", NULL, &e, err) == 0 && e.context_tokens == 2048 && !strcmp(e.name, "passkey-2048"));
    const double depth[8] = {0, 0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875}; /* van der Corput: any first k spread */
    for (int i = 0; i < 8; i++) CHECK(d.items[i].depth == depth[i]);
    int distinct = 1;
    for (int i = 0; i < d.n; i++) {
        CHECK(strlen(d.items[i].answer) == 5 && d.items[i].answer[0] != '0' && strstr(d.items[i].problem, d.items[i].answer));
        CHECK(!strcmp(d.items[i].answer, e.items[i].answer) && d.items[i].depth == e.items[i].depth); /* the length changes no key */
        for (int j = 0; j < i; j++) distinct &= strcmp(d.items[i].answer, d.items[j].answer) != 0;
    }
    CHECK(distinct);
    CHECK(!strcmp(d.items[0].id, "pk-00") && !strcmp(d.items[63].id, "pk-63"));
    char first[8];
    snprintf(first, sizeof first, "%s", d.items[0].answer);
    ds_free(&d);
    CHECK(ds_open("passkey", NULL, &d, err) == 0 && !strcmp(d.items[0].answer, first)); /* deterministic */
    ds_free(&d);
    ds_free(&e);
    const char *bad[] = {"passkey-", "passkey-63", "passkey-12x", "passkey-9999999", "passkey--5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(ds_open(bad[i], NULL, &d, err) == -1 && strstr(err, bad[i]) && strstr(err, "64..1048576"));
    }
    const struct { const char *out, *ans; int correct; const char *extracted; } g[] = {
        {" 41190. The", "41190", 1, "41190"}, {" 4119.", "41190", 0, "4119"}, {"The key: 411900", "41190", 1, "411900"},
        {"no digits", "41190", 0, NULL}, {" 12 then 41190", "41190", 1, "12"}, {"PASS abc", "abc", 1, NULL}};
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        int correct;
        char *x;
        passkey_grade(g[i].out, g[i].ans, &correct, &x);
        CHECK(correct == g[i].correct && (g[i].extracted ? x && !strcmp(x, g[i].extracted) : !x));
        free(x);
    }
}

/* A passkey prompt with a real tokenizer (SmolLM2's): exactly N tokens, the intro first, the
 * question last, the needle with its key once, at its depth of the haystack. */
static void test_passkey_prompt(void) {
    zp_tokenizer *t;
    CHECK_OK(zp_tokenizer_load(ZIPAGE_SOURCE_DIR "/models/SmolLM2-135M-Instruct", &t));
    const int lengths[] = {128, 512, 1000};
    char err[ZP_DS_ERR];
    for (int l = 0; l < 3; l++) {
        char name[32];
        snprintf(name, sizeof name, "passkey-%d", lengths[l]);
        ds_dataset d;
        CHECK(ds_open(name, NULL, &d, err) == 0);
        for (int i = 0; i < 8; i++) {
            const ds_item *it = &d.items[i];
            zp_chat_opts co = {ZP_CHAT_LLAMA3, 0, NULL}; /* ignored: no chat template */
            char *text = NULL;
            int *ids = NULL, n = 0;
            CHECK_OK(item_prompt(t, co, &d, it, 1, &text, &ids, &n));
            CHECK(n == lengths[l]);
            const char *needle = strstr(text, it->answer);
            CHECK(!strncmp(text, PASSKEY_INTRO, strlen(PASSKEY_INTRO)) && needle && !strstr(needle + 1, it->answer));
            CHECK(strlen(text) > strlen(PASSKEY_QUESTION) && !strcmp(text + strlen(text) - strlen(PASSKEY_QUESTION), PASSKEY_QUESTION));
            /* the needle's place in characters: the depth of the haystack, within a sentence's length */
            const double hay = (double)(strlen(text) - strlen(PASSKEY_INTRO) - strlen(PASSKEY_QUESTION) - strlen(it->problem));
            const double at = (double)(needle - text) - strlen(PASSKEY_INTRO) - 40; /* the key sits ~40 characters into the needle */
            if (fabs(at - it->depth * hay) > 40) fprintf(stderr, "%s %s: needle at %.0f of %.0f, depth %.3f\n", name, it->id, at, hay, it->depth);
            CHECK(fabs(at - it->depth * hay) <= 40);
            free(text);
            free(ids);
        }
        ds_free(&d);
    }
    zp_tokenizer_free(t);
}

int main(void) {
    test_passkey();
    test_passkey_prompt();
    test_prompts();
    test_open_all();
    test_select();
    test_malformed();
    return zp_test_finish("test_datasets");
}
