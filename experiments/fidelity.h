/* fidelity.h - teacher-forced fidelity of a compressed KV cache: a reference trajectory is
 * generated with full KV (greedy), then fed token by token to a full-KV engine and to a
 * compressed one in lockstep; at every step the two next-token distributions are compared:
 * KL(full || compressed), top-1 agreement, the first step where the top-1 tokens differ, and
 * the share of the context the compressed engine still holds. Real attention patterns make
 * this a fast proxy for what eviction costs, without hours of sampling. */
#ifndef ZP_FIDELITY_H
#define ZP_FIDELITY_H

#include "engine.h"

typedef struct {
    int steps;
    double mean_kl, worst_window_kl; /* nats; worst mean over a window of `window` steps */
    double agreement;                /* share of steps with the same top-1 token */
    int first_disagreement;          /* step index, -1 if none */
    double retained_share;           /* mean physical / logical tokens of the compressed engine */
} fidelity_result;

/* KL(softmax(ref) || softmax(cmp)) over V logits, in nats. */
double fidelity_kl(const float *ref, const float *cmp, int V);
int fidelity_argmax(const float *x, int V);
/* The full-KV side of one prompt, computed once and compared with every configuration: the
 * greedy trajectory (gen tokens) and the full-KV logits at each step ([gen][vocab]). */
typedef struct {
    int *prompt, n_prompt, gen, vocab;
    int *traj;
    float *logits;
} fidelity_ref;

zp_status fidelity_reference(const zp_engine_config *full, const int *prompt, int n_prompt, int gen, fidelity_ref *ref);
void fidelity_ref_free(fidelity_ref *ref);
/* Teacher-forces the reference trajectory through `cmp` (sync compression) and compares. */
zp_status fidelity_compare(const fidelity_ref *ref, const zp_engine_config *cmp, int window, fidelity_result *r);
/* Metrics from per-step KL values and agreement flags (the math the tests pin). */
void fidelity_summarize(const double *kl, const int *agree, int steps, int window, fidelity_result *r);

#endif
