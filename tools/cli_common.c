/* cli_common.c - flag value parsing with range checks, error reporting, timers. */
#include "cli_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"

const char *cli_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        zp_fail(ZP_ERR_INVALID, "flag %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

zp_status cli_i64(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is not an integer in [%lld, %lld]", flag, v, (long long)lo, (long long)hi);
    *out = x;
    return ZP_OK;
}

zp_status cli_int(const char *flag, const char *v, long lo, long hi, int *out) {
    int64_t x = 0;
    ZP_TRY(cli_i64(flag, v, lo, hi, &x));
    *out = (int)x;
    return ZP_OK;
}

zp_status cli_float(const char *flag, const char *v, double lo, double hi, float *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi))
        return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is not a number in [%g, %g]", flag, v, lo, hi);
    *out = (float)x;
    return ZP_OK;
}

zp_status cli_list(const char *flag, const char *v) {
    const size_t n = strlen(v);
    if (!n || v[0] == ',' || v[n - 1] == ',' || strstr(v, ",,"))
        return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" has an empty entry (a comma-separated list, e.g. a,b)", flag, v);
    return ZP_OK;
}

zp_status cli_ids(const char *flag, const char *v, int **ids, int *n) {
    int cap = 16, k = 0;
    int *a = malloc(sizeof(int) * (size_t)cap);
    ZP_CHECK_ALLOC(a);
    const char *p = v;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < 0 || x > 0x7fffffff || (*end && *end != ',')) {
            free(a);
            return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is not a comma-separated list of non-negative integers (at \"%s\")", flag, v, p);
        }
        if (k == cap) {
            int *g = realloc(a, sizeof(int) * (size_t)(cap *= 2));
            if (!g) { free(a); return zp_fail(ZP_ERR_OOM, "%s: out of memory", flag); }
            a = g;
        }
        a[k++] = (int)x;
        p = *end ? end + 1 : end;
    }
    if (!k) { free(a); return zp_fail(ZP_ERR_INVALID, "%s: empty list", flag); }
    *ids = a;
    *n = k;
    return ZP_OK;
}

int cli_report(const char *cmd, zp_status s) {
    fprintf(stderr, "zipage %s: error: %s\n", cmd, zp_last_error());
    return s == ZP_ERR_INVALID ? 2 : 1;
}

