/* results_io.c - see results_io.h. */
#define _GNU_SOURCE
#include "results_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"

static zp_status io_fail(const char *path, const char *what) {
    return zp_fail(ZP_ERR_IO, "%s: %s failed: %s", path, what, strerror(errno));
}

zp_status rio_mkdir_p(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return zp_fail(ZP_ERR_INVALID, "%.200s...: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        struct stat sb;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return io_fail(buf, "mkdir");
        if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode)) return zp_fail(ZP_ERR_IO, "%s: exists and is not a directory", buf);
        *p = c;
        if (!c) return ZP_OK;
    }
}

static zp_status write_all(int fd, const char *path, const char *text, size_t len) {
    while (len) {
        ssize_t w = write(fd, text, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return io_fail(path, "write");
        text += w;
        len -= (size_t)w;
    }
    return ZP_OK;
}

/* Cuts an unterminated last line (an append that was killed) back to the last newline. */
static zp_status cut_partial_line(int fd, const char *path, off_t *size) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return io_fail(path, "stat");
    off_t end = sb.st_size;
    char c;
    while (end > 0) {
        if (pread(fd, &c, 1, end - 1) != 1) return io_fail(path, "read");
        if (c == '\n') break;
        end--;
    }
    if (end != sb.st_size && ftruncate(fd, end) != 0) return io_fail(path, "truncate");
    *size = end;
    return ZP_OK;
}

/* The folder of path (without the last component; "." when it has none). */
static zp_status parent_dir(const char *path, char *dir, size_t n) {
    if (snprintf(dir, n, "%s", path) >= (int)n) return zp_fail(ZP_ERR_INVALID, "%.200s...: path too long", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, n, ".");
    else if (slash == dir) slash[1] = 0;
    else *slash = 0;
    return ZP_OK;
}

/* fsync of the directory holding path, so that a new entry survives a crash. */
static zp_status sync_parent(const char *path) {
    char dir[4096];
    ZP_TRY(parent_dir(path, dir, sizeof dir));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return io_fail(dir, "open");
    int rc = fsync(fd);
    close(fd);
    return rc == 0 ? ZP_OK : io_fail(dir, "fsync");
}

static zp_status lock_file(const char *lock, int op, int *fd) {
    *fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644); /* read-write: NFS emulates flock with write locks */
    if (*fd < 0) return io_fail(lock, "open");
    int rc;
    while ((rc = flock(*fd, op)) != 0 && errno == EINTR) {}
    if (rc == 0) return ZP_OK;
    int busy = errno == EWOULDBLOCK;
    zp_status s = busy ? ZP_OK : io_fail(lock, "flock");
    close(*fd);
    *fd = -1;
    return s;
}

zp_status rio_lock(const char *path, int *fd) {
    char dir[4096], lock[4200];
    ZP_TRY(parent_dir(path, dir, sizeof dir));
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    zp_status s = lock_file(lock, LOCK_EX, fd);
    if (s != ZP_OK) zp_error_prefix("%s", path); /* the file the caller writes, then its lock */
    return s;
}

void rio_unlock(int fd) {
    if (fd >= 0) close(fd); /* closing the descriptor releases its flock */
}

zp_status rio_claim(const char *dir, const char *id, int *fd) {
    char claims[4200], path[4400];
    if (snprintf(claims, sizeof claims, "%s/.claims", dir) >= (int)sizeof claims) return zp_fail(ZP_ERR_INVALID, "%.200s...: path too long", dir);
    ZP_TRY(rio_mkdir_p(claims));
    snprintf(path, sizeof path, "%s/%s", claims, id);
    return lock_file(path, LOCK_EX | LOCK_NB, fd);
}

static zp_status append_unlocked(const char *path, const char *header, const char *text, size_t len) {
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return io_fail(path, "open");
    off_t size = 0;
    zp_status s = cut_partial_line(fd, path, &size);
    if (s == ZP_OK && size == 0 && header) s = write_all(fd, path, header, strlen(header));
    if (s == ZP_OK) s = write_all(fd, path, text, len);
    if (s == ZP_OK && fsync(fd) != 0) s = io_fail(path, "fsync");
    if (close(fd) != 0 && s == ZP_OK) s = io_fail(path, "close");
    if (s == ZP_OK && size == 0) s = sync_parent(path);
    return s;
}

zp_status rio_append_lines(const char *path, const char *header, const char *text, size_t len) {
    int lock;
    ZP_TRY(rio_lock(path, &lock));
    zp_status s = append_unlocked(path, header, text, len);
    rio_unlock(lock);
    return s;
}

zp_status rio_replace(const char *path, const char *text, size_t len) {
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) /* own name: concurrent replacers */ return zp_fail(ZP_ERR_INVALID, "%.200s...: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return io_fail(tmp, "open");
    zp_status s = write_all(fd, tmp, text, len);
    if (s == ZP_OK && fsync(fd) != 0) s = io_fail(tmp, "fsync");
    if (close(fd) != 0 && s == ZP_OK) s = io_fail(tmp, "close");
    if (s == ZP_OK && rename(tmp, path) != 0) s = io_fail(path, "rename");
    if (s != ZP_OK) unlink(tmp);
    return s == ZP_OK ? sync_parent(path) : s;
}

/* at_start: only lines that begin with needle (a run id's first field); else any containing it. */
static zp_status drop_unlocked(const char *path, const char *needle, int at_start) {
    if (access(path, F_OK) != 0) return ZP_OK;
    char *txt;
    size_t len;
    ZP_TRY(zp_read_file(path, &txt, &len));
    if (!strstr(txt, needle)) { free(txt); return ZP_OK; }
    char *out = malloc(len + 1);
    if (!out) { free(txt); return zp_fail(ZP_ERR_OOM, "%s: no memory to rewrite it", path); }
    size_t n = 0, nl_len = strlen(needle);
    for (const char *line = txt; *line;) {
        const char *nl = strchr(line, '\n');
        size_t l = nl ? (size_t)(nl - line) + 1 : strlen(line);
        /* an unterminated tail is a killed append: dropped too */
        const int hit = at_start ? l >= nl_len && !memcmp(line, needle, nl_len) : memmem(line, l, needle, nl_len) != NULL;
        if (nl && !hit) memcpy(out + n, line, l), n += l;
        line += l;
    }
    free(txt);
    zp_status s = rio_replace(path, out, n);
    free(out);
    return s;
}

zp_status rio_drop_lines(const char *path, const char *needle) {
    int lock;
    ZP_TRY(rio_lock(path, &lock));
    zp_status s = drop_unlocked(path, needle, 0);
    rio_unlock(lock);
    return s;
}

zp_status rio_replace_lines(const char *path, const char *header, const char *prefix, const char *text, size_t len) {
    int lock;
    ZP_TRY(rio_lock(path, &lock));
    zp_status s = drop_unlocked(path, prefix, 1);
    if (s == ZP_OK) s = append_unlocked(path, header, text, len);
    rio_unlock(lock);
    return s;
}

/* First line of a file under dir, trimmed; 0 when missing. */
static int read_line(const char *dir, const char *name, char *out, size_t n) {
    char path[4400], *txt;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return 0;
    if (access(path, R_OK) != 0 || zp_read_file(path, &txt, NULL) != ZP_OK) return 0;
    txt[strcspn(txt, "\r\n")] = 0;
    int ok = snprintf(out, n, "%s", txt) < (int)n;
    free(txt);
    return ok;
}

/* The hash a ref names: a loose ref file, else a packed-refs line. */
static int resolve_ref(const char *common, const char *ref, char *out, size_t n) {
    if (read_line(common, ref, out, n)) return 1;
    char path[4400], *txt;
    if (snprintf(path, sizeof path, "%s/packed-refs", common) >= (int)sizeof path) return 0;
    if (access(path, R_OK) != 0 || zp_read_file(path, &txt, NULL) != ZP_OK) return 0;
    int found = 0;
    for (char *line = strtok(txt, "\n"); line && !found; line = strtok(NULL, "\n")) {
        char *sp = strchr(line, ' ');
        if (sp && !strcmp(sp + 1, ref)) *sp = 0, found = snprintf(out, n, "%s", line) < (int)n;
    }
    free(txt);
    return found;
}

/* dst = rel when absolute, else base/rel. */
static int join(char *dst, size_t n, const char *base, const char *rel) {
    int k = rel[0] == '/' ? snprintf(dst, n, "%s", rel) : snprintf(dst, n, "%s/%s", base, rel);
    return k >= 0 && (size_t)k < n;
}

void rio_git_commit(char *out, size_t n) {
    char dir[4096], gitdir[4400], common[8900], head[4400], line[4400], hash[128] = "";
    snprintf(out, n, "unknown");
    if (!getcwd(dir, sizeof dir - 8)) return;
    for (;;) { /* the nearest .git: a directory, or a file "gitdir: PATH" (worktrees, submodules) */
        struct stat sb;
        if (snprintf(gitdir, sizeof gitdir, "%s/.git", dir) >= (int)sizeof gitdir) return;
        if (stat(gitdir, &sb) == 0) {
            if (S_ISREG(sb.st_mode)) {
                if (!read_line(dir, ".git", line, sizeof line) || strncmp(line, "gitdir: ", 8)) return;
                if (!join(gitdir, sizeof gitdir, dir, line + 8)) return;
            }
            break;
        }
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) return;
        *slash = 0;
    }
    if (!read_line(gitdir, "commondir", line, sizeof line)) snprintf(line, sizeof line, ".");
    if (!join(common, sizeof common, gitdir, line)) return;
    if (!read_line(gitdir, "HEAD", head, sizeof head)) return;
    if (!strncmp(head, "ref: ", 5)) {
        if (!resolve_ref(gitdir, head + 5, hash, sizeof hash) && !resolve_ref(common, head + 5, hash, sizeof hash)) return;
    } else {
        if (snprintf(hash, sizeof hash, "%s", head) >= (int)sizeof hash) return;
    }
    if (strspn(hash, "0123456789abcdef") < 12) return;
    snprintf(out, n, "%.12s", hash);
}
