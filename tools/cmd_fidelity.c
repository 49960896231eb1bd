/* cmd_fidelity.c - `zipage fidelity --model DIR --dataset NAME [--limit 3] [--gen 512]
 * [--policies zipage,snapkv-d,... (default: every evicting policy)] [--nmax 2,4,8] [--block-size 64] [--window W]
 * [--kl-window 64] [--out F.csv]`: for each problem prompt (chat template, math system
 * prompt), a full-KV greedy trajectory of --gen tokens, then every (policy, N_max)
 * teacher-forced against full KV. Writes one CSV row per (policy, nmax, problem) and one
 * "ALL" row per (policy, nmax) with the means; prints the ALL rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "fidelity_set.h"
#include "policy.h" /* policy_find: each policy's authors' window; policy_registry: the default list */

typedef struct {
    const char *model, *dataset, *out;
    char policies[512];
    int *nmax, n_nmax, limit, gen, block, window, kl_window;
} fid_args;

static zp_status parse(int argc, char **argv, fid_args *a) {
    memset(a, 0, sizeof *a);
    size_t n = 0; /* default: every evicting policy of the registry */
    for (const zp_policy_ops *const *r = policy_registry(); *r; r++)
        if ((*r)->evicts && !(*r)->needs_stats &&
            n < sizeof a->policies) /* TriAttention needs its statistics file: named with --policies */
            n += (size_t)snprintf(a->policies + n, sizeof a->policies - n, "%s%s", n ? "," : "", (*r)->name);
    a->limit = 3; a->gen = 512; a->block = 64; a->window = 0; a->kl_window = 64; /* window 0: each policy's authors' */
    static int def_nmax[3] = {2, 4, 8};
    a->nmax = def_nmax; a->n_nmax = 3;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "--help")) { printf("usage: zipage fidelity --model DIR --dataset NAME [--limit 3] [--gen 512] [--policies A,B (default: every evicting policy)] [--nmax 2,4,8] [--block-size 64] [--window W (default: each policy's authors' window)] [--kl-window 64] [--out F.csv]\n"); exit(0); }
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

static zp_status run(const fid_args *a) {
    zp_engine_config full = zp_engine_config_default();
    full.model_dir = a->model;
    full.block_size = a->block;
    full.max_num_seqs = 1;
    fidelity_set set;
    ZP_TRY(fidelity_set_build(&full, a->dataset, NULL, a->limit, a->gen, 1, 1, &set)); /* thinking, the math instruction */
    FILE *out = a->out ? fopen(a->out, "w") : NULL;
    zp_status s = (a->out && !out) ? zp_fail(ZP_ERR_IO, "%s: cannot create", a->out) : ZP_OK;
    fidelity_result *per = calloc((size_t)(set.n ? set.n : 1), sizeof *per);
    if (s == ZP_OK && !per) s = zp_fail(ZP_ERR_OOM, "fidelity: out of memory");
    if (out) fprintf(out, "policy,nmax,block_size,window,problem,steps,mean_kl,worst_window_kl,agreement,first_disagreement,retained_share\n");
    printf("policy,nmax,problems,mean_kl,worst_window_kl,agreement,first_disagreement_mean,retained_share\n");
    char pol[512];
    snprintf(pol, sizeof pol, "%s", a->policies);
    for (char *p = strtok(pol, ","); s == ZP_OK && p; p = strtok(NULL, ","))
        for (int k = 0; s == ZP_OK && k < a->n_nmax; k++) {
            zp_engine_config cmp = full;
            cmp.policy = p;
            cmp.nmax = a->nmax[k];
            const zp_policy_ops *ops = policy_find(p);
            const int w = ops ? policy_window(ops, a->window) : a->window; /* unknown policy: the engine says so */
            cmp.window = w;
            fidelity_mean m;
            s = fidelity_set_compare(&set, &cmp, a->kl_window, per, &m);
            if (s != ZP_OK) break;
            for (int i = 0; out && i < set.n; i++)
                fprintf(out, "%s,%d,%d,%d,%s,%d,%.6g,%.6g,%.4f,%d,%.4f\n", p, a->nmax[k], a->block, w, set.ids[i], per[i].steps, per[i].mean_kl,
                        per[i].worst_window_kl, per[i].agreement, per[i].first_disagreement, per[i].retained_share);
            printf("%s,%d,%d,%.6g,%.6g,%.4f,%.1f,%.4f\n", p, a->nmax[k], set.n, m.mean_kl, m.worst_window_kl, m.agreement,
                   m.first_disagreement, m.retained_share);
            if (out) fprintf(out, "%s,%d,%d,%d,ALL,%d,%.6g,%.6g,%.4f,%.1f,%.4f\n", p, a->nmax[k], a->block, w, a->gen, m.mean_kl,
                             m.worst_window_kl, m.agreement, m.first_disagreement, m.retained_share);
            fflush(stdout);
        }
    if (out && fclose(out) != 0 && s == ZP_OK) s = zp_fail(ZP_ERR_IO, "%s: write failed", a->out);
    free(per);
    fidelity_set_free(&set);
    return s;
}

int cmd_fidelity(int argc, char **argv) {
    fid_args a;
    zp_status s = parse(argc, argv, &a);
    if (s == ZP_OK) s = run(&a);
    return s == ZP_OK ? 0 : cli_report("fidelity", s);
}
