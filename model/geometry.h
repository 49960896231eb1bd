/* geometry.h - the KV geometry of an engine, resolved and validated once: the block size, the
 * N_max cap and the budget it gives, the query window (its policy's authors' value when unset).
 * The scheduler, the KV storage and the compressor take it by const pointer instead of
 * recomputing nmax * block_size or nmax + 1 and checking the window again. It sizes no pool and
 * no query slots (engine_memory.c does). */
#ifndef ZP_GEOMETRY_H
#define ZP_GEOMETRY_H

#include "status.h"

struct zp_policy_ops;

typedef struct {
    int block_size;  /* tokens per KV block */
    int evicts;      /* the policy compresses (0: full KV, and every field below is 0) */
    int prompt_only; /* it compresses long prompts only, once (SnapKV): requests are not capped */
    int nmax;        /* N_max: blocks a compression keeps */
    int budget;      /* nmax * block_size: tokens a compression keeps */
    int cap_blocks;  /* nmax + 1: most blocks a capped request holds, its growth block included (0: no cap) */
    int window;      /* w: query-window rows, in [1, block_size] */
} zp_kv_geometry;

/* From a policy and the settings; window 0 takes the policy's authors' window (policy_window).
 * Errors name the value: block_size outside [1, 65536]; for an evicting policy nmax < 1 or a
 * window outside [1, block_size]. A policy that never evicts ignores nmax and window. */
zp_status zp_geometry_resolve(const struct zp_policy_ops *ops, int block_size, int nmax, int window, zp_kv_geometry *out);

#endif
