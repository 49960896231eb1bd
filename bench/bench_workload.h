/* bench_workload.h - the request sets of `zipage bench`: a fixed workload (B requests of P
 * random prompt tokens, T generated tokens each) and a reasoning workload (the real AIME24 and
 * AMC23 prompts through the model's chat template and tokenizer, cycled over N requests, with
 * output lengths drawn, seeded, from a long-tailed distribution like reasoning traces). EOS is
 * ignored by the caller, so every engine generates exactly these lengths. No engine calls. */
#ifndef ZP_BENCH_WORKLOAD_H
#define ZP_BENCH_WORKLOAD_H

#include <stdint.h>

#include "status.h"

typedef struct {
    int n;            /* requests */
    int **prompt;     /* [n] token ids */
    int *prompt_len;  /* [n] */
    int *gen;         /* [n] tokens to generate */
} bench_workload;

zp_status bench_workload_fixed(int batch, int prompt, int gen, int vocab, uint64_t seed, bench_workload *w);
/* Output lengths: log-normal with median 6,000 tokens and log-sd 0.6 (5%-95%: 2.2k-16.3k),
 * clipped to [256, max_tokens]; a tenth of the requests (seeded) run to max_tokens, as traces
 * that hit the limit. length_scale F >= 1 makes the scaled replica: request r generates its
 * full-size length divided by F, rounded up (the same draws; prompts unchanged). Prompts: datasets (comma-separated, e.g. "aime24,amc23") item i % items
 * for request i, rendered with the paper's math system prompt. */
zp_status bench_workload_reasoning(const char *tokenizer_dir, const char *datasets, int requests, int max_tokens, int length_scale,
                                   uint64_t seed, bench_workload *w);
/* The reasoning length of request r (exposed for tests). */
int bench_reasoning_length(uint64_t seed, int r, int max_tokens);
void bench_workload_free(bench_workload *w);

#endif
