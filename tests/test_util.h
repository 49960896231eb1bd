/* test_util.h - tiny assertion helpers for the CTest executables, plus fixtures:
 * checkpoints written by zp_mkmodel into the build tree, cached per preset. */
#ifndef ZP_TEST_UTIL_H
#define ZP_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h" /* zp_backend, zp_act_type: the buffer helpers */
#include "status.h"

extern int zp_test_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            zp_test_failures++;                                                      \
        }                                                                            \
    } while (0)

#define CHECK_OK(expr)                                                                              \
    do {                                                                                            \
        zp_status s_ = (expr);                                                                      \
        if (s_ != ZP_OK) {                                                                          \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr,              \
                    zp_status_name(s_), zp_last_error());                                           \
            zp_test_failures++;                                                                     \
        }                                                                                           \
    } while (0)

/* Expects a failure status whose message contains `needle`. */
#define CHECK_FAILS(expr, status, needle) zp_check_fails((expr), (status), (needle), #expr, __FILE__, __LINE__)
void zp_check_fails(zp_status got, zp_status want, const char *needle, const char *expr, const char *file, int line);

#define CHECK_NEAR(a, b, tol)                                                                         \
    do {                                                                                              \
        double a_ = (a), b_ = (b);                                                                    \
        if (!(fabs(a_ - b_) <= (tol))) {                                                              \
            fprintf(stderr, "%s:%d: %s = %.9g vs %s = %.9g (tol %g)\n", __FILE__, __LINE__, #a, a_, #b, b_, \
                    (double)(tol));                                                                   \
            zp_test_failures++;                                                                       \
        }                                                                                             \
    } while (0)

int zp_test_finish(const char *name);
/* Path of a checkpoint of preset `preset` with seed 1 (bf16), written on first use. */
const char *zp_test_model(const char *preset);
/* ZP_TEST_TMP/name/config.json of a shape the presets lack: 8 query heads and 4 KV heads (a
 * KV head per rank at tp 4), hidden 256, 2 layers, of architecture arch and model_type type,
 * extra appended to the JSON object (e.g. ", \"attention_bias\": true"). Up to 3 paths live at once. */
const char *zp_test_kv4_config(const char *name, const char *arch, const char *type, const char *extra);
/* A backend buffer of n elements of `type`: filled from the host floats x (zp_test_up), or as
 * allocated (zp_test_buf); a failure counts as a failed check. */
void *zp_test_up(zp_backend *be, const float *x, zp_act_type type, size_t n);
void *zp_test_buf(zp_backend *be, zp_act_type type, size_t n);
/* Max |a-b| over n floats. */
double zp_max_abs_diff(const float *a, const float *b, size_t n);
double zp_max_abs(const float *a, size_t n);
/* A TriAttention statistics file (compress/trig_stats.h) of `layers` x `heads` query heads x `half`
 * RoPE pairs with deterministic values, written as ZP_TEST_TMP/name.safetensors; returns its path
 * (static storage). */
const char *zp_test_trig_stats(const char *name, int layers, int heads, int half);
/* A logits row's top-two gap over its max |logit| (how near a tie its greedy token is). */
float zp_top_two_gap(const float *row, int V);

#endif
