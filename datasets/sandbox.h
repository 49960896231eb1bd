/* sandbox.h - runs one trusted Python script (the solution or the functional driver) over
 * untrusted code in bubblewrap, feeding its stdin from a pipe and collecting its stdout (and,
 * for the functional driver, a result channel on fd 3) through pipes.
 *
 * The model it follows: the harness never writes into a directory the untrusted code can
 * write. The caller prepares a code directory before the first run (files created with
 * O_EXCL|O_NOFOLLOW); it is bound read-only at /code inside the sandbox. Inside, the code sees
 * only /usr (and the /bin, /lib... entries of the host root, as links or read-only binds), the
 * interpreter's own prefix when it lives elsewhere, /code, a fresh /proc, a read-only minimal
 * /dev, and a size-limited private /tmp (its working directory); no host environment
 * (--clearenv), no network and no host sockets (every namespace unshared, no /run, /var or host
 * /tmp), its own pid namespace torn down with it. Limits: CPU time, address space (minus the
 * tmpfs size, so both together stay within mem_mb), file size and processes (setrlimit), a
 * seccomp filter (sandbox_filter.c: socket families but Unix and IP, io_uring, userfaultfd,
 * perf_event_open, keyrings, memfd_secret, bpf, mounts, ptrace, kexec and modules refused), and,
 * where a memory cgroup can be made (root, cgroup v2 with the memory controller or v1's memory
 * hierarchy), every page the run pins within mem_mb: memfds and tmpfs too. Run as
 * root, it drops to a uid of its own per grader process (so concurrent graders do not share a
 * process quota); run as an ordinary user it keeps that user's uid. A wall-clock timeout kills
 * the whole sandbox; output beyond 1 MiB stops it.
 *
 * Deliberately not here: what a test is or how output is compared (code_grade.c). No engine
 * headers; nothing read from the environment, no shell (bwrap is exec'ed with a built argv).
 */
#ifndef ZP_SANDBOX_H
#define ZP_SANDBOX_H

#include <stddef.h>

#define SBX_OUTPUT_CAP (1 << 20) /* bytes of stdout (and of the result channel) kept */
#define SBX_UID_BASE 200000      /* run as root: the sandbox uid is SBX_UID_BASE + pid % SBX_UID_SPAN */
#define SBX_UID_SPAN 100000
#define SBX_FILTER_FD(job) ((job)->result_channel ? 4 : 3) /* the syscall filter's fd in the child, for bwrap --seccomp */

typedef struct {
    int timeout_ms;        /* per run, wall clock */
    long mem_mb;           /* address space + private /tmp */
    long tmpfs_mb;         /* size of the private /tmp (part of mem_mb) */
    long nproc;            /* RLIMIT_NPROC */
    int unsafe_no_sandbox; /* run the interpreter directly (rlimits only, no isolation) */
    const char *python;    /* interpreter: an absolute path, or NULL for the first of /usr/bin/python3,
                              /usr/local/bin/python3 */
} sbx_opts;

typedef struct {
    const char *code_dir;  /* host directory holding the scripts (read-only at /code inside) */
    const char *script;    /* file name inside code_dir */
    const char *arg;       /* argv[1] of the script, or NULL */
    const char *input;     /* stdin contents */
    size_t input_len;
    int result_channel;    /* 1: fd 3 is a pipe whose contents come back in result */
} sbx_job;

typedef struct {
    char *out;             /* stdout, NUL-terminated (malloc'ed) */
    size_t out_len;
    char *result;          /* fd 3 contents when result_channel, else NULL (malloc'ed) */
    size_t result_len;
    int exit_code;         /* exit status, or 128 + signal */
    int timed_out;         /* wall-clock limit hit (the sandbox was killed) */
    int output_limit;      /* stdout or result exceeded SBX_OUTPUT_CAP (the sandbox was killed) */
    int mem_cgroup;        /* 1: the run was in a memory cgroup of mem_mb (every page it pinned counted) */
} sbx_outcome;

/* Absolute path of bubblewrap (fixed system locations), or NULL. */
const char *sbx_bwrap_path(void);
/* The syscall filter as a seccomp program in a memfd (close-on-exec, at offset 0), or -1 with err
 * filled (a build without libseccomp refuses: no sandbox runs without its filter). */
int sbx_filter_fd(char *err, size_t err_len);
/* Absolute path of the interpreter o->python names (or the default one), or NULL. */
const char *sbx_python_path(const sbx_opts *o);
/* Runs a job. Returns 0 with *r filled (free with sbx_outcome_free), or -1 with err (a
 * harness failure: no pipe, no fork, no interpreter). */
int sbx_run(const sbx_opts *o, const sbx_job *j, sbx_outcome *r, char *err, size_t err_len);
void sbx_outcome_free(sbx_outcome *r);
/* The uid a sandboxed run uses when the harness is root. */
unsigned sbx_uid(void);

#endif
