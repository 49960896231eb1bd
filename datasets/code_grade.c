/* code_grade.c - extraction, the code directory (written once, before any untrusted code
 * runs), the stdin and functional test drivers and their comparisons. The sandbox itself is
 * sandbox.c. */
#define _GNU_SOURCE
#include "code_grade.h"

#include <dirent.h> /* the sweep of dead graders' folders */
#include <signal.h> /* kill(pid, 0) */

#include "lcb_compare.h"

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
const char *code_grader_label(const ds_dataset *d) { return d->n_private > 0 ? "lcb-public+private" : "lcb-public"; }

code_opts code_opts_default(void) {
    code_opts o = {6000, 2048, 64, 64, 0, NULL};
    return o;
}

char *code_extract_python(const char *text) {
    const char *answer = text, *p = text;
    while ((p = strstr(p, "</think>")) != NULL) answer = (p += 8);
    /* the lines strictly between the last two lines that contain ``` */
    const char *fence[2] = {NULL, NULL}; /* starts of the last two such lines */
    for (const char *line = answer;;) {
        const char *nl = strchr(line, '\n');
        const size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *f = strstr(line, "```");
        if (f && f < line + len) { fence[0] = fence[1]; fence[1] = line; }
        if (!nl) break;
        line = nl + 1;
    }
    if (!fence[0]) return NULL;
    const char *body = strchr(fence[0], '\n') + 1, *end = fence[1];
    const size_t n = end > body ? (size_t)(end - body) - 1 : 0; /* without the newline before the closing fence line */
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, body, n);
    r[n] = 0;
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

/* What LiveCodeBench puts before every solution (lcb_runner/evaluation/testing_util.py
 * import_string: these modules star-imported then imported, recursion limit 50000), and the
 * int-to-text digit limit its evaluation sets (compute_code_generation_metrics.py). */
static const char *PRELUDE = "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
                             "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
                             "from random import *\nfrom statistics import *\nfrom itertools import *\nfrom functools import *\n"
                             "from operator import *\nfrom io import *\nfrom sys import *\nfrom json import *\n"
                             "from builtins import *\nfrom typing import *\n"
                             "import string, re, datetime, collections, heapq, bisect, copy, math, random, statistics, itertools, "
                             "functools, operator, io, sys, json\n"
                             "sys.setrecursionlimit(50000)\n"
                             "getattr(sys, 'set_int_max_str_digits', lambda n: None)(50000)\n";

/* The stdin runner: the solution as __main__, a SystemExit ending it normally with the output
 * printed so far (LiveCodeBench catches SystemExit), any other exception a runtime error. */
static const char *RUN_STDIN = "import os, sys\n"
                               "_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'solution.py')\n"
                               "_code = compile(open(_path).read(), _path, 'exec')\n"
                               "try:\n"
                               "    exec(_code, {'__name__': '__main__', '__builtins__': __builtins__})\n"
                               "except SystemExit:\n"
                               "    pass\n"
                               "sys.stdout.flush()\n";

/* The functional driver: reads the arguments (one JSON value per input line, every line, as
 * LiveCodeBench does) before the solution runs, calls Solution().<argv[1]>(*args) (or the
 * module's function when the text has no "class Solution", as LiveCodeBench does) and writes
 * the JSON value to fd 3 (opened before the import). A tuple result becomes a list (only at the
 * top, as in LiveCodeBench; a nested tuple is written as an object that equals no expected
 * value, because LiveCodeBench's == fails on it). The expected value never enters the
 * sandbox: the harness compares (json_py_equal). */
static const char *DRIVER = "import json, os, sys\n"
                            "_result = os.fdopen(3, 'w')\n"
                            "_args = [json.loads(l) for l in sys.stdin.read().split('\\n')]\n"
                            "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
                            "import solution\n"
                            "_src = open(solution.__file__).read()\n"
                            "_obj = solution.Solution() if 'class Solution' in _src else solution\n"
                            "_res = getattr(_obj, sys.argv[1])(*_args)\n"
                            "def _plain(x):\n"
                            "    if isinstance(x, tuple): return {'__zipage_tuple__': [_plain(y) for y in x]}\n"
                            "    if isinstance(x, list): return [_plain(y) for y in x]\n"
                            "    if isinstance(x, dict): return {k: _plain(v) for k, v in x.items()}\n"
                            "    return x\n"
                            "_result.write(json.dumps(_plain(list(_res) if isinstance(_res, tuple) else _res)))\n"
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
        rc = write_new_file(dirfd, "solution.py", sol) || write_new_file(dirfd, "driver.py", DRIVER) ||
             write_new_file(dirfd, "run_stdin.py", RUN_STDIN) || fchmod(dirfd, 0755);
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
        unlinkat(dirfd, "run_stdin.py", 0);
        close(dirfd);
    }
    rmdir(dir);
}

/* The code folders of graders that died before removing theirs (kill -9): /tmp/zipage-code-PID-*
 * whose PID is gone. Swept once per process, at its first grade; only the harness's own files
 * are removed (remove_dir), so a folder that holds anything else stays. */
static void sweep_dead_dirs(void) {
    static int swept;
    if (swept) return;
    swept = 1;
    DIR *d = opendir("/tmp");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        long pid;
        char path[300];
        if (sscanf(e->d_name, "zipage-code-%ld-", &pid) != 1 || pid <= 0) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to ask): its folder */
        snprintf(path, sizeof path, "/tmp/%s", e->d_name);
        remove_dir(path);
    }
    if (d) closedir(d);
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

/* 1 when an object anywhere in v has a key twice. Python's json.dumps never writes one: a
 * result that has one was written by hand, and cJSON's lookup would see only the first. */
static int has_duplicate_key(const cJSON *v) {
    for (const cJSON *x = v ? v->child : NULL; x; x = x->next) {
        if (cJSON_IsObject(v))
            for (const cJSON *y = x->next; y; y = y->next)
                if (!strcmp(x->string, y->string)) return 1;
        if (has_duplicate_key(x)) return 1;
    }
    return 0;
}

/* The result channel's value, parsed strictly: one JSON value and nothing after it (but
 * whitespace), no duplicate key; NULL otherwise (the sample fails). */
static cJSON *parse_result(const char *text) {
    cJSON *v = text ? cJSON_ParseWithOpts(text, NULL, 1) : NULL;
    if (v && has_duplicate_key(v)) {
        cJSON_Delete(v);
        return NULL;
    }
    return v;
}

/* 1 when the driver's result channel holds a JSON value equal to the expected output. */
static int functional_ok(const sbx_outcome *so, const char *expected) {
    cJSON *got = parse_result(so->result), *want = cJSON_Parse(expected);
    int ok = got && want && json_py_equal(got, want);
    cJSON_Delete(got);
    cJSON_Delete(want);
    return ok;
}

/* One test: 0 with *status set, or -1 (harness error in err). */
static int run_test(const char *dir, const ds_item *item, const char *in, const char *expected, const code_opts *o,
                    code_status *status, int *exit_code, char *err) {
    int functional = strcmp(item->test_type, "stdin") != 0;
    sbx_job j = {dir, functional ? "driver.py" : "run_stdin.py", functional ? item->fn_name : NULL, in, strlen(in), functional};
    sbx_outcome so;
    if (sbx_run(o, &j, &so, err, ZP_DS_ERR) != 0) return -1;
    *exit_code = so.timed_out ? -2 : so.exit_code;
    if (so.timed_out) *status = CODE_TIMEOUT;
    else if (so.exit_code != 0 || so.output_limit) *status = CODE_RUNTIME_ERROR;
    else *status = (functional ? functional_ok(&so, expected) : lcb_stdout_matches(so.out, expected)) ? CODE_PASS : CODE_FAIL;
    sbx_outcome_free(&so);
    return 0;
}

/* The tests of one array in order, up to the first that does not pass (LiveCodeBench stops
 * there too); r->passed counts the passes, the first failure sets status and detail. */
static int run_tests(const char *dir, const ds_item *item, const cJSON *tests, const char *set, const code_opts *o, code_result *r,
                     char *err) {
    const cJSON *t;
    int k = 0;
    cJSON_ArrayForEach(t, tests) {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(t, "input"), *out = cJSON_GetObjectItemCaseSensitive(t, "output");
        k++;
        code_status st = CODE_FAIL;
        int exit_code = 0;
        if (cJSON_IsString(in) && cJSON_IsString(out) &&
            run_test(dir, item, in->valuestring, out->valuestring, o, &st, &exit_code, err) != 0)
            return -1;
        if (st != CODE_PASS) {
            r->status = st;
            snprintf(r->detail, sizeof r->detail, "%s test %d: %s (exit %d)", set, k, code_status_name(st), exit_code);
            return 0;
        }
        r->passed++;
    }
    return 0;
}

/* The JSON array text of a test set (NULL or "" for none: an empty array), parsed. */
static cJSON *parse_tests(const char *json, const ds_item *item, const char *set, char *err) {
    cJSON *tests = cJSON_Parse(json && *json ? json : "[]");
    if (!cJSON_IsArray(tests)) {
        cJSON_Delete(tests);
        snprintf(err, ZP_DS_ERR, "%.200s: %s tests are not a JSON array", item->id, set);
        return NULL;
    }
    return tests;
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
    cJSON *pub = parse_tests(item->tests_json, item, "public", err), *priv = pub ? parse_tests(item->private_tests_json, item, "private", err) : NULL;
    if (!pub || !priv) {
        cJSON_Delete(pub);
        return -1;
    }
    r->total = cJSON_GetArraySize(pub) + cJSON_GetArraySize(priv);
    char *code = code_extract_python(output);
    int rc = -1;
    char dir[64]; /* the pid in the name: a later grader sweeps it if this one dies first */
    snprintf(dir, sizeof dir, "/tmp/zipage-code-%ld-XXXXXX", (long)getpid());
    sweep_dead_dirs();
    if (code && code[strspn(code, " \t\r\n")] == 0) { /* LiveCodeBench: empty code does not compile */
        free(code);
        code = NULL;
    }
    if (!code) {
        r->status = CODE_NO_CODE;
        snprintf(r->detail, sizeof r->detail, "no code between two ``` lines");
        rc = 0;
    } else if (!mkdtemp(dir)) {
        snprintf(err, ZP_DS_ERR, "code grading: cannot create a temporary directory: %s", strerror(errno));
    } else {
        if (prepare(dir, code) != 0) snprintf(err, ZP_DS_ERR, "code grading: cannot write %s: %s", dir, strerror(errno));
        else if ((rc = run_tests(dir, item, pub, "public", o, r, err)) == 0 && r->status == CODE_PASS)
            rc = run_tests(dir, item, priv, "private", o, r, err);
        remove_dir(dir);
    }
    free(code);
    cJSON_Delete(pub);
    cJSON_Delete(priv);
    return rc;
}
