/* sampler.c - Philox4x32-10 and greedy / temperature / top-k / top-p sampling. */
#include "sampler.h"

#include "philox.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

zp_sampling_params zp_sampling_default(void) {
    zp_sampling_params p;
    memset(&p, 0, sizeof p);
    p.temperature = 0.0f;
    p.top_p = 1.0f;
    p.repetition_penalty = 1.0f;
    p.max_tokens = 64;
    return p;
}

void zp_logprobs_compute(const float *logits, int V, int token, int k, zp_token_logprobs *out) {
    k = k < 0 ? 0 : k > ZP_MAX_LOGPROBS ? ZP_MAX_LOGPROBS : k > V ? V : k;
    float mx = -INFINITY;
    for (int i = 0; i < V; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0; /* log-sum-exp in double over the 151k-token vocabularies */
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    const double lse = (double)mx + log(sum);
    int n = 0; /* top k by insertion into a list kept in descending order (ties: lower id first) */
    for (int i = 0; i < V && k > 0; i++) {
        if (n == k && !(logits[i] > logits[out->top_id[n - 1]])) continue;
        int p = n < k ? n++ : k - 1;
        while (p > 0 && logits[i] > logits[out->top_id[p - 1]]) { out->top_id[p] = out->top_id[p - 1]; p--; }
        out->top_id[p] = i;
    }
    out->n_top = n;
    for (int j = 0; j < n; j++) out->top_logprob[j] = (float)((double)logits[out->top_id[j]] - lse);
    out->logprob = token >= 0 && token < V ? (float)((double)logits[token] - lse) : -INFINITY;
}

void zp_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) { zp_philox4x32_10(ctr, key, out); }

float zp_rng_uniform(uint64_t seed, uint64_t request_id, uint32_t sample_index, uint32_t step) {
    return zp_philox_uniform(seed, request_id, sample_index, step);
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

typedef struct { float p; int id; } cand;

static int cand_desc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id;
}

static void apply_penalty(float *logits, const zp_sampling_params *sp, const int *hist, int n_hist, int V) {
    if (sp->repetition_penalty == 1.0f) return;
    for (int i = 0; i < n_hist; i++) {
        int t = hist[i];
        if (t < 0 || t >= V) continue;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = hist[j] == t;
        if (seen) continue;
        logits[t] = logits[t] > 0 ? logits[t] / sp->repetition_penalty : logits[t] * sp->repetition_penalty;
    }
}

int zp_sample_token(float *logits, int V, const zp_sampling_params *sp, const int *history, int n_hist, float u,
                    float *scratch) {
    apply_penalty(logits, sp, history, n_hist, V);
    if (sp->temperature <= 0.0f || sp->top_k == 1) return argmax(logits, V);
    float mx = logits[argmax(logits, V)], sum = 0.f;
    float *p = scratch;
    for (int i = 0; i < V; i++) { p[i] = expf((logits[i] - mx) / sp->temperature); sum += p[i]; }
    int filter = (sp->top_k > 0 && sp->top_k < V) || sp->top_p < 1.0f;
    if (!filter) { /* inverse CDF over the vocabulary in id order */
        float target = u * sum, acc = 0.f;
        for (int i = 0; i < V; i++) { acc += p[i]; if (acc > target) return i; }
        return argmax(p, V);
    }
    /* Only tokens at or above a threshold can be in the top-k / nucleus: find by bisection the
     * largest threshold whose candidate set still holds k tokens or top_p of the mass, and sort
     * just those (a prefix of the full descending order, ties included: same result). */
    const int k = (sp->top_k > 0 && sp->top_k < V) ? sp->top_k : 0;
    const float want = sp->top_p + 1e-3f < 1.0f ? sp->top_p + 1e-3f : 1.0f; /* margin for summation order */
    float lo = 0.f, hi = 1.f; /* thresholds on p / sum */
    for (int it = 0; it < 24; it++) {
        float mid = 0.5f * (lo + hi), cut = mid * sum, mass = 0.f;
        int count = 0;
        for (int i = 0; i < V; i++)
            if (p[i] >= cut) { mass += p[i]; count++; }
        int enough = (k && count >= k) || (sp->top_p < 1.0f && mass >= want * sum);
        if (enough) lo = mid; else hi = mid;
    }
    const float cut = lo * sum;
    int m = 0;
    for (int i = 0; i < V; i++) m += p[i] >= cut;
    cand *c = (cand *)malloc(sizeof(cand) * (size_t)(m ? m : 1));
    if (!c) return argmax(p, V);
    m = 0;
    for (int i = 0; i < V; i++)
        if (p[i] >= cut) { c[m].p = p[i] / sum; c[m].id = i; m++; }
    qsort(c, (size_t)m, sizeof *c, cand_desc);
    int n = k && k < m ? k : m;
    if (sp->top_p < 1.0f) { /* smallest prefix whose mass reaches top_p (at least one token) */
        float acc = 0.f;
        int keep = 0;
        while (keep < n) { acc += c[keep++].p; if (acc >= sp->top_p) break; }
        n = keep;
    }
    float mass = 0.f;
    for (int i = 0; i < n; i++) mass += c[i].p;
    float target = u * mass, acc = 0.f;
    int tok = c[n - 1].id;
    for (int i = 0; i < n; i++) { acc += c[i].p; if (acc > target) { tok = c[i].id; break; } }
    free(c);
    return tok;
}
