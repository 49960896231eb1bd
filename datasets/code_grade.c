/* code_grade.c - extraction, the code directory (written once, before any untrusted code
 * runs), the stdin and functional test drivers and their comparisons. The sandbox itself is
 * sandbox.c. */
#define _GNU_SOURCE
#include "code_grade.h"

#include <cjson/cJSON.h> /* public tests */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *status_names[] = {"pass", "fail", "no_code", "timeout", "runtime_error"};
const char *code_status_name(code_status s) { return status_names[s]; }

code_opts code_opts_default(void) {
    code_opts o = {6000, 2048, 64, 64, 0, NULL};
    return o;
}

char *code_extract_python(const char *text) {
    const char *answer = text, *p = text;
    while ((p = strstr(p, "</think>")) != NULL) answer = (p += 8);
    const char *best = NULL, *best_end = NULL;
    for (p = answer; (p = strstr(p, "```")) != NULL;) {
        const char *body = strchr(p + 3, '\n');
        if (!body) break;
        const char *lang = p + 3;
        int ok = body == lang || !strncmp(lang, "python", 6) || !strncmp(lang, "py\n", 3) || !strncmp(lang, "Python", 6);
        const char *end = strstr(body + 1, "```");
        if (!end) break; /* unterminated (truncated output) */
        if (ok) { best = body + 1; best_end = end; }
        p = end + 3;
    }
    if (!best) return NULL;
    char *r = malloc((size_t)(best_end - best) + 1);
    if (!r) return NULL;
    memcpy(r, best, (size_t)(best_end - best));
    r[best_end - best] = 0;
    return r;
}

int code_sandbox_available(void) { return sbx_bwrap_path() != NULL; }

/* Creates name in the directory dirfd (never through a link, never over an existing file). */
static int write_new_file(int dirfd, const char *name, const char *text) {
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    size_t n = strlen(text), done = 0;
    while (done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { close(fd); return -1; }
        done += (size_t)w;
    }
    return close(fd);
}

/* Lines with trailing whitespace stripped, trailing blank lines dropped, equal? */
static int same_output(const char *a, const char *b) {
    for (;;) {
        while (*a == '\r') a++;
        while (*b == '\r') b++;
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
        while (la && (a[la - 1] == ' ' || a[la - 1] == '\r' || a[la - 1] == '\t')) la--;
        while (lb && (b[lb - 1] == ' ' || b[lb - 1] == '\r' || b[lb - 1] == '\t')) lb--;
        if (la != lb || memcmp(a, b, la)) return 0;
        a = ea ? ea + 1 : a + strlen(a);
        b = eb ? eb + 1 : b + strlen(b);
        int rest_a = strspn(a, " \t\r\n") == strlen(a), rest_b = strspn(b, " \t\r\n") == strlen(b);
        if (rest_a && rest_b) return 1;
        if (rest_a || rest_b) return 0;
    }
}


static const char *PRELUDE = "import sys, os, math, json, re, heapq, bisect, itertools, functools, collections, string\n"
                             "from typing import *\nfrom collections import *\nfrom functools import *\nfrom itertools import *\n"
                             "from heapq import *\nfrom bisect import *\nfrom math import *\nsys.setrecursionlimit(1000000)\n";

/* The functional driver: reads the arguments before the solution runs, calls
 * Solution().<argv[1]>(*args) and writes the JSON value to fd 3 (opened before the import).
 * The expected value never enters the sandbox: the harness compares (json_py_equal). */
static const char *DRIVER = "import json, os, sys\n"
                            "_result = os.fdopen(3, 'w')\n"
                            "_args = [json.loads(l) for l in sys.stdin.read().split('\\n') if l.strip()]\n"
                            "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
                            "import solution\n"
                            "_res = getattr(solution.Solution(), sys.argv[1])(*_args)\n"
                            "_result.write(json.dumps(list(_res) if isinstance(_res, tuple) else _res))\n"
                            "_result.close()\n";

/* Writes solution.py and driver.py into a fresh directory, then makes it readable (not
 * writable) by the sandbox uid. Nothing is written into it after this. */
static int prepare(const char *dir, const char *code) {
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0) return -1;
    size_t n = strlen(PRELUDE) + strlen(code) + 2;
    char *sol = malloc(n);
    int rc = -1;
    if (sol) {
        snprintf(sol, n, "%s%s\n", PRELUDE, code);
        rc = write_new_file(dirfd, "solution.py", sol) || write_new_file(dirfd, "driver.py", DRIVER) || fchmod(dirfd, 0755);
    }
    free(sol);
    close(dirfd);
    return rc ? -1 : 0;
}

static void remove_dir(const char *dir) {
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd >= 0) {
        unlinkat(dirfd, "solution.py", 0);
        unlinkat(dirfd, "driver.py", 0);
        close(dirfd);
    }
    rmdir(dir);
}

/* Python's == on two JSON values: bools are the numbers 0 and 1, ints and floats compare by
 * value (integers beyond 2^53 only as doubles), lists in order, dicts by key. */
static int json_py_equal(const cJSON *a, const cJSON *b) {
    int an = cJSON_IsNumber(a) || cJSON_IsBool(a), bn = cJSON_IsNumber(b) || cJSON_IsBool(b);
    if (an || bn) {
        if (!an || !bn) return 0;
        double x = cJSON_IsBool(a) ? cJSON_IsTrue(a) : a->valuedouble, y = cJSON_IsBool(b) ? cJSON_IsTrue(b) : b->valuedouble;
        return x == y;
    }
    if (cJSON_IsNull(a) || cJSON_IsNull(b)) return cJSON_IsNull(a) && cJSON_IsNull(b);
    if (cJSON_IsString(a) || cJSON_IsString(b))
        return cJSON_IsString(a) && cJSON_IsString(b) && !strcmp(a->valuestring, b->valuestring);
    int arr = cJSON_IsArray(a);
    if (arr != cJSON_IsArray(b) || cJSON_IsObject(a) != cJSON_IsObject(b)) return 0;
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return 0;
    for (const cJSON *x = a->child, *y = b->child; x; x = x->next, y = arr ? y->next : NULL) {
        const cJSON *other = arr ? y : cJSON_GetObjectItemCaseSensitive(b, x->string);
        if (!other || !json_py_equal(x, other)) return 0;
    }
    return 1;
}

/* 1 when the driver's result channel holds a JSON value equal to the expected output. */
static int functional_ok(const sbx_outcome *so, const char *expected) {
    cJSON *got = so->result ? cJSON_Parse(so->result) : NULL, *want = cJSON_Parse(expected);
    int ok = got && want && json_py_equal(got, want);
    cJSON_Delete(got);
    cJSON_Delete(want);
    return ok;
}

/* One test: 0 with *status set, or -1 (harness error in err). */
static int run_test(const char *dir, const ds_item *item, const char *in, const char *expected, const code_opts *o,
                    code_status *status, int *exit_code, char *err) {
    int functional = strcmp(item->test_type, "stdin") != 0;
    sbx_job j = {dir, functional ? "driver.py" : "solution.py", functional ? item->fn_name : NULL, in, strlen(in), functional};
    sbx_outcome so;
    if (sbx_run(o, &j, &so, err, ZP_DS_ERR) != 0) return -1;
    *exit_code = so.timed_out ? -2 : so.exit_code;
    if (so.timed_out) *status = CODE_TIMEOUT;
    else if (so.exit_code != 0 || so.output_limit) *status = CODE_RUNTIME_ERROR;
    else *status = (functional ? functional_ok(&so, expected) : same_output(so.out, expected)) ? CODE_PASS : CODE_FAIL;
    sbx_outcome_free(&so);
    return 0;
}

static int run_tests(const char *dir, const ds_item *item, const cJSON *tests, const code_opts *o, code_result *r, char *err) {
    const cJSON *t;
    cJSON_ArrayForEach(t, tests) {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(t, "input"), *out = cJSON_GetObjectItemCaseSensitive(t, "output");
        r->total++;
        code_status st = CODE_FAIL;
        int exit_code = 0;
        if (cJSON_IsString(in) && cJSON_IsString(out) &&
            run_test(dir, item, in->valuestring, out->valuestring, o, &st, &exit_code, err) != 0)
            return -1;
        if (st == CODE_PASS) r->passed++;
        else if (r->status == CODE_PASS) {
            r->status = st;
            snprintf(r->detail, sizeof r->detail, "test %d: %s (exit %d)", r->total, code_status_name(st), exit_code);
        }
    }
    return 0;
}

int code_grade(const char *output, const ds_item *item, const code_opts *o, code_result *r, char *err) {
    memset(r, 0, sizeof *r);
    if (!o->unsafe_no_sandbox && !code_sandbox_available()) {
        snprintf(err, ZP_DS_ERR, "code grading needs bubblewrap (apt-get install bubblewrap) or --unsafe-no-sandbox");
        return -1;
    }
    if (strcmp(item->test_type, "stdin") != 0 && !item->fn_name) {
        snprintf(err, ZP_DS_ERR, "%.200s: a functional problem without fn_name", item->id);
        return -1;
    }
    cJSON *tests = cJSON_Parse(item->tests_json ? item->tests_json : "");
    if (!cJSON_IsArray(tests)) {
        cJSON_Delete(tests);
        snprintf(err, ZP_DS_ERR, "%.200s: public tests are not a JSON array", item->id);
        return -1;
    }
    char *code = code_extract_python(output);
    if (!code) {
        r->status = CODE_NO_CODE;
        r->total = cJSON_GetArraySize(tests);
        snprintf(r->detail, sizeof r->detail, "no fenced python block");
        cJSON_Delete(tests);
        return 0;
    }
    char dir[] = "/tmp/zipage-code-XXXXXX";
    int rc = -1;
    if (!mkdtemp(dir)) snprintf(err, ZP_DS_ERR, "code grading: cannot create a temporary directory: %s", strerror(errno));
    else {
        if (prepare(dir, code) != 0) snprintf(err, ZP_DS_ERR, "code grading: cannot write %s: %s", dir, strerror(errno));
        else rc = run_tests(dir, item, tests, o, r, err);
        remove_dir(dir);
    }
    free(code);
    cJSON_Delete(tests);
    return rc;
}
