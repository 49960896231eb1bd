/* test_lcb_grade.c - LiveCodeBench grading against LiveCodeBench's own runner.
 *
 * argv[1]: tests/data/lcb/official_sample.jsonl after tools/lcb/import_lcb.py (CTest runs the
 * importer first). Checks, in order:
 *   1. Decimal token equality against Python's decimal module (tests/data/lcb/decimal_pairs.jsonl);
 *   2. the imported file: private tests decoded (pickled, plain JSON, and a pickle over 64 KiB);
 *   3. every case of tests/data/lcb/cases.jsonl graded in the sandbox with a 1 s limit, against the
 *      verdicts lcb_runner gave (tests/data/lcb/lcb_runner.jsonl, tests/reference/lcb_oracle.py):
 *      pass exactly when it passed, otherwise the same first failing test and the same kind
 *      (-2 wrong answer, -3 time limit, -4 error). A case marked known_difference must differ.
 * Part 3 needs bubblewrap: without it the test reports skipped (77) after parts 1 and 2.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "code_grade.h"
#include "lcb_compare.h"
#include "test_util.h"

/* Calls fn on each JSON object line of path; the number of lines. */
static int each_line(const char *path, void (*fn)(const cJSON *, void *), void *ctx) {
    char *txt = NULL;
    CHECK_OK(zp_read_file(path, &txt, NULL));
    int n = 0;
    for (char *p = txt, *nl; p && *p; p = nl ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        if (nl) *nl = 0;
        cJSON *o = cJSON_Parse(p);
        CHECK(cJSON_IsObject(o));
        if (o) fn(o, ctx), n++;
        cJSON_Delete(o);
    }
    free(txt);
    return n;
}

static void check_pair(const cJSON *o, void *ctx) {
    const char *a = cJSON_GetObjectItem(o, "a")->valuestring, *b = cJSON_GetObjectItem(o, "b")->valuestring;
    const int want = cJSON_IsTrue(cJSON_GetObjectItem(o, "equal")), got = lcb_decimal_equal(a, strlen(a), b, strlen(b));
    if (got != want) fprintf(stderr, "Decimal(%s) == Decimal(%s): Python %d, harness %d\n", a, b, want, got);
    CHECK(got == want);
    (*(int *)ctx)++;
}

static void check_stdout_rules(void) {
    CHECK(lcb_stdout_matches("\n\n  3  \n\n\n", "3\n"));
    CHECK(lcb_stdout_matches("1.50 2\n", "1.5 2.0"));
    CHECK(lcb_stdout_matches("1   2\n", "1 2"));        /* numeric tokens: spacing is free */
    CHECK(!lcb_stdout_matches("a   b\n", "a b"));       /* text: the stripped lines must be equal */
    CHECK(!lcb_stdout_matches("1\n\n2\n", "1\n2\n"));   /* a blank line inside counts */
    CHECK(!lcb_stdout_matches("Yes\n", "yes\n"));
    CHECK(lcb_stdout_matches("\xc2\xa0" "3\xe3\x80\x80\r\n", "3")); /* U+00A0, U+3000 and CR are Python whitespace */
    CHECK(!lcb_stdout_matches("0.3333333\n", "0.33333333\n"));
    CHECK(lcb_stdout_matches("", "\n"));
    CHECK(!lcb_stdout_matches("", "0"));
}

typedef struct {
    const ds_dataset *ds;
    cJSON *golden; /* name -> results */
    int graded, agree, differ_known;
} case_ctx;

static const ds_item *find_item(const ds_dataset *ds, const char *qid) {
    char id[128];
    snprintf(id, sizeof id, "lcb-%s", qid);
    for (int i = 0; i < ds->n; i++)
        if (!strcmp(ds->items[i].id, id)) return &ds->items[i];
    return NULL;
}

/* 1 when the harness's verdict is the one lcb_runner's results describe. */
static int same_verdict(const code_result *r, const cJSON *res) {
    int n = cJSON_GetArraySize(res), lead = 0;
    while (lead < n && cJSON_IsTrue(cJSON_GetArrayItem(res, lead))) lead++;
    if (lead == n) return r->status == CODE_PASS && n == r->total;
    if (r->status == CODE_PASS || r->passed != lead) return 0;
    const cJSON *last = cJSON_GetArrayItem(res, lead);
    const int code = cJSON_IsFalse(last) ? -2 : last->valueint;
    if (code == -2) return r->status == CODE_FAIL;
    if (code == -3) return r->status == CODE_TIMEOUT;
    return code == -4 && (r->status == CODE_RUNTIME_ERROR || r->status == CODE_NO_CODE);
}

static void grade_case(const cJSON *o, void *vctx) {
    case_ctx *c = vctx;
    const char *name = cJSON_GetObjectItem(o, "name")->valuestring, *qid = cJSON_GetObjectItem(o, "question_id")->valuestring;
    const cJSON *known = cJSON_GetObjectItem(o, "known_difference"), *res = cJSON_GetObjectItem(c->golden, name);
    const ds_item *it = find_item(c->ds, qid);
    CHECK(it != NULL && cJSON_IsArray(res));
    if (!it || !res) return;
    code_opts opt = code_opts_default();
    opt.timeout_ms = 1000; /* the oracle's limit (lcb_oracle.py) */
    code_result r;
    char err[ZP_DS_ERR];
    const int rc = code_grade(cJSON_GetObjectItem(o, "output")->valuestring, it, &opt, &r, err);
    if (rc) fprintf(stderr, "%s: harness error: %s\n", name, err);
    CHECK(rc == 0);
    const int same = rc == 0 && same_verdict(&r, res);
    char *rs = cJSON_PrintUnformatted(res);
    printf("%-26s lcb_runner %-28s harness %-13s %d/%d %s%s\n", name, rs, code_status_name(r.status), r.passed, r.total,
           same ? "same" : "DIFFERENT", known ? " (known difference)" : "");
    free(rs);
    if (known) {
        CHECK(!same); /* if this starts to agree, the fixture's note is stale */
        c->differ_known++;
    } else {
        CHECK(same);
        c->agree += same;
    }
    c->graded++;
}

static void add_golden(const cJSON *o, void *ctx) {
    cJSON_AddItemToObject((cJSON *)ctx, cJSON_GetObjectItem(o, "name")->valuestring,
                          cJSON_Duplicate(cJSON_GetObjectItem(o, "results"), 1));
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: test_lcb_grade IMPORTED.jsonl\n");
        return 2;
    }
    int pairs = 0;
    each_line(ZP_TEST_DATA "/lcb/decimal_pairs.jsonl", check_pair, &pairs);
    printf("Decimal equality: %d token pairs checked against Python's decimal module\n", pairs);
    CHECK(pairs == 54 * 54);
    check_stdout_rules();

    ds_dataset ds;
    char err[ZP_DS_ERR];
    const int rc = ds_open(argv[1], NULL, &ds, err);
    if (rc) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    if (rc) return zp_test_finish("test_lcb_grade");
    CHECK(ds.is_code && ds.n == 6 && ds.n_private == 6);
    CHECK(!strcmp(code_grader_label(&ds), "lcb-public+private"));
    const ds_item *c = find_item(&ds, "zzz001_c"), *a = find_item(&ds, "9001"), *b = find_item(&ds, "zzz001_b");
    CHECK(c && c->private_tests_json && strlen(c->private_tests_json) > 65536); /* a pickle without FRAME */
    CHECK(a && a->private_tests_json &&
          !strcmp(a->private_tests_json, "[{\"input\":\"[]\\n-1\",\"output\":\"-1\"},{\"input\":\"[5]\\n0\",\"output\":\"5\"}]"));
    CHECK(b && b->private_tests_json && !strcmp(b->private_tests_json, "[{\"input\":\"1\\n1\\n\",\"output\":\"0.5\\nDone\\n\"}]")); /* plain JSON */
    CHECK(a && !strcmp(a->test_type, "functional") && !strcmp(a->fn_name, "addAll"));

    if (!code_sandbox_available()) {
        printf("test_lcb_grade: grading against lcb_runner skipped (bwrap not installed; `make deps` installs bubblewrap)\n");
        ds_free(&ds);
        return zp_test_failures ? zp_test_finish("test_lcb_grade") : 77;
    }
    case_ctx ctx = {&ds, cJSON_CreateObject(), 0, 0, 0};
    each_line(ZP_TEST_DATA "/lcb/lcb_runner.jsonl", add_golden, ctx.golden);
    each_line(ZP_TEST_DATA "/lcb/cases.jsonl", grade_case, &ctx);
    printf("lcb_runner agreement: %d/%d cases the same verdict, %d known difference(s)\n", ctx.agree, ctx.graded - ctx.differ_known,
           ctx.differ_known);
    CHECK(ctx.graded == cJSON_GetArraySize(ctx.golden) && ctx.graded >= 30);
    cJSON_Delete(ctx.golden);
    ds_free(&ds);
    return zp_test_finish("test_lcb_grade");
}
