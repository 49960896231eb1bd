/* decode_split.h - a split rule of the decode-attention lab (dev/cuda/decode_attention.cu,
 * variant 3): how many partitions a launch cuts each sequence into, by wave efficiency. Plain C
 * arithmetic on the launch shape, so the CPU tests check it (tests/test_ops.c). Not here: the
 * kernels, and the mainline's rule (model/cuda/decode_frame.cuh decode_parts_default). */
#ifndef ZP_DECODE_SPLIT_H
#define ZP_DECODE_SPLIT_H

#include <math.h>

/* `base` blocks per partition index (sequences x KV heads), `slots` blocks resident at once.
 * When even max_parts partitions leave slots free: all of them. Else the fewest partitions
 * that make at least one round and whose efficiency (rounds / whole rounds) is within 0.85 of
 * the best of up to 64. (The default rule, four blocks per SM, can leave a last round mostly
 * empty: 24 sequences x 8 heads x 3 = 576 blocks on 264 slots is 2.18 rounds; 4 partitions
 * make 2.91.) Returns a value in [1, max_parts] for max_parts >= 1. */
static inline int zp_decode_parts_waves(long base, long slots, int max_parts) {
    if (max_parts < 1) max_parts = 1;
    if (base < 1 || slots < 1 || base * max_parts <= slots) return max_parts;
    const int lo = base >= slots ? 1 : (int)((slots + base - 1) / base), hi = max_parts < 64 ? max_parts : 64;
    double eff[65], best = 0.0;
    for (int n = lo; n <= hi; n++) {
        const double w = (double)(base * n) / (double)slots;
        eff[n] = w / ceil(w);
        best = eff[n] > best ? eff[n] : best;
    }
    for (int n = lo; n <= hi; n++)
        if (eff[n] >= 0.85 * best) return n;
    return lo;
}

#endif
