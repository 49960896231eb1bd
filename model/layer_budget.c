/* layer_budget.c - per-layer budgets inside the N_max cap (layer_budget.h): PyramidKV's
 * schedule, its rounding to whole blocks and the block-table views it needs. */
#include "layer_budget.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Python's a // b for b > 0 (the authors' integer division floors). */
static long long floor_div(long long a, long long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

void zp_pyramid_caps(int P, int w, int L, int beta, int q_len, int *cap) {
    long long min_num = floor_div(P - w, beta), max_num = (long long)(P - w) * 2 - min_num;
    if (max_num >= (long long)q_len - w) { /* a prompt shorter than layer 0's capacity: layer 0 keeps it all */
        max_num = (long long)q_len - w;
        min_num = (long long)(P - w) * 2 - max_num;
    }
    const long long steps = floor_div(max_num - min_num, L - 1);
    for (int l = 0; l < L; l++) cap[l] = (int)(max_num - l * steps);
}

/* Layer 0's budget of a schedule of prompt capacity w + x: its cap 2x - x // beta, plus w. */
static long long layer0_budget(long long x, int w, int beta) { return 2 * x - x / beta + w; }

int zp_pyramid_total_for_cap(int c, int w, int beta) {
    long long lo = 0, hi = c; /* layer0_budget grows with x: the largest x that fits */
    while (lo < hi) {
        const long long mid = (lo + hi + 1) / 2;
        if (layer0_budget(mid, w, beta) <= c) lo = mid;
        else hi = mid - 1;
    }
    return lo > 0 ? (int)lo + w : 0;
}

void zp_layer_round_blocks(const int *exact, int L, int bs, int nmax, int *out) {
    for (int l = 0; l < L; l++) {
        long long b = (2LL * exact[l] + bs) / (2LL * bs); /* the nearest whole block, half up */
        b = b < 1 ? 1 : b > nmax ? nmax : b;
        out[l] = (int)b * bs;
    }
}

zp_status zp_layer_budget_check(const char *kind, int beta, const zp_kv_geometry *geo, zp_layer_budget_kind *out) {
    if (!kind || !strcmp(kind, "uniform")) *out = ZP_LAYERS_UNIFORM;
    else if (!strcmp(kind, "pyramid")) *out = ZP_LAYERS_PYRAMID;
    else return zp_fail(ZP_ERR_INVALID, "layer_budget \"%s\" is unknown (known: uniform, pyramid)", kind);
    if (*out != ZP_LAYERS_PYRAMID) return ZP_OK;
    if (beta < 1 || beta > 1000) return zp_fail(ZP_ERR_INVALID, "pyramid_beta %d must be in [1, 1000]", beta);
    if (!geo->evicts) return zp_fail(ZP_ERR_INVALID, "layer_budget pyramid needs an evicting policy (full KV keeps every token)");
    if (geo->nmax < 2) return zp_fail(ZP_ERR_INVALID, "layer_budget pyramid needs nmax >= 2 (nmax %d leaves one block per layer)", geo->nmax);
    return ZP_OK;
}

/* Views: one per distinct dead count, in order of first use (view 0: none dead). */
static zp_status plan_views(zp_layer_plan *p, int nmax, int bs) {
    p->dead = calloc((size_t)p->n_layers + 1, sizeof *p->dead);
    ZP_CHECK_ALLOC(p->dead);
    p->n_views = 1; /* view 0: nothing dead (requests not yet compressed, and layers at the cap) */
    for (int l = 0; l < p->n_layers; l++) {
        const int dead = nmax - p->budget[l] / bs;
        int v = 0;
        while (v < p->n_views && p->dead[v] != dead) v++;
        if (v == p->n_views) p->dead[p->n_views++] = dead;
        p->view[l] = v;
        p->budget_sum += p->budget[l];
        p->dead_sum += dead;
    }
    return ZP_OK;
}

zp_status zp_layer_plan_resolve(const char *kind, int beta, const zp_kv_geometry *geo, int n_layers, zp_layer_plan *out) {
    return zp_layer_plan_resolve_some(kind, beta, geo, n_layers, NULL, out);
}

zp_status zp_layer_plan_resolve_some(const char *kind, int beta, const zp_kv_geometry *geo, int n_layers, const uint8_t *skip,
                                     zp_layer_plan *out) {
    memset(out, 0, sizeof *out);
    ZP_TRY(zp_layer_budget_check(kind, beta, geo, &out->kind));
    int n = 0; /* the layers the schedule runs over */
    for (int l = 0; l < n_layers; l++) n += !(skip && skip[l]);
    if (out->kind == ZP_LAYERS_PYRAMID && n < 2)
        return zp_fail(ZP_ERR_INVALID, "layer_budget pyramid needs at least 2 layers it compresses (the model has %d)", n);
    out->n_layers = n_layers;
    out->budget = malloc(sizeof(int) * (size_t)n_layers);
    out->view = calloc((size_t)n_layers, sizeof(int));
    if (!out->budget || !out->view) {
        zp_layer_plan_free(out);
        return zp_fail(ZP_ERR_OOM, "layer budgets: no memory for %d layers", n_layers);
    }
    for (int l = 0; l < n_layers; l++) out->budget[l] = geo->budget;
    if (out->kind == ZP_LAYERS_PYRAMID) {
        const int P = zp_pyramid_total_for_cap(geo->budget, geo->window, beta);
        if (P == 0) {
            zp_layer_plan_free(out);
            return zp_fail(ZP_ERR_INVALID, "layer_budget pyramid: a cap of %d tokens holds no schedule with window %d", geo->budget, geo->window);
        }
        int *caps = malloc(sizeof(int) * (size_t)n);
        if (!caps) {
            zp_layer_plan_free(out);
            return zp_fail(ZP_ERR_OOM, "layer budgets: no memory for %d layers", n);
        }
        zp_pyramid_caps(P, geo->window, n, beta, INT_MAX / 2, caps); /* compressions run past the cap: no clamp */
        for (int i = 0; i < n; i++) caps[i] += geo->window;
        zp_layer_round_blocks(caps, n, geo->block_size, geo->nmax, caps);
        for (int l = 0, i = 0; l < n_layers; l++) /* the schedule's layers in order; a skipped one keeps the cap */
            if (!(skip && skip[l])) out->budget[l] = caps[i++];
        free(caps);
        out->pyramid_total = P;
    }
    zp_status s = plan_views(out, geo->evicts ? geo->nmax : 0, geo->block_size);
    if (s != ZP_OK) zp_layer_plan_free(out);
    return s;
}

int zp_layer_view_table(const int *blocks, int n_blocks, int nmax, int dead, int *out) {
    int k = 0;
    for (int i = 0; i < n_blocks; i++)
        if (i < nmax - dead || i >= nmax) out[k++] = blocks[i];
    return k;
}

void zp_layer_plan_free(zp_layer_plan *p) {
    free(p->budget);
    free(p->view);
    free(p->dead);
    memset(p, 0, sizeof *p);
}
