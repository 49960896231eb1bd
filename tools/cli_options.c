/* cli_options.c - parses the backends' tuning options (cli_options.h). The command line is the
 * only place they are read: the library reads no environment. */
#include "cli_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name, *env, *accepted;
    const char *values[3];
    void (*set)(zp_backend_options *o, int value_index);
} option_row;

static void set_priority(zp_backend_options *o, int i) { o->compress_priority_low = i == 0; }
static void set_profile(zp_backend_options *o, int i) { o->profile = i; }
static void set_tune(zp_backend_options *o, int i) { o->gemm_tune = i; }

static const option_row ROWS[] = {
    {"compress_priority", "ZIPAGE_COMPRESS_PRIORITY", "low", {"low"}, set_priority},
    {"profile", "ZIPAGE_PROFILE", "0 or 1", {"0", "1"}, set_profile},
    {"gemm_tune", "ZIPAGE_GEMM_TUNE", "0 or 1", {"0", "1"}, set_tune},
};

/* value into o through row r; `what` names it in an error (NAME or ZIPAGE_NAME). */
static zp_status apply(const option_row *r, const char *what, const char *value, zp_backend_options *o) {
    for (int i = 0; i < 3 && r->values[i]; i++)
        if (!strcmp(value, r->values[i])) { r->set(o, i); return ZP_OK; }
    return zp_fail(ZP_ERR_INVALID, "%s=%s: expected %s", what, value, r->accepted);
}

zp_status cli_backend_option(const char *spec, zp_backend_options *o) {
    const char *eq = strchr(spec, '=');
    const size_t n = eq ? (size_t)(eq - spec) : 0;
    for (size_t k = 0; eq && k < sizeof ROWS / sizeof *ROWS; k++)
        if (strlen(ROWS[k].name) == n && !strncmp(spec, ROWS[k].name, n)) return apply(&ROWS[k], ROWS[k].name, eq + 1, o);
    char names[256] = "";
    for (size_t k = 0, at = 0; k < sizeof ROWS / sizeof *ROWS && at < sizeof names; k++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", k ? ", " : "", ROWS[k].name);
    return zp_fail(ZP_ERR_INVALID, "--backend-option \"%s\": expected NAME=VALUE, NAME one of %s", spec, names);
}

zp_status cli_backend_options_env(zp_backend_options *o) {
    for (size_t k = 0; k < sizeof ROWS / sizeof *ROWS; k++) {
        const char *v = getenv(ROWS[k].env);
        if (v && *v) ZP_TRY(apply(&ROWS[k], ROWS[k].env, v, o));
    }
    return ZP_OK;
}
