/* status.c - the per-thread error line behind zp_fail / zp_last_error. */
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char zp_err_buf[1024];

const char *zp_status_name(zp_status s) {
    static const char *names[ZP_STATUS_COUNT] = {"ok",          "io error",     "format error",
                                                 "unsupported", "invalid",      "out of memory",
                                                 "capacity",    "backend error", "interrupted"};
    return (s >= 0 && s < ZP_STATUS_COUNT) ? names[s] : "unknown status";
}

zp_status zp_fail(zp_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(zp_err_buf, sizeof zp_err_buf, fmt, ap);
    va_end(ap);
    return s;
}

void zp_error_prefix(const char *fmt, ...) {
    char pre[512], old[sizeof zp_err_buf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, zp_err_buf, sizeof old);
    size_t n = strlen(pre);
    if (n > sizeof zp_err_buf - 3) n = sizeof zp_err_buf - 3;
    memcpy(zp_err_buf, pre, n);
    memcpy(zp_err_buf + n, ": ", 2);
    size_t rest = sizeof zp_err_buf - n - 3, m = strlen(old);
    if (m > rest) m = rest;
    memcpy(zp_err_buf + n + 2, old, m);
    zp_err_buf[n + 2 + m] = 0;
}

const char *zp_last_error(void) { return zp_err_buf[0] ? zp_err_buf : "(no error recorded)"; }
void zp_error_clear(void) { zp_err_buf[0] = 0; }
const char *zp_errno_str(void) { return strerror(errno); }
void *zp_calloc(size_t n, size_t size) { return (n && size) ? calloc(n, size) : calloc(1, 1); }
