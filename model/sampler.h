/* sampler.h - next-token sampling on host logits with a counter-based RNG.
 *
 * Random numbers come from Philox4x32-10 keyed by the seed and counted by (request id,
 * sample index, step), so a request's draws do not depend on batch composition, concurrency,
 * preemption or scheduling. Greedy (temperature 0), temperature, top-k, top-p and the HF
 * repetition penalty (off at 1.0). The CUDA sampler must draw the same numbers.
 */
#ifndef ZP_SAMPLER_H
#define ZP_SAMPLER_H

#include <stdint.h>

#define ZP_MAX_STOP 16

typedef struct {
    float temperature;        /* 0: greedy */
    float top_p;              /* 1: off */
    int top_k;                /* 0: off */
    float repetition_penalty; /* 1: off */
    int max_tokens;           /* generated tokens at most */
    int ignore_eos;
    int n_stop;
    int stop_ids[ZP_MAX_STOP]; /* extra stop tokens */
    const int *forced;        /* teacher forcing: generated token k is forced[k] for k < n_forced */
    int n_forced;             /* (the array must outlive the request) */
    int has_rng_key;          /* 1: rng_key keys the draws in place of the request id (a server's seeded */
    uint64_t rng_key;         /* request draws the same tokens whatever id the server gave it) */
    int want_logprobs;        /* 1: each sampled token's log-probability goes to the token hook */
    int top_logprobs;         /* and the most likely top_logprobs tokens' (0..ZP_MAX_LOGPROBS) */
} zp_sampling_params;

#define ZP_MAX_LOGPROBS 20

/* Log-probabilities of a sampled token under the model: log_softmax of the raw logits (before
 * temperature, top-k/top-p and penalties, as vLLM's default raw_logprobs), and the top n_top
 * tokens by logit (ties: the lower id first). */
typedef struct {
    float logprob;
    int n_top;
    int top_id[ZP_MAX_LOGPROBS];
    float top_logprob[ZP_MAX_LOGPROBS];
} zp_token_logprobs;

/* Fills out for token from logits[V] (read only); k top tokens (clamped to 0..ZP_MAX_LOGPROBS). */
void zp_logprobs_compute(const float *logits, int V, int token, int k, zp_token_logprobs *out);

zp_sampling_params zp_sampling_default(void);

/* Why a request stopped: its EOS token, one of its stop ids (or a stop the caller matched,
 * zp_engine_finish_request), max_tokens, the model's context length, or the caller ended it
 * (a client that left). */
typedef enum { ZP_FINISH_NONE, ZP_FINISH_EOS, ZP_FINISH_STOP, ZP_FINISH_LENGTH, ZP_FINISH_MAX_POS, ZP_FINISH_ABORT, ZP_FINISH_COUNT } zp_finish_reason;

/* Philox4x32-10: out = philox(counter, key). */
void zp_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Uniform in [0,1) for (seed, request id, sample index, step). */
float zp_rng_uniform(uint64_t seed, uint64_t request_id, uint32_t sample_index, uint32_t step);

/* Picks a token from logits[V] (modified in place). history: tokens for the penalty.
 * scratch: caller buffer of 2*V floats. */
int zp_sample_token(float *logits, int V, const zp_sampling_params *sp, const int *history, int n_hist, float u,
                    float *scratch);

#endif
