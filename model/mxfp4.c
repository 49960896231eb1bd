/* mxfp4.c - see mxfp4.h. */
#include "mxfp4.h"

#include <math.h>

float zp_fp4_value(unsigned code) {
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const float v = mag[code & 7u];
    return code & 8u ? -v : v;
}

void zp_mxfp4_dequant(const uint8_t *blocks, const uint8_t *scales, size_t rows, size_t cols, float *out) {
    const size_t groups = cols / 32;
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++)
        for (size_t g = 0; g < groups; g++) {
            const int e = (int)scales[r * groups + g] - 127;
            const uint8_t *b = blocks + (r * groups + g) * 16;
            float *o = out + r * cols + g * 32;
            for (int j = 0; j < 16; j++) {
                o[2 * j] = ldexpf(zp_fp4_value(b[j] & 0xfu), e);
                o[2 * j + 1] = ldexpf(zp_fp4_value(b[j] >> 4), e);
            }
        }
}
