/* compress.h - runs an eviction policy over requests that outgrew their block cap.
 *
 * For each request, layer group (layer_stride layers) and KV head: gathers the keys of the
 * request's physical tokens, its window queries (query cache) and stored history scores
 * through backend ops, asks the policy which N_max * block_size tokens to keep, then compacts
 * K, V (and the score cache) of the group into the request's target blocks (planned by the
 * scheduler), in position order or, for a plan with order_score, in R-KV's score order. The scheduler's bookkeeping (release, new table) happens after,
 * in sched_compress_done, on the engine thread. On the CPU backend the policy's plan runs on
 * the host (scorer_plan_run); a backend with a `compress` op (CUDA) runs the same plan on the
 * device for all requests of a layer group at once, and only block tables cross to it.
 */
#ifndef ZP_COMPRESS_H
#define ZP_COMPRESS_H

#include <stdint.h>

#include "geometry.h"
#include "model.h"
#include "policy.h"
#include "scheduler.h"

/* Device path: requests of one backend `compress` call are chunked so their score rows stay
 * under ZP_COMPRESS_DEVICE_ROWS (25 bytes each: five float rows, the order, the keep flags); the
 * memory sizing reserves the work area. */
#define ZP_COMPRESS_DEVICE_ROWS (8u << 20)
#define ZP_COMPRESS_DEVICE_BYTES ((size_t)ZP_COMPRESS_DEVICE_ROWS * 25u * 3u / 2u + (64u << 20))

typedef struct {
    int64_t compressions;     /* request compressions */
    int64_t tokens_evicted;   /* tokens dropped, summed over layers and KV heads */
    double gather_seconds;    /* key, query and history gathers */
    double score_seconds;     /* policy scoring and top-k selection */
    double compact_seconds;   /* compaction */
    int64_t retained_sum;     /* tokens kept per request per compression, summed */
} zp_compress_stats;

typedef struct {
    zp_policy policy;
    zp_kv_geometry geo; /* block size, budget (N_max blocks) and window of the engine */
    int layer_stride;
    /* scratch sized for cap_n tokens */
    int cap_n;
    int device; /* 1: score and compact on the device when the backend has `compress` */
    int history_live; /* the plan's history_live: the stored history covers every token */
    int order_score;  /* the plan's order_score: survivors compacted in score order (R-KV) */
    float *keys, *queries, *qhead, *hist, *new_hist, *scratch;
    uint8_t *keep;
    int *order;       /* [layer_stride][Hkv][n] cache order of the kept tokens, with order_score */
    zp_compress_stats stats;
} zp_compressor;

zp_status compressor_init(zp_compressor *c, const char *policy, const char *params_json, const zp_kv_geometry *geo, int layer_stride);
void compressor_free(zp_compressor *c);
/* Compacts every request in seqs (each marked compressing, with a planned target). */
zp_status compressor_run(zp_compressor *c, zp_model *m, zp_kv_storage *kv, zp_seq *const *seqs, int n);

#endif
