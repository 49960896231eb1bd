/* sandbox_filter.c - the sandbox's syscall filter (sandbox.h: sbx_filter_fd): a seccomp program,
 * built with libseccomp and handed to bubblewrap (--seccomp FD), which loads it in the sandboxed
 * process just before it runs the interpreter.
 *
 * Everything is allowed but what untrusted code has no use for and what reaches past the
 * namespaces, each refused with EPERM (a Python OSError, not a kill, so a sample that probes gets
 * an error it can print): sockets of any family but AF_UNIX, AF_INET and AF_INET6 (AF_VSOCK is
 * not network-namespaced and reaches the host or hypervisor; AF_NETLINK, AF_PACKET, ...), the same
 * for socketpair; io_uring; userfaultfd; perf_event_open; the keyring (add_key, request_key,
 * keyctl); memfd_secret; bpf; mount, umount2, pivot_root, the new mount API, chroot; ptrace and
 * process_vm_readv/writev; kexec and kernel modules; reboot, swapon/swapoff, settimeofday and
 * clock_settime, acct, quotactl, personality (no other ABI). A syscall of another architecture
 * (x86's int 0x80 from a 64-bit process) kills the process (libseccomp's default for a foreign
 * architecture). Deliberately not here: running anything (sandbox.c), or a whitelist (CPython's
 * and the LiveCodeBench runner's syscalls change with their versions; the namespaces and rlimits
 * already contain the ordinary ones).
 */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef ZP_HAVE_SECCOMP
#include <seccomp.h>

/* Syscalls refused whatever their arguments (names resolved by libseccomp: one this kernel's
 * headers do not know is skipped). */
static const char *const refused[] = {
    "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "perf_event_open", "add_key", "request_key", "keyctl",
    "memfd_secret", "bpf", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr", "ptrace", "process_vm_readv", "process_vm_writev", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "reboot", "swapon", "swapoff", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "acct", "quotactl", "personality", "lookup_dcookie", "vhangup", "unshare", "setns", NULL};

/* socket(2) and socketpair(2) with a family other than AF_UNIX (1), AF_INET (2), AF_INET6 (10). */
static int refuse_families(scmp_filter_ctx ctx, int nr) {
    const uint32_t deny = SCMP_ACT_ERRNO(EPERM);
    int rc = seccomp_rule_add(ctx, deny, nr, 1, SCMP_A0(SCMP_CMP_EQ, 0));
    for (int fam = 3; rc == 0 && fam < AF_INET6; fam++) rc = seccomp_rule_add(ctx, deny, nr, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam));
    if (rc == 0) rc = seccomp_rule_add(ctx, deny, nr, 1, SCMP_A0(SCMP_CMP_GT, AF_INET6));
    return rc;
}

int sbx_filter_fd(char *err, size_t err_len) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) { snprintf(err, err_len, "sandbox: seccomp_init failed"); return -1; }
    int rc = 0;
    for (int i = 0; refused[i] && rc == 0; i++) {
        const int nr = seccomp_syscall_resolve_name(refused[i]);
        if (nr != __NR_SCMP_ERROR) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    if (rc == 0) rc = refuse_families(ctx, SCMP_SYS(socket));
    if (rc == 0) rc = refuse_families(ctx, SCMP_SYS(socketpair));
    int fd = rc == 0 ? memfd_create("zipage-sandbox-filter", MFD_CLOEXEC) : -1;
    if (fd >= 0) rc = seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    if (rc != 0 || fd < 0 || lseek(fd, 0, SEEK_SET) != 0) {
        snprintf(err, err_len, "sandbox: cannot build the syscall filter: %s", strerror(rc < 0 ? -rc : errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

#else

int sbx_filter_fd(char *err, size_t err_len) {
    snprintf(err, err_len, "sandbox: this build has no libseccomp, so the sandbox's syscall filter cannot be made: install libseccomp-dev "
                           "(`make deps`) and rebuild, or grade with --unsafe-no-sandbox");
    return -1;
}

#endif
