/* trig_calibrate.h - TriAttention's calibration (`zipage calibrate`): one forward pass of the
 * model over calibration tokens (prefill chunks of one sequence), each layer's queries taken as
 * attention consumes them before RoPE (after Qwen3's q_norm: the rotated queries rotated back at
 * their positions, RoPE's attention factor divided out) and reduced as the authors' calibration
 * (docs/triattention.md): per (layer, query head) and RoPE pair f, the mean of q[f] + i q[f + D/2]
 * and the mean of its modulus over every token, summed in double. Deliberately not here: reading
 * the calibration text (the command line tokenizes it) and the scores (scorers/trig.c). */
#ifndef ZP_TRIG_CALIBRATE_H
#define ZP_TRIG_CALIBRATE_H

#include "model.h"
#include "trig_stats.h"

/* The statistics of model m over ids[n] (prefill chunks of up to `chunk` tokens) into *out
 * (zp_trig_stats_free frees it). */
zp_status zp_trig_calibrate(zp_model *m, const int *ids, int n, int chunk, zp_trig_stats *out);

#endif
