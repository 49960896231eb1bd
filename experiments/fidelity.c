/* fidelity.c - see fidelity.h. */
#include "fidelity.h"

#include <math.h>
#include <stdio.h>  /* progress on stderr */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* isatty */
#include "clock.h"

double fidelity_kl(const float *ref, const float *cmp, int V) {
    double mr = -INFINITY, mc = -INFINITY, zr = 0, zc = 0, kl = 0;
    for (int i = 0; i < V; i++) { mr = fmax(mr, ref[i]); mc = fmax(mc, cmp[i]); }
    for (int i = 0; i < V; i++) { zr += exp(ref[i] - mr); zc += exp(cmp[i] - mc); }
    const double lzr = mr + log(zr), lzc = mc + log(zc);
    for (int i = 0; i < V; i++) {
        double lp = ref[i] - lzr, lq = cmp[i] - lzc;
        kl += exp(lp) * (lp - lq);
    }
    return kl > 0 ? kl : 0; /* rounding can leave -1e-16 */
}

int fidelity_argmax(const float *x, int V) {
    int b = 0;
    for (int i = 1; i < V; i++) if (x[i] > x[b]) b = i;
    return b;
}

typedef struct {
    float *logits;
    int step, vocab;
} capture;

static void hook(void *ctx, int64_t rid, int sample, int step, const float *logits, int vocab) {
    capture *c = ctx;
    (void)rid; (void)sample;
    memcpy(c->logits, logits, sizeof(float) * (size_t)vocab);
    c->step = step;
    c->vocab = vocab;
}

/* Progress of a teacher-forced pass on stderr: one live line on a terminal (every 0.5 s),
 * a line every 5 s otherwise, nothing for passes shorter than that. */
typedef struct {
    const char *what;
    double t0, last;
    int tty;
} progress;

static void progress_show(progress *p, int step, int steps) {
    const double t = zp_now();
    if (t - p->last < (p->tty ? 0.5 : 5.0)) return;
    fprintf(stderr, "%s  %s: step %d/%d, %.1f steps/s%s", p->tty ? "\r" : "", p->what, step, steps, step / (t - p->t0), p->tty ? "   " : "\n");
    p->last = t;
}

/* Runs one request to the end with forced tokens (or greedy when forced is NULL), capturing the
 * logits of every step into logits[step][V] when not NULL and the kv share into *share. */
static zp_status run_one(const zp_engine_config *cfg, const fidelity_ref *ref, const int *forced, int *out_tokens, float *logits,
                         double *share_sum) {
    zp_engine *e;
    ZP_TRY(zp_engine_init(cfg, &e));
    const int V = zp_engine_model_config(e)->vocab;
    capture c = {malloc(sizeof(float) * (size_t)V), -1, V};
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = ref->gen;
    sp.ignore_eos = 1;
    sp.forced = forced;
    sp.n_forced = forced ? ref->gen : 0;
    zp_status s = c.logits ? zp_engine_add_request(e, ref->prompt, ref->n_prompt, &sp, 0, 0, 0) : zp_fail(ZP_ERR_OOM, "fidelity: no memory");
    if (s == ZP_OK) zp_engine_set_logits_hook(e, hook, &c);
    progress pr = {forced ? "teacher-forcing the compressed cache" : "full-KV reference", zp_now(), zp_now(), isatty(2)};
    for (int step = 0; s == ZP_OK && zp_engine_has_unfinished(e); step++) {
        progress_show(&pr, c.step + 1, ref->gen);
        s = zp_engine_step(e);
        if (s == ZP_OK && c.step >= 0 && logits) memcpy(logits + (size_t)c.step * V, c.logits, sizeof(float) * (size_t)V);
        if (s == ZP_OK && share_sum && zp_engine_num_running(e)) *share_sum += zp_engine_kv_share(e);
    }
    if (pr.tty && pr.last > pr.t0) fputc('\n', stderr);
    zp_output o;
    if (s == ZP_OK && zp_engine_poll(e, &o, 1) == 1) {
        if (out_tokens) memcpy(out_tokens, o.tokens, sizeof(int) * (size_t)o.n_tokens);
        if (o.n_tokens != ref->gen) s = zp_fail(ZP_ERR_BACKEND, "fidelity: %d of %d tokens generated", o.n_tokens, ref->gen);
        zp_output_free(&o);
    }
    free(c.logits);
    zp_engine_free(e);
    return s;
}

void fidelity_ref_free(fidelity_ref *ref) {
    free(ref->prompt);
    free(ref->traj);
    free(ref->logits);
    memset(ref, 0, sizeof *ref);
}

zp_status fidelity_reference(const zp_engine_config *full, const int *prompt, int n_prompt, int gen, fidelity_ref *ref) {
    memset(ref, 0, sizeof *ref);
    zp_engine *probe;
    ZP_TRY(zp_engine_init(full, &probe)); /* vocabulary size */
    ref->vocab = zp_engine_model_config(probe)->vocab;
    zp_engine_free(probe);
    ref->gen = gen;
    ref->n_prompt = n_prompt;
    ref->prompt = malloc(sizeof(int) * (size_t)n_prompt);
    ref->traj = malloc(sizeof(int) * (size_t)gen);
    ref->logits = malloc(sizeof(float) * (size_t)gen * (size_t)ref->vocab);
    if (!ref->prompt || !ref->traj || !ref->logits) { fidelity_ref_free(ref); return zp_fail(ZP_ERR_OOM, "fidelity: no memory for %d x %d logits", gen, n_prompt); }
    memcpy(ref->prompt, prompt, sizeof(int) * (size_t)n_prompt);
    zp_status s = run_one(full, ref, NULL, ref->traj, ref->logits, NULL); /* greedy: the trajectory and its logits at once */
    if (s != ZP_OK) fidelity_ref_free(ref);
    return s;
}

void fidelity_summarize(const double *kl, const int *agree, int steps, int window, fidelity_result *r) {
    double sum = 0, worst = 0, win = 0;
    int same = 0, w = window > 0 && window < steps ? window : steps;
    r->steps = steps;
    r->first_disagreement = -1;
    for (int i = 0; i < steps; i++) {
        sum += kl[i];
        win += kl[i] - (i >= w ? kl[i - w] : 0);
        if (i >= w - 1 && win / w > worst) worst = win / w;
        same += agree[i];
        if (!agree[i] && r->first_disagreement < 0) r->first_disagreement = i;
    }
    r->mean_kl = steps ? sum / steps : 0;
    r->worst_window_kl = worst;
    r->agreement = steps ? (double)same / steps : 1;
}

zp_status fidelity_compare(const fidelity_ref *ref, const zp_engine_config *cmp, int window, fidelity_result *r) {
    memset(r, 0, sizeof *r);
    zp_engine_config cc = *cmp;
    cc.async_compress = 0;
    const int V = ref->vocab;
    float *logits = malloc(sizeof(float) * (size_t)ref->gen * (size_t)V);
    double *kl = calloc((size_t)ref->gen, sizeof(double)), share = 0;
    int *agree = calloc((size_t)ref->gen, sizeof(int));
    zp_status s = (logits && kl && agree) ? run_one(&cc, ref, ref->traj, NULL, logits, &share) : zp_fail(ZP_ERR_OOM, "fidelity: out of memory");
    if (s == ZP_OK) {
        for (int i = 0; i < ref->gen; i++) {
            const float *a = ref->logits + (size_t)i * V, *b = logits + (size_t)i * V;
            kl[i] = fidelity_kl(a, b, V);
            agree[i] = fidelity_argmax(a, V) == fidelity_argmax(b, V);
        }
        fidelity_summarize(kl, agree, ref->gen, window, r);
        r->retained_share = share / ref->gen;
    }
    free(logits); free(kl); free(agree);
    return s;
}
