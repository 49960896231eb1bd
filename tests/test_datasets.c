/* test_datasets.c - every dataset opens with its documented item count and fields, subset
 * selection (--ids, --limit, stratified by LiveCodeBench difficulty), and malformed files
 * (bad JSON line, missing field, truncated file, missing file) named with file and line. */
#include <string.h>
#include <sys/stat.h>

#include "dataset.h"
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
    CHECK(ds_open("aime26", ZIPAGE_SOURCE_DIR "/datasets/data", &d, err) == -1 && strstr(err, "aime26.jsonl: cannot open"));
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

int main(void) {
    test_prompts();
    test_open_all();
    test_select();
    test_malformed();
    return zp_test_finish("test_datasets");
}
