/* status.h - status codes and the one error channel of the library.
 *
 * Library functions return a zp_status; on failure they also leave one human-readable line
 * in a per-thread buffer (zp_last_error) that names the file, tensor or parameter at fault.
 * Executables print that line and exit non-zero. This file does not log or abort.
 */
#ifndef ZP_STATUS_H
#define ZP_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ZP_OK = 0,
    ZP_ERR_IO,          /* open/read/mmap failed */
    ZP_ERR_FORMAT,      /* malformed file content */
    ZP_ERR_UNSUPPORTED, /* valid input we do not handle (architecture, dtype, rope type) */
    ZP_ERR_INVALID,     /* impossible parameter or API misuse */
    ZP_ERR_OOM,         /* allocation failed, host or device */
    ZP_ERR_CAPACITY,    /* request can never fit the configured pool/budget */
    ZP_ERR_BACKEND,     /* a backend op failed */
    ZP_ERR_INTERRUPTED, /* stopped by a signal (SIGINT, SIGTERM) after saving what was done */
    ZP_STATUS_COUNT
} zp_status;

const char *zp_status_name(zp_status s);

/* Record a formatted error line and return s (so callers can `return zp_fail(...)`). */
zp_status zp_fail(zp_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current error line with context ("loading model: ..."). */
void zp_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *zp_last_error(void);
void zp_error_clear(void);

#define ZP_TRY(expr)                      \
    do {                                  \
        zp_status zp_s_ = (expr);         \
        if (zp_s_ != ZP_OK) return zp_s_; \
    } while (0)

/* Checks a libc call that signals failure with a false/NULL/negative result; names the call. */
#define ZP_CHECK_LIBC(cond, what)                                                     \
    do {                                                                              \
        if (!(cond))                                                                  \
            return zp_fail(ZP_ERR_IO, "%s failed (%s) at %s:%d: %s", #cond, (what),   \
                           __FILE__, __LINE__, zp_errno_str());                       \
    } while (0)

#define ZP_CHECK_ALLOC(ptr)                                                           \
    do {                                                                              \
        if (!(ptr))                                                                   \
            return zp_fail(ZP_ERR_OOM, "out of host memory for %s at %s:%d", #ptr,   \
                           __FILE__, __LINE__);                                       \
    } while (0)

const char *zp_errno_str(void);

/* Allocation helpers that abort-free: return NULL on failure like malloc. */
void *zp_calloc(size_t n, size_t size);

#ifdef __cplusplus
}
#endif

#endif
