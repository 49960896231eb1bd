/* prompt_logits.c - the logits of one prompt's prefill through a model alone: what `zipage
 * logits` writes and the transformers comparisons read. No pool, scheduler, compression or
 * sampling; a private KV store of exactly the prompt's length (in kv_dtype's type). */
#include <stdlib.h>

#include "engine.h"
#include "model.h"
#include "kv_scales.h" /* zp_kv_scales_parse */

zp_status zp_prompt_logits(const zp_engine_config *cfg, const int *prompt, int n_prompt, int all_positions, float **logits, int *rows,
                           int *vocab) {
    *logits = NULL;
    if (n_prompt <= 0) return zp_fail(ZP_ERR_INVALID, "logits: an empty prompt");
    if (cfg->tp > 1) return zp_fail(ZP_ERR_INVALID, "logits: the model alone runs on one device (tp %d refused)", cfg->tp);
    int fp8, calibrate;
    ZP_TRY(zp_kv_dtype_parse(cfg->kv_dtype, &fp8));
    ZP_TRY(zp_kv_scales_parse(cfg->kv_scales, fp8, &calibrate));
    zp_backend *be;
    ZP_TRY(zp_backend_create(cfg->device, cfg->precision, cfg->n_threads, &cfg->backend, &be));
    zp_model *m = NULL;
    zp_kv_storage kv = {0};
    zp_status s = zp_model_load(cfg->model_dir, be, &m);
    const int T = n_prompt, bs = 16, nb = (T + bs - 1) / bs, R = all_positions ? T : 1;
    int *pos = malloc(sizeof(int) * (size_t)T * 3), *bt = malloc(sizeof(int) * (size_t)nb);
    float *lg = NULL;
    if (s == ZP_OK && (!pos || !bt)) s = zp_fail(ZP_ERR_OOM, "logits: out of memory");
    if (s == ZP_OK) s = zp_model_kv_alloc_typed(m, nb, bs, fp8, calibrate, &kv);
    if (s == ZP_OK && !(lg = malloc(sizeof(float) * (size_t)R * (size_t)m->cfg.vocab))) s = zp_fail(ZP_ERR_OOM, "logits: out of memory");
    if (s == ZP_OK) {
        int *slots = pos + T, *out_rows = pos + 2 * T, q0 = 0, kvl = T;
        for (int t = 0; t < T; t++) { pos[t] = t; slots[t] = t; out_rows[t] = all_positions ? t : T - 1; }
        for (int b = 0; b < nb; b++) bt[b] = b;
        zp_batch b = {.n_tokens = T, .n_seqs = 1, .token_ids = prompt, .positions = pos, .slot_mapping = slots, .seq_q_start = &q0,
                      .seq_q_len = &T, .seq_kv_len = &kvl, .block_tables = bt, .max_blocks = nb, .n_out = R, .out_rows = out_rows,
                      .is_prefill = 1, .n_views = 1};
        s = zp_model_forward(m, &b, &kv, lg);
    }
    if (s == ZP_OK) { *logits = lg; *rows = R; *vocab = m->cfg.vocab; }
    else free(lg);
    free(pos);
    free(bt);
    if (m) { zp_model_kv_free(m, &kv); zp_model_free(m); }
    be->destroy(be);
    return s;
}
