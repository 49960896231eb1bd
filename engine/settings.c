/* settings.c - the engine settings' descriptors and the typed setters every front end uses
 * (settings.h). No front end's syntax here: flags and JSON keys are named by the callers. */
#include "settings.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h" /* zp_engine_config */

#define ZP_ENGINE_SETTING_ROW(name, type, field, def, def_str, lo, hi, flags, help) \
    {#name, type, offsetof(zp_engine_config, field), 0, (double)(def), (double)(lo), (double)(hi), def_str, flags, help},
const zp_setting zp_engine_settings[] = {ZP_ENGINE_SETTINGS(ZP_ENGINE_SETTING_ROW)};
const int zp_engine_n_settings = (int)(sizeof zp_engine_settings / sizeof *zp_engine_settings);

static void *field(const zp_setting *s, void *base) { return (char *)base + s->offset; }

static void set_str(const zp_setting *s, void *base, const char *v) {
    if (s->size) snprintf((char *)field(s, base), s->size, "%s", v ? v : "");
    else *(const char **)field(s, base) = v;
}

void zp_settings_defaults(const zp_setting *t, int n, void *base) {
    for (int i = 0; i < n; i++) {
        const zp_setting *s = &t[i];
        void *f = field(s, base);
        switch (s->type) {
        case ZP_SET_INT: case ZP_SET_BOOL: *(int *)f = (int)s->def; break;
        case ZP_SET_I64: *(int64_t *)f = (int64_t)s->def; break;
        case ZP_SET_FLOAT: *(float *)f = (float)s->def; break;
        case ZP_SET_STR: set_str(s, base, s->def_str); break;
        }
    }
}

const zp_setting *zp_setting_find(const zp_setting *t, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return &t[i];
    return NULL;
}

zp_status zp_setting_set_number(const zp_setting *s, const char *what, double v, void *base) {
    const int whole = s->type != ZP_SET_FLOAT;
    if (s->type == ZP_SET_STR) return zp_fail(ZP_ERR_INVALID, "%s must be a string", what);
    if (!(v >= s->lo && v <= s->hi)) return zp_fail(ZP_ERR_INVALID, "%s must be a number in [%g, %g] (got %g)", what, s->lo, s->hi, v);
    if (whole && v != (double)(int64_t)v) return zp_fail(ZP_ERR_INVALID, "%s must be a whole number (got %g)", what, v);
    void *f = field(s, base);
    if (s->type == ZP_SET_I64) *(int64_t *)f = (int64_t)v;
    else if (s->type == ZP_SET_FLOAT) *(float *)f = (float)v;
    else *(int *)f = (int)v;
    return ZP_OK;
}

zp_status zp_setting_parse(const zp_setting *s, const char *what, const char *text, void *base) {
    if (s->type == ZP_SET_STR) {
        if (s->size && strlen(text) >= s->size) return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is longer than %zu characters", what, text, s->size - 1);
        set_str(s, base, text);
        return ZP_OK;
    }
    if (s->type == ZP_SET_BOOL) {
        const int on = !strcmp(text, "1") || !strcmp(text, "true"), off = !strcmp(text, "0") || !strcmp(text, "false");
        if (!on && !off) return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is not 0, 1, true or false", what, text);
        *(int *)field(s, base) = on;
        return ZP_OK;
    }
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (errno || end == text || *end)
        return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is not a %s", what, text, s->type == ZP_SET_FLOAT ? "number" : "whole number");
    return zp_setting_set_number(s, what, v, base);
}

int zp_setting_json(const zp_setting *s, const void *base, char *out, size_t n) {
    const void *f = (const char *)base + s->offset;
    int k = 0;
    switch (s->type) {
    case ZP_SET_INT: k = snprintf(out, n, "%d", *(const int *)f); break;
    case ZP_SET_BOOL: k = snprintf(out, n, "%s", *(const int *)f ? "true" : "false"); break;
    case ZP_SET_I64: k = snprintf(out, n, "%lld", (long long)*(const int64_t *)f); break;
    case ZP_SET_FLOAT: k = snprintf(out, n, "%g", *(const float *)f); break;
    case ZP_SET_STR: {
        const char *v = s->size ? (const char *)f : *(const char *const *)f;
        if (!v) return snprintf(out, n, "null") < (int)n;
        size_t at = 0;
        for (; *v && at + 8 < n; v++) { /* quotes, backslashes and control characters escaped */
            const unsigned char ch = (unsigned char)*v;
            if (!at) out[at++] = '"';
            if (ch == '"' || ch == '\\') { out[at++] = '\\'; out[at++] = (char)ch; }
            else if (ch < 0x20) at += (size_t)snprintf(out + at, n - at, "\\u%04x", ch);
            else out[at++] = (char)ch;
        }
        if (*v || n < 3) { if (n) out[0] = 0; return 0; }
        if (!at) out[at++] = '"';
        out[at++] = '"';
        out[at] = 0;
        return 1;
    }
    }
    return k >= 0 && (size_t)k < n;
}

void zp_setting_flag(const zp_setting *s, char *out, size_t n) {
    snprintf(out, n, "--%s%s", s->type == ZP_SET_BOOL && s->def ? "no-" : "", s->name);
    for (char *p = out + 2; *p; p++)
        if (*p == '_') *p = '-';
}
