/* passkey.c - the passkey items and their grading (passkey.h). */
#include "passkey.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */

int passkey_is_name(const char *name) { return !strcmp(name, "passkey") || !strncmp(name, "passkey-", 8); }

/* splitmix64: the key of item i, fixed for every machine */
static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* van der Corput base 2: i's bits mirrored behind the binary point */
static double vdc(unsigned i) {
    double v = 0, f = 0.5;
    for (; i; i >>= 1, f *= 0.5) v += (i & 1) * f;
    return v;
}

static int parse_tokens(const char *name, int *tokens, char *err) {
    *tokens = PASSKEY_DEFAULT_TOKENS;
    if (!strcmp(name, "passkey")) return 0;
    const char *p = name + 8;
    char *end;
    long v = strtol(p, &end, 10);
    if (!isdigit((unsigned char)*p) || *end || v < 64 || v > 1048576) {
        snprintf(err, ZP_DS_ERR, "dataset \"%.100s\": a passkey dataset is \"passkey\" (512 tokens) or \"passkey-N\", N a prompt length in tokens, 64..1048576", name);
        return -1;
    }
    *tokens = (int)v;
    return 0;
}

int passkey_open(const char *name, ds_dataset *d, char *err) {
    memset(d, 0, sizeof *d);
    int tokens;
    if (parse_tokens(name, &tokens, err)) return -1;
    snprintf(d->name, sizeof d->name, "passkey-%d", tokens);
    d->context_tokens = tokens;
    d->items = calloc(PASSKEY_ITEMS, sizeof *d->items);
    if (!d->items) { snprintf(err, ZP_DS_ERR, "%s: out of memory", d->name); return -1; }
    for (int i = 0; i < PASSKEY_ITEMS; i++) {
        ds_item *it = &d->items[d->n++];
        char id[32], key[16], needle[128];
        snprintf(id, sizeof id, "pk-%02d", i);
        snprintf(key, sizeof key, "%05d", 10000 + (int)(mix((uint64_t)i) % 90000));
        snprintf(needle, sizeof needle, PASSKEY_NEEDLE_FMT, key);
        it->id = strdup(id);
        it->answer = strdup(key);
        it->problem = strdup(needle);
        it->depth = vdc((unsigned)i);
        if (!it->id || !it->answer || !it->problem) { ds_free(d); snprintf(err, ZP_DS_ERR, "%s: out of memory", name); return -1; }
    }
    return 0;
}

static int contains_nocase(const char *s, const char *sub) {
    const size_t n = strlen(sub);
    for (; *s; s++)
        if (!strncasecmp(s, sub, n)) return 1;
    return n == 0;
}

void passkey_grade(const char *output, const char *answer, int *correct, char **extracted) {
    *correct = contains_nocase(output, answer);
    *extracted = NULL;
    const char *p = output;
    while (*p && !isdigit((unsigned char)*p)) p++;
    size_t n = 0;
    while (isdigit((unsigned char)p[n])) n++;
    if (n) *extracted = strndup(p, n);
}
