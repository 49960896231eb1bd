/* sandbox.c - the bubblewrap runner of sandbox.h: argv built before fork, a child that only
 * rewires fds, sets limits, drops its uid and execs, and a parent that feeds stdin and drains
 * stdout and the result channel through poll until the deadline.
 * Deliberately not here: preparing the code directory, comparing outputs (code_grade.c). */
#define _GNU_SOURCE
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SBX_MAX_ARGS 96

static const char *first_executable(const char *const *paths) {
    for (int i = 0; paths[i]; i++)
        if (access(paths[i], X_OK) == 0) return paths[i];
    return NULL;
}

const char *sbx_bwrap_path(void) {
    static const char *const paths[] = {"/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap", NULL};
    return first_executable(paths);
}

const char *sbx_python_path(const sbx_opts *o) {
    static const char *const paths[] = {"/usr/bin/python3", "/usr/local/bin/python3", NULL};
    if (!o->python) return first_executable(paths);
    return (o->python[0] == '/' && access(o->python, X_OK) == 0) ? o->python : NULL;
}

unsigned sbx_uid(void) { return SBX_UID_BASE + (unsigned)getpid() % SBX_UID_SPAN; }

/* The uid the sandboxed processes run as: ours unless we are root. */
static unsigned run_uid(void) { return getuid() == 0 ? sbx_uid() : (unsigned)getuid(); }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* argv under construction; strings that need storage live in store (freed by the caller). */
typedef struct {
    const char *v[SBX_MAX_ARGS + 1];
    int n;
    char store[12][PATH_MAX + 16];
    int n_store;
} argv_buf;

static void push(argv_buf *a, const char *s) {
    if (a->n < SBX_MAX_ARGS) a->v[a->n++] = s;
}

static char *stored(argv_buf *a) { return a->n_store < 12 ? a->store[a->n_store++] : NULL; }

/* The host root's bin/lib entries: links stay links (merged /usr), directories are bound. */
static void push_root_entries(argv_buf *a) {
    static const char *const names[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", NULL};
    for (int i = 0; names[i]; i++) {
        struct stat sb;
        if (lstat(names[i], &sb) != 0) continue;
        if (S_ISLNK(sb.st_mode)) {
            char *t = stored(a);
            ssize_t k = t ? readlink(names[i], t, PATH_MAX) : -1;
            if (k <= 0) continue;
            t[k] = 0;
            push(a, "--symlink"), push(a, t), push(a, names[i]);
        } else if (S_ISDIR(sb.st_mode)) {
            push(a, "--ro-bind"), push(a, names[i]), push(a, names[i]);
        }
    }
}

/* Builds the command: bwrap ... python -I -B /code/script [arg], or python directly. */
static int build_argv(const sbx_opts *o, const sbx_job *j, const char *py, argv_buf *a, char *err, size_t err_len) {
    memset(a, 0, sizeof *a);
    char *script = stored(a);
    if (o->unsafe_no_sandbox) {
        snprintf(script, PATH_MAX + 16, "%s/%s", j->code_dir, j->script);
        push(a, py), push(a, "-I"), push(a, "-B"), push(a, script);
        if (j->arg) push(a, j->arg);
        return 0;
    }
    const char *bw = sbx_bwrap_path();
    if (!bw) { snprintf(err, err_len, "code grading needs bubblewrap (apt-get install bubblewrap) or --unsafe-no-sandbox"); return -1; }
    char *real = stored(a);
    if (!realpath(py, real)) { snprintf(err, err_len, "sandbox: cannot resolve the interpreter %s: %s", py, strerror(errno)); return -1; }
    char *tmpfs_size = stored(a);
    snprintf(tmpfs_size, 32, "%ld", o->tmpfs_mb << 20);
    /* --unshare-user with --disable-userns: the sample cannot make a user namespace of its own
     * (and with it mounts, a tmpfs outside the limits); needs bubblewrap 0.8 (Debian 12) */
    static const char *const head[] = {"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                                       "--clearenv", "--setenv", "PATH",
                                       "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "LANG",
                                       "C.UTF-8", "--ro-bind", "/usr", "/usr", NULL};
    push(a, bw);
    for (int i = 0; head[i]; i++) push(a, head[i]);
    push_root_entries(a);
    if (strncmp(real, "/usr/", 5) != 0) { /* an interpreter outside /usr: bind its prefix (…/bin/python -> …) */
        char *slash = strrchr(real, '/');
        if (slash) *slash = 0;
        slash = strrchr(real, '/');
        if (!slash || slash == real) { snprintf(err, err_len, "sandbox: interpreter %s has no prefix to bind", py); return -1; }
        *slash = 0;
        push(a, "--ro-bind"), push(a, real), push(a, real);
    }
    char *filter_fd = stored(a); /* the syscall filter (sandbox_filter.c), at the fd child_exec puts it */
    snprintf(filter_fd, 16, "%d", SBX_FILTER_FD(j));
    push(a, "--seccomp"), push(a, filter_fd);
    static const char *const tail[] = {"--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--size", NULL};
    push(a, "--ro-bind"), push(a, j->code_dir), push(a, "/code");
    for (int i = 0; tail[i]; i++) push(a, tail[i]);
    push(a, tmpfs_size), push(a, "--tmpfs"), push(a, "/tmp"), push(a, "--remount-ro"), push(a, "/"), push(a, "--chdir"), push(a, "/tmp");
    snprintf(script, PATH_MAX + 16, "/code/%s", j->script);
    push(a, py), push(a, "-I"), push(a, "-B"), push(a, script);
    if (j->arg) push(a, j->arg);
    if (a->n >= SBX_MAX_ARGS) { snprintf(err, err_len, "sandbox: command line too long"); return -1; }
    return 0;
}

/* ---------------------------------------------------------------- memory cgroup */

/* A memory cgroup for one run where one can be made, with mem_mb as its limit: it bounds every
 * page the sample pins (anonymous, memfd, tmpfs, pipes), which RLIMIT_AS does not. cgroup v2
 * where the root's subtree has the memory controller (memory.max, no swap), else v1's memory
 * hierarchy (memory.limit_in_bytes, and memsw where swap is accounted). dir is empty where
 * neither can be made (no root, no such hierarchy): the rlimits alone then. */
typedef struct {
    char dir[PATH_MAX];
    int procs_fd; /* its cgroup.procs, opened before the fork: the child writes its pid */
} mem_cgroup;

static int write_value(const char *dir, const char *file, const char *value) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t n = (ssize_t)strlen(value), w = write(fd, value, (size_t)n);
    close(fd);
    return w == n ? 0 : -1;
}

static int file_has(const char *path, const char *word) {
    char buf[512] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 && strstr(buf, word) != NULL;
}

static void cgroup_make(mem_cgroup *c, long mem_mb) {
    static unsigned seq;
    char limit[32];
    snprintf(limit, sizeof limit, "%ld", mem_mb << 20);
    c->procs_fd = -1;
    const int v2 = file_has("/sys/fs/cgroup/cgroup.subtree_control", "memory");
    snprintf(c->dir, sizeof c->dir, "%s/zipage-sbx-%ld-%u", v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", (long)getpid(), seq++);
    int ok = mkdir(c->dir, 0700) == 0;
    if (ok && v2) ok = write_value(c->dir, "memory.max", limit) == 0 && (write_value(c->dir, "memory.swap.max", "0") == 0 || errno == ENOENT);
    if (ok && !v2) {
        ok = write_value(c->dir, "memory.limit_in_bytes", limit) == 0;
        char memsw[PATH_MAX + 64];
        snprintf(memsw, sizeof memsw, "%s/memory.memsw.limit_in_bytes", c->dir);
        if (ok && access(memsw, F_OK) == 0) ok = write_value(c->dir, "memory.memsw.limit_in_bytes", limit) == 0;
    }
    if (ok) {
        char procs[PATH_MAX + 64];
        snprintf(procs, sizeof procs, "%s/cgroup.procs", c->dir);
        c->procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
        ok = c->procs_fd >= 0;
    }
    if (!ok) {
        rmdir(c->dir); /* (when it was made) */
        c->dir[0] = 0;
    }
}

/* After the run's processes are gone. A killed run's last process leaves the group only once the
 * kernel has torn its namespaces down, which for a /tmp of millions of files takes seconds: the
 * group is removed as soon as it is empty (rmdir fails with EBUSY until then), waiting up to 120 s,
 * so that no run leaves its directory behind. */
static void cgroup_remove(mem_cgroup *c) {
    if (c->procs_fd >= 0) close(c->procs_fd);
    c->procs_fd = -1;
    const double end = now_ms() + 120000;
    while (c->dir[0] && rmdir(c->dir) != 0 && errno == EBUSY && now_ms() < end) usleep(10000);
    c->dir[0] = 0;
}

/* Child side: joins the group (async-signal-safe: the pid formatted by hand). */
static void cgroup_join(int procs_fd) {
    if (procs_fd < 0) return;
    char num[24];
    int k = (int)sizeof num;
    for (long pid = (long)getpid(); pid > 0 && k > 0; pid /= 10) num[--k] = (char)('0' + pid % 10);
    if (write(procs_fd, num + k, sizeof num - (size_t)k) < 0) _exit(125); /* a limit we meant to set: no run without it */
}

/* dup2 that also clears close-on-exec when src already is dst. */
static void move_fd(int src, int dst) {
    if (src == dst) fcntl(dst, F_SETFD, 0);
    else dup2(src, dst);
}

/* Child side: only async-signal-safe calls (the parent may have threads). */
static void child_exec(const sbx_opts *o, const argv_buf *a, int in_fd, int out_fd, int res_fd, int cgroup_fd, int filter_fd) {
    setsid();
    cgroup_join(cgroup_fd); /* before the fds are rewired: cgroup_fd is close-on-exec and above them */
    int null = open("/dev/null", O_WRONLY);
    move_fd(in_fd, 0);
    move_fd(out_fd, 1);
    move_fd(null, 2);
    if (res_fd >= 0) move_fd(res_fd, 3);
    int first = res_fd >= 0 ? 4 : 3;
    if (filter_fd >= 0) move_fd(filter_fd, first++); /* SBX_FILTER_FD: bwrap reads it (above the others: F_DUPFD 10) */
    if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) != 0)
        for (int fd = first; fd < 4096; fd++) close(fd);
    long cpu_s = o->timeout_ms / 1000 + 2, as_mb = o->mem_mb - (o->unsafe_no_sandbox ? 0 : o->tmpfs_mb);
    struct rlimit cpu = {(rlim_t)cpu_s, (rlim_t)cpu_s + 1}, as = {(rlim_t)as_mb << 20, (rlim_t)as_mb << 20};
    struct rlimit fsize = {16 << 20, 16 << 20}, nproc = {(rlim_t)o->nproc, (rlim_t)o->nproc};
    setrlimit(RLIMIT_CPU, &cpu);
    setrlimit(RLIMIT_FSIZE, &fsize);
    if (getuid() == 0) { /* process limits count per real user: a uid of this grader's own */
        unsigned uid = sbx_uid();
        if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0) _exit(126);
    }
    setrlimit(RLIMIT_NPROC, &nproc);
    setrlimit(RLIMIT_AS, &as);
    /* bwrap itself starts with this environment, not the grader's: it is pid 1 of the namespace,
     * and its /proc/1/environ is readable there (--clearenv cleans only its child's) */
    static char *const env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL};
    execve(a->v[0], (char *const *)a->v, o->unsafe_no_sandbox ? environ : env);
    _exit(127);
}

/* Processes of the sandbox uid still alive. */
static int count_uid_procs(unsigned uid) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300];
        struct stat sb;
        snprintf(path, sizeof path, "/proc/%s", e->d_name);
        if (stat(path, &sb) == 0 && sb.st_uid == uid) n++;
    }
    closedir(d);
    return n;
}

/* After a killed run the kernel tears the pid namespace down asynchronously: wait (up to 3 s)
 * until the uid has no more processes than before the run, so that the sandbox's do not count
 * against the next run's process limit. */
static void settle(int baseline) {
    double end = now_ms() + 3000;
    while (count_uid_procs(run_uid()) > baseline && now_ms() < end) usleep(5000);
}

typedef struct {
    int fd;
    char *buf;
    size_t n;
} sink;

/* Reads what is there; returns 1 when the stream ended, 2 when it went past the cap (the cap is
 * inclusive: an output of exactly SBX_OUTPUT_CAP bytes is whole; one byte more is the flood, and
 * what is kept is cut back to the cap). */
static int drain(sink *s) {
    ssize_t got = read(s->fd, s->buf + s->n, SBX_OUTPUT_CAP + 1 - s->n);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (got <= 0) return 1;
    s->n += (size_t)got;
    if (s->n <= SBX_OUTPUT_CAP) return 0;
    s->n = SBX_OUTPUT_CAP;
    return 2;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Feeds stdin and drains the outputs until both outputs end, the cap or the deadline. */
static void pump(const sbx_job *j, int in_fd, sink *out, sink *res, double deadline, sbx_outcome *r) {
    size_t fed = 0;
    if (j->input_len == 0) close_fd(&in_fd);
    while (out->fd >= 0 || res->fd >= 0) {
        int left = (int)(deadline - now_ms());
        if (left <= 0) { r->timed_out = 1; break; }
        struct pollfd p[3];
        sink *who[3];
        int np = 0;
        if (out->fd >= 0) who[np] = out, p[np++] = (struct pollfd){out->fd, POLLIN, 0};
        if (res->fd >= 0) who[np] = res, p[np++] = (struct pollfd){res->fd, POLLIN, 0};
        int in_slot = in_fd >= 0 ? np : -1;
        if (in_fd >= 0) p[np++] = (struct pollfd){in_fd, POLLOUT, 0};
        int pr = poll(p, (nfds_t)np, left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) break;
        for (int i = 0; i < np; i++) {
            if (!p[i].revents) continue;
            if (i == in_slot) {
                ssize_t w = (p[i].revents & POLLOUT) ? write(in_fd, j->input + fed, j->input_len - fed) : -1;
                if (w > 0) fed += (size_t)w;
                if ((w < 0 && errno != EAGAIN && errno != EINTR) || fed == j->input_len) close_fd(&in_fd);
                continue;
            }
            int d = drain(who[i]);
            if (d == 2) r->output_limit = 1;
            if (d) close_fd(&who[i]->fd);
        }
        if (r->output_limit) break;
    }
    close_fd(&in_fd);
    close_fd(&out->fd);
    close_fd(&res->fd);
}

/* Waits for the child until the deadline (stdout may close before it ends), killing it when
 * it overran. Returns the wait status. */
static int reap(pid_t pid, double deadline, sbx_outcome *r) {
    int st = 0;
    for (;;) {
        int kill_it = r->timed_out || r->output_limit;
        if (kill_it) kill(-pid, SIGKILL), kill(pid, SIGKILL);
        pid_t w = waitpid(pid, &st, kill_it ? 0 : WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) return st;
        if (!kill_it && now_ms() >= deadline) r->timed_out = 1;
        else if (!kill_it) usleep(2000);
    }
}

static int fail(char *err, size_t len, const char *what) {
    snprintf(err, len, "sandbox: %s: %s", what, strerror(errno));
    return -1;
}

int sbx_run(const sbx_opts *o, const sbx_job *j, sbx_outcome *r, char *err, size_t err_len) {
    memset(r, 0, sizeof *r);
    const char *py = sbx_python_path(o);
    if (!py) {
        snprintf(err, err_len, "sandbox: no interpreter: %s", o->python ? "the python path must be absolute and executable"
                                                                        : "neither /usr/bin/python3 nor /usr/local/bin/python3");
        return -1;
    }
    argv_buf *a = malloc(sizeof *a);
    sink out = {-1, malloc(SBX_OUTPUT_CAP + 2), 0}, res = {-1, j->result_channel ? malloc(SBX_OUTPUT_CAP + 2) : NULL, 0}; /* cap + 1 byte read, + NUL */
    int in[2] = {-1, -1}, op[2] = {-1, -1}, rp[2] = {-1, -1}, rc = -1;
    mem_cgroup cg = {"", -1};
    int filter = -1;
    if (!a || !out.buf || (j->result_channel && !res.buf)) { snprintf(err, err_len, "sandbox: out of memory"); goto done; }
    if (build_argv(o, j, py, a, err, err_len) != 0) goto done;
    if (!o->unsafe_no_sandbox) { /* above the fds child_exec rewires, so that none lands on it */
        const int f = sbx_filter_fd(err, err_len);
        if (f < 0) goto done;
        filter = fcntl(f, F_DUPFD_CLOEXEC, 10);
        close(f);
        if (filter < 0) { fail(err, err_len, "fcntl"); goto done; }
    }
    if (pipe2(in, O_CLOEXEC) || pipe2(op, O_CLOEXEC) || (j->result_channel && pipe2(rp, O_CLOEXEC))) { fail(err, err_len, "pipe"); goto done; }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    const int baseline = count_uid_procs(run_uid());
    if (!o->unsafe_no_sandbox) cgroup_make(&cg, o->mem_mb);
    r->mem_cgroup = cg.dir[0] != 0;
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old); /* a child that stops reading must not kill us */
    const double deadline = now_ms() + o->timeout_ms;
    pid_t pid = fork();
    if (pid < 0) { pthread_sigmask(SIG_SETMASK, &old, NULL); fail(err, err_len, "fork"); goto done; }
    if (pid == 0) child_exec(o, a, in[0], op[1], rp[1], cg.procs_fd, filter);
    close_fd(&in[0]), close_fd(&op[1]), close_fd(&rp[1]);
    out.fd = op[0], res.fd = rp[0];
    op[0] = rp[0] = -1;
    pump(j, in[1], &out, &res, deadline, r);
    in[1] = -1; /* closed by pump */
    int st = reap(pid, deadline, r);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) > 0) {} /* drop a SIGPIPE we caused */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r->timed_out || r->output_limit) settle(baseline);
    cgroup_remove(&cg);
    r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    out.buf[out.n] = 0;
    r->out = out.buf, r->out_len = out.n, out.buf = NULL;
    if (res.buf) res.buf[res.n] = 0, r->result = res.buf, r->result_len = res.n, res.buf = NULL;
    rc = 0;
done:
    if (filter >= 0) close(filter);
    cgroup_remove(&cg);
    for (int i = 0; i < 2; i++) close_fd(&in[i]), close_fd(&op[i]), close_fd(&rp[i]);
    free(a), free(out.buf), free(res.buf);
    return rc;
}

void sbx_outcome_free(sbx_outcome *r) {
    free(r->out), free(r->result);
    r->out = r->result = NULL;
}
