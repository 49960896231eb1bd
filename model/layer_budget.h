/* layer_budget.h - per-layer budgets inside the N_max cap (PyramidKV's schedule), resolved once
 * per engine, and the layer views of the block table they need.
 *
 * Every layer of a request still holds the same N_max (+ 1 growth) blocks: the pool and the
 * scheduler do not change. Layer l keeps B(l) <= C = N_max x block_size tokens, a whole number
 * of blocks, compacted into the FIRST B(l) / bs blocks of the request's N_max (so compaction in
 * position order stays safe in place); the next dead(l) = N_max - B(l) / bs blocks are dead for
 * that layer, and the tokens after the cap (the growth block, a prompt-only policy's decoding)
 * follow. Once a request is compressed, attention and the history of layer l read its block
 * table without the dead blocks, with dead(l) x bs fewer tokens: a "view" of the block table
 * (zp_batch.layer_view), one per distinct dead count. So the kernels are unchanged; memory is
 * that of the cap C, the retained tokens are the schedule's (their mean over layers is about
 * half of C for PyramidKV). Memory-equal per-layer budgets need per-layer block tables
 * (docs/budgets.md); this form is not that.
 * Does not score or select (the policy's plan does, per layer at its budget). */
#ifndef ZP_LAYER_BUDGET_H
#define ZP_LAYER_BUDGET_H

#include <stdint.h>

#include "geometry.h"
#include "status.h"

typedef enum { ZP_LAYERS_UNIFORM, ZP_LAYERS_PYRAMID } zp_layer_budget_kind;

typedef struct {
    zp_layer_budget_kind kind;
    int n_layers, n_views;
    int *budget;       /* [L] tokens layer l keeps: a multiple of block_size in [block_size, C] */
    int *view;         /* [L] the block-table view layer l reads once its request is compressed */
    int *dead;         /* [n_views] blocks after a view's first ones that it leaves out (view 0: none) */
    int pyramid_total; /* PyramidKV's own prompt capacity P (window included) the schedule is derived from; 0 uniform */
    int64_t budget_sum; /* sum of budget[] over the layers */
    int dead_sum;       /* sum over the layers of their view's dead blocks */
} zp_layer_plan;

/* kind "uniform" (or NULL) or "pyramid" (beta: PyramidKV's, its authors' 20), for any
 * evicting policy. Errors name the value: an unknown kind, a beta outside [1, 1000]; pyramid
 * with full KV, with fewer than 2 layers, or with N_max below 2 (one block per layer cannot
 * differ). */
zp_status zp_layer_plan_resolve(const char *kind, int beta, const zp_kv_geometry *geo, int n_layers, zp_layer_plan *out);
/* The same with the layers skip[l] != 0 left out of the schedule (gpt-oss's sliding layers, never
 * compressed): the pyramid runs over the others in order, a skipped layer keeps the cap (view 0). */
zp_status zp_layer_plan_resolve_some(const char *kind, int beta, const zp_kv_geometry *geo, int n_layers, const uint8_t *skip,
                                     zp_layer_plan *out);
void zp_layer_plan_free(zp_layer_plan *p);
/* Checks what can be checked before a model is loaded: kind, and for pyramid beta, an evicting
 * policy and N_max >= 2 (the errors of zp_layer_plan_resolve). */
zp_status zp_layer_budget_check(const char *kind, int beta, const zp_kv_geometry *geo, zp_layer_budget_kind *out);
/* The block table of a compressed request as a view with `dead` blocks leaves it: blocks
 * [0, nmax - dead) and [nmax, n_blocks) into out; returns its length. dead 0 copies the table. */
int zp_layer_view_table(const int *blocks, int n_blocks, int nmax, int dead, int *out);

/* PyramidKV's per-layer capacity of non-window tokens as its authors compute it
 * (Zefan-Cai/KVCache-Factory @ c97f9d7, pyramidkv/pyramidkv_utils.py:449-459): prompt capacity
 * P (window w included), L layers, beta, prompt length q_len. cap[L] out. */
void zp_pyramid_caps(int P, int w, int L, int beta, int q_len, int *cap);
/* The largest P whose layer-0 budget (its cap + w) fits c tokens: the schedule a cap of c holds. */
int zp_pyramid_total_for_cap(int c, int w, int beta);
/* exact[L] tokens, each rounded to the nearest whole block of bs (half up) and clamped to
 * [1, nmax] blocks: out[L] tokens (may be exact). A non-increasing schedule stays so; the
 * total moves by at most half a block per layer, more where the clamp lifts a layer to one. */
void zp_layer_round_blocks(const int *exact, int L, int bs, int nmax, int *out);

#endif
