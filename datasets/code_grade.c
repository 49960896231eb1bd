/* code_grade.c - extraction, the sandboxed runner (fork + rlimits + bwrap, wall-clock kill),
 * stdin and functional test drivers. */
#define _GNU_SOURCE
#include "code_grade.h"

#include <cjson/cJSON.h> /* public tests */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *status_names[] = {"pass", "fail", "no_code", "timeout", "runtime_error"};
const char *code_status_name(code_status s) { return status_names[s]; }

code_opts code_opts_default(void) {
    code_opts o = {6000, 2048, 0, "python3"};
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

int code_sandbox_available(void) {
    const char *path = getenv("PATH");
    char buf[4096];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/bwrap", (int)n, p);
        if (access(buf, X_OK) == 0) return 1;
        p += n + (e ? 1 : 0);
    }
    return 0;
}

static int write_file(const char *dir, const char *name, const char *text) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Child side: limits, an unprivileged user, stdin from a file, then bwrap (or python). */
static void child_exec(const char *dir, const char *script, const char *input, const code_opts *o, int out_fd) {
    setsid();
    char in_path[4200];
    snprintf(in_path, sizeof in_path, "%s/%s", dir, input);
    int in = open(in_path, O_RDONLY), null = open("/dev/null", O_WRONLY);
    dup2(in, 0);
    dup2(out_fd, 1);
    dup2(null, 2);
    struct rlimit cpu = {(rlim_t)(o->timeout_ms / 1000 + 2), (rlim_t)(o->timeout_ms / 1000 + 3)};
    struct rlimit as = {(rlim_t)o->mem_mb << 20, (rlim_t)o->mem_mb << 20}, fsize = {16 << 20, 16 << 20}, nproc = {64, 64};
    setrlimit(RLIMIT_CPU, &cpu);
    setrlimit(RLIMIT_FSIZE, &fsize);
    if (getuid() == 0) { /* process limits count per real user: run as nobody */
        setgroups(0, NULL);
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(126);
    }
    setrlimit(RLIMIT_NPROC, &nproc);
    setrlimit(RLIMIT_AS, &as);
    if (o->unsafe_no_sandbox) {
        if (chdir(dir) != 0) _exit(126);
        execlp(o->python, o->python, script, (char *)NULL);
        _exit(127);
    }
    char script_path[4200];
    snprintf(script_path, sizeof script_path, "%s/%s", dir, script);
    execlp("bwrap", "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", dir, dir,
           "--chdir", dir, "--unshare-all", "--die-with-parent", "--new-session", o->python, script_path, (char *)NULL);
    _exit(127);
}

/* Processes of the sandbox user (65534) still alive. */
static int count_sandbox_procs(void) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300];
        struct stat sb;
        snprintf(path, sizeof path, "/proc/%s", e->d_name);
        if (stat(path, &sb) == 0 && sb.st_uid == 65534) n++;
    }
    closedir(d);
    return n;
}

/* After a killed run, the kernel tears the sandbox's pid namespace down asynchronously: wait
 * (up to 3 s) so that its processes do not count against the next test's process limit. */
static void settle(int baseline) {
    double end = now_ms() + 3000;
    while (getuid() == 0 && count_sandbox_procs() > baseline && now_ms() < end) usleep(5000);
}

/* Runs `python script < input` in the sandbox; stdout into *out (at most 1 MiB). Returns the
 * exit status (0 ok), -2 on timeout, -1 on a harness error. */
static int run_sandboxed(const char *dir, const char *script, const char *input, const code_opts *o, char **out) {
    int pipefd[2];
    if (pipe(pipefd) != 0) return -1;
    const int baseline = getuid() == 0 ? count_sandbox_procs() : 0;
    pid_t pid = fork();
    if (pid < 0) { close(pipefd[0]); close(pipefd[1]); return -1; }
    if (pid == 0) { close(pipefd[0]); child_exec(dir, script, input, o, pipefd[1]); }
    close(pipefd[1]);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    double deadline = now_ms() + o->timeout_ms;
    int timed_out = 0;
    for (;;) {
        int left = (int)(deadline - now_ms());
        if (left <= 0) { timed_out = 1; break; }
        struct pollfd pfd = {pipefd[0], POLLIN, 0};
        int pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) { timed_out = pr == 0; break; }
        ssize_t got = read(pipefd[0], buf + n, cap - n);
        if (got <= 0) break;
        n += (size_t)got;
        if (n == cap) break; /* output limit */
    }
    close(pipefd[0]);
    if (n == cap) kill(-pid, SIGKILL), kill(pid, SIGKILL); /* output limit: stop it */
    int st = 0;
    for (;;) { /* stdout may close before the process ends: keep the deadline */
        if (timed_out) kill(-pid, SIGKILL), kill(pid, SIGKILL);
        pid_t w = waitpid(pid, &st, timed_out ? 0 : WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) break;
        if (!timed_out && now_ms() >= deadline) timed_out = 1;
        else if (!timed_out) usleep(2000);
    }
    buf[n] = 0;
    *out = buf;
    if (timed_out || n == cap) settle(baseline);
    if (timed_out) return -2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
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

static int prepare(const char *dir, const char *code, const ds_item *item) {
    size_t n = strlen(PRELUDE) + strlen(code) + 2;
    char *sol = malloc(n);
    if (!sol) return -1;
    snprintf(sol, n, "%s%s\n", PRELUDE, code);
    int rc = write_file(dir, "solution.py", sol);
    free(sol);
    if (rc || !item->fn_name || !strcmp(item->test_type, "stdin")) return rc;
    char driver[1024];
    snprintf(driver, sizeof driver,
             "import json, sys\nsys.path.insert(0, '.')\nfrom solution import *\n"
             "args = [json.loads(l) for l in sys.stdin.read().split('\\n') if l.strip()]\n"
             "res = getattr(Solution(), %s)(*args)\n"
             "expected = json.loads(open('expected.json').read())\n"
             "sys.exit(0 if json.loads(json.dumps(res)) == expected else 3)\n", "json.loads(open('fn.json').read())");
    char fn[300];
    snprintf(fn, sizeof fn, "\"%s\"", item->fn_name);
    return write_file(dir, "driver.py", driver) || write_file(dir, "fn.json", fn);
}

static void run_tests(const char *dir, const ds_item *item, const cJSON *tests, const code_opts *o, code_result *r) {
    int functional = strcmp(item->test_type, "stdin") != 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tests) {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(t, "input"), *out = cJSON_GetObjectItemCaseSensitive(t, "output");
        r->total++;
        if (!cJSON_IsString(in) || !cJSON_IsString(out)) { r->status = CODE_FAIL; continue; }
        write_file(dir, "input.txt", in->valuestring);
        if (functional) write_file(dir, "expected.json", out->valuestring);
        char *got = NULL;
        int rc = run_sandboxed(dir, functional ? "driver.py" : "solution.py", "input.txt", o, &got);
        int ok = rc == 0 && (functional || same_output(got ? got : "", out->valuestring));
        if (ok) r->passed++;
        else if (r->status == CODE_PASS) {
            r->status = rc == -2 ? CODE_TIMEOUT : (rc != 0 && rc != 3) ? CODE_RUNTIME_ERROR : CODE_FAIL;
            snprintf(r->detail, sizeof r->detail, "test %d: %s (exit %d)", r->total, code_status_name(r->status), rc);
        }
        free(got);
    }
}

int code_grade(const char *output, const ds_item *item, const code_opts *o, code_result *r, char *err) {
    memset(r, 0, sizeof *r);
    if (!o->unsafe_no_sandbox && !code_sandbox_available()) {
        snprintf(err, ZP_DS_ERR, "code grading needs bubblewrap (apt-get install bubblewrap) or --unsafe-no-sandbox");
        return -1;
    }
    cJSON *tests = cJSON_Parse(item->tests_json ? item->tests_json : "");
    if (!cJSON_IsArray(tests)) { cJSON_Delete(tests); snprintf(err, ZP_DS_ERR, "%.200s: public tests are not a JSON array", item->id); return -1; }
    char *code = code_extract_python(output);
    if (!code) {
        r->status = CODE_NO_CODE;
        r->total = cJSON_GetArraySize(tests);
        snprintf(r->detail, sizeof r->detail, "no fenced python block");
        cJSON_Delete(tests);
        return 0;
    }
    char dir[] = "/tmp/zipage-code-XXXXXX";
    int rc = 0;
    if (!mkdtemp(dir) || chmod(dir, 0777) != 0 || prepare(dir, code, item) != 0) {
        snprintf(err, ZP_DS_ERR, "code grading: cannot prepare a temporary directory: %s", strerror(errno));
        rc = -1;
    } else {
        run_tests(dir, item, tests, o, r);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) { /* leftovers in /tmp only */ }
    free(code);
    cJSON_Delete(tests);
    return rc;
}
