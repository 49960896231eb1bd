/* cmd_fidelity.c - `zipage fidelity --model DIR --dataset NAME [--limit 3] [--gen 512]
 * [--policies zipage,snapkv-d,...] [--nmax 2,4,8] [--block-size 64] [--window W]
 * [--kl-window 64] [--out F.csv]`: for each problem prompt (chat template, math system
 * prompt), a full-KV greedy trajectory of --gen tokens, then every (policy, N_max)
 * teacher-forced against full KV. Writes one CSV row per (policy, nmax, problem) and one
 * "ALL" row per (policy, nmax) with the means; prints the ALL rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "cli_common.h"
#include "dataset.h"
#include "fidelity.h"
#include "item_prompt.h"
#include "tokenizer.h"
#include "paths.h"
#include "policy.h" /* policy_find: each policy's authors' window */

typedef struct {
    const char *model, *dataset, *out;
    char policies[512];
    int *nmax, n_nmax, limit, gen, block, window, kl_window;
} fid_args;

static zp_status parse(int argc, char **argv, fid_args *a) {
    memset(a, 0, sizeof *a);
    snprintf(a->policies, sizeof a->policies, "streaming,h2o,snapkv-d,rkv,morphkv,zipage");
    a->limit = 3; a->gen = 512; a->block = 64; a->window = 0; a->kl_window = 64; /* window 0: each policy's authors' */
    static int def_nmax[3] = {2, 4, 8};
    a->nmax = def_nmax; a->n_nmax = 3;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "--help")) { printf("usage: zipage fidelity --model DIR --dataset NAME [--limit 3] [--gen 512] [--policies A,B] [--nmax 2,4,8] [--block-size 64] [--window W (default: each policy's authors' window)] [--kl-window 64] [--out F.csv]\n"); exit(0); }
        if (!(v = cli_value(argc, argv, &i))) return ZP_ERR_INVALID;
        if (!strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "--dataset")) a->dataset = v;
        else if (!strcmp(f, "--out")) a->out = v;
        else if (!strcmp(f, "--policies")) { ZP_TRY(cli_list(f, v)); snprintf(a->policies, sizeof a->policies, "%s", v); }
        else if (!strcmp(f, "--nmax")) ZP_TRY(cli_ids(f, v, &a->nmax, &a->n_nmax));
        else if (!strcmp(f, "--limit")) ZP_TRY(cli_int(f, v, 1, 100000, &a->limit));
        else if (!strcmp(f, "--gen")) ZP_TRY(cli_int(f, v, 1, 1 << 20, &a->gen));
        else if (!strcmp(f, "--block-size")) ZP_TRY(cli_int(f, v, 1, 65536, &a->block));
        else if (!strcmp(f, "--window")) ZP_TRY(cli_int(f, v, 1, 65536, &a->window));
        else if (!strcmp(f, "--kl-window")) ZP_TRY(cli_int(f, v, 1, 1 << 20, &a->kl_window));
        else return zp_fail(ZP_ERR_INVALID, "unknown flag %s", f);
    }
    if (!a->model || !a->dataset) return zp_fail(ZP_ERR_INVALID, "--model DIR and --dataset NAME are required");
    return ZP_OK;
}

static zp_status prompt_ids(const fid_args *a, zp_tokenizer *t, const ds_dataset *d, const ds_item *it, int **ids, int *n) {
    zp_chat_opts co = {ZP_CHAT_QWEN3, 1, NULL};
    ZP_TRY(zp_chat_detect(a->model, &co.family));
    return item_prompt(t, co, d, it, 1, NULL, ids, n); /* the math instruction, as the paper's runs */
}

static zp_status run(const fid_args *a) {
    zp_tokenizer *t;
    ZP_TRY(zp_tokenizer_load(a->model, &t));
    ds_dataset d;
    char err[ZP_DS_ERR];
    int *sel = NULL, n_sel = 0;
    if (ds_open(a->dataset, zp_path(ZP_PATH_DATASETS), &d, err) || ds_select(&d, NULL, a->limit, d.is_code, &sel, &n_sel, err)) {
        zp_tokenizer_free(t);
        return zp_fail(ZP_ERR_INVALID, "%s", err);
    }
    FILE *out = a->out ? fopen(a->out, "w") : NULL;
    zp_status s = (a->out && !out) ? zp_fail(ZP_ERR_IO, "%s: cannot create", a->out) : ZP_OK;
    if (out) fprintf(out, "policy,nmax,block_size,window,problem,steps,mean_kl,worst_window_kl,agreement,first_disagreement,retained_share\n");
    printf("policy,nmax,problems,mean_kl,worst_window_kl,agreement,first_disagreement_mean,retained_share\n");
    zp_engine_config full = zp_engine_config_default();
    full.model_dir = a->model;
    full.block_size = a->block;
    full.max_num_seqs = 1;
    fidelity_ref *refs = calloc((size_t)n_sel, sizeof *refs);
    if (!refs) s = zp_fail(ZP_ERR_OOM, "fidelity: out of memory");
    for (int i = 0; s == ZP_OK && i < n_sel; i++) { /* the full-KV side once per prompt */
        int *ids, n;
        s = prompt_ids(a, t, &d, &d.items[sel[i]], &ids, &n);
        if (s == ZP_OK) { s = fidelity_reference(&full, ids, n, a->gen, &refs[i]); free(ids); }
    }
    char pol[512];
    snprintf(pol, sizeof pol, "%s", a->policies);
    for (char *p = strtok(pol, ","); s == ZP_OK && p; p = strtok(NULL, ","))
        for (int k = 0; s == ZP_OK && k < a->n_nmax; k++) {
            zp_engine_config cmp = full;
            cmp.policy = p;
            cmp.nmax = a->nmax[k];
            const zp_policy_ops *ops = policy_find(p);
            const int w = a->window ? a->window : ops ? ops->default_window : 0; /* unknown policy: the engine says so */
            cmp.window = w;
            double sum[5] = {0};
            for (int i = 0; s == ZP_OK && i < n_sel; i++) {
                fidelity_result r;
                s = fidelity_compare(&refs[i], &cmp, a->kl_window, &r);
                if (s == ZP_OK) {
                    if (out) fprintf(out, "%s,%d,%d,%d,%s,%d,%.6g,%.6g,%.4f,%d,%.4f\n", p, a->nmax[k], a->block, w, d.items[sel[i]].id,
                                     r.steps, r.mean_kl, r.worst_window_kl, r.agreement, r.first_disagreement, r.retained_share);
                    sum[0] += r.mean_kl; sum[1] += r.worst_window_kl; sum[2] += r.agreement;
                    sum[3] += r.first_disagreement < 0 ? r.steps : r.first_disagreement; sum[4] += r.retained_share;
                }
            }
            if (s == ZP_OK) {
                printf("%s,%d,%d,%.6g,%.6g,%.4f,%.1f,%.4f\n", p, a->nmax[k], n_sel, sum[0] / n_sel, sum[1] / n_sel, sum[2] / n_sel, sum[3] / n_sel, sum[4] / n_sel);
                if (out) fprintf(out, "%s,%d,%d,%d,ALL,%d,%.6g,%.6g,%.4f,%.1f,%.4f\n", p, a->nmax[k], a->block, w, a->gen, sum[0] / n_sel,
                                 sum[1] / n_sel, sum[2] / n_sel, sum[3] / n_sel, sum[4] / n_sel);
                fflush(stdout);
            }
        }
    if (out) fclose(out);
    for (int i = 0; refs && i < n_sel; i++) fidelity_ref_free(&refs[i]);
    free(refs);
    free(sel);
    ds_free(&d);
    zp_tokenizer_free(t);
    return s;
}

int cmd_fidelity(int argc, char **argv) {
    fid_args a;
    zp_status s = parse(argc, argv, &a);
    if (s == ZP_OK) s = run(&a);
    return s == ZP_OK ? 0 : cli_report("fidelity", s);
}
