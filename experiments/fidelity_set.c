/* fidelity_set.c - see fidelity_set.h. */
#include "fidelity_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "dataset.h"
#include "item_prompt.h"
#include "paths.h"
#include "tokenizer.h"

void fidelity_set_free(fidelity_set *set) {
    for (int i = 0; i < set->n; i++) fidelity_ref_free(&set->refs[i]);
    free(set->refs);
    free(set->ids);
    memset(set, 0, sizeof *set);
}

zp_status fidelity_set_build(const zp_engine_config *full, const char *dataset, const char *ids, int limit, int gen, int thinking,
                             int math_system, fidelity_set *set) {
    memset(set, 0, sizeof *set);
    ds_dataset d;
    char err[ZP_DS_ERR];
    int *sel = NULL, n = 0;
    if (ds_open(dataset, zp_path(ZP_PATH_DATASETS), &d, err)) return zp_fail(ZP_ERR_INVALID, "%s", err);
    if (ds_select(&d, ids && *ids ? ids : NULL, limit, d.is_code, &sel, &n, err)) {
        ds_free(&d);
        return zp_fail(ZP_ERR_INVALID, "%s", err);
    }
    zp_tokenizer *t = NULL;
    zp_chat_opts co = {ZP_CHAT_QWEN3, thinking, NULL};
    zp_status s = zp_tokenizer_load(full->model_dir, &t);
    if (s == ZP_OK) s = zp_chat_detect(full->model_dir, &co.family);
    set->refs = calloc((size_t)(n ? n : 1), sizeof *set->refs);
    set->ids = calloc((size_t)(n ? n : 1), sizeof *set->ids);
    if (s == ZP_OK && (!set->refs || !set->ids)) s = zp_fail(ZP_ERR_OOM, "fidelity: no memory for %d references", n);
    for (int i = 0; s == ZP_OK && i < n; i++) { /* the full-KV side once per item */
        const ds_item *it = &d.items[sel[i]];
        int *pids = NULL, m = 0;
        s = item_prompt(t, co, &d, it, math_system, NULL, &pids, &m);
        if (s == ZP_OK) s = fidelity_reference(full, pids, m, gen, &set->refs[i]);
        if (s == ZP_OK) { snprintf(set->ids[i], sizeof set->ids[i], "%s", it->id); set->n++; }
        free(pids);
    }
    if (t) zp_tokenizer_free(t);
    free(sel);
    ds_free(&d);
    if (s != ZP_OK) fidelity_set_free(set);
    return s;
}

zp_status fidelity_set_compare(const fidelity_set *set, const zp_engine_config *cmp, int kl_window, fidelity_result *per,
                               fidelity_mean *mean) {
    memset(mean, 0, sizeof *mean);
    for (int i = 0; i < set->n; i++) {
        fidelity_result r;
        ZP_TRY(fidelity_compare(&set->refs[i], cmp, kl_window, &r));
        if (per) per[i] = r;
        mean->mean_kl += r.mean_kl;
        mean->worst_window_kl += r.worst_window_kl;
        mean->agreement += r.agreement;
        mean->first_disagreement += r.first_disagreement < 0 ? r.steps : r.first_disagreement;
        mean->retained_share += r.retained_share;
    }
    const double n = set->n ? set->n : 1;
    mean->mean_kl /= n, mean->worst_window_kl /= n, mean->agreement /= n, mean->first_disagreement /= n, mean->retained_share /= n;
    return ZP_OK;
}
