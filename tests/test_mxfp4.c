/* test_mxfp4.c (label cpu) - MXFP4 dequantisation (model/mxfp4.c) against the format's definition:
 * each E2M1 code's value from its bits (sign, two exponent bits of bias 1, one mantissa bit; the
 * OCP microscaling spec), the low nibble as the even element, the E8M0 scale 2^(s - 127) shared
 * by a group of 32, groups and rows in order. Against transformers' own dequantisation on real
 * tensors: test_gptoss_hf (its MXFP4 checkpoint). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mxfp4.h"
#include "test_util.h"

/* E2M1 from its bits: subnormal (e 0) m x 0.5, else 2^(e - 1) x (1 + m / 2). */
static float e2m1(unsigned code) {
    const unsigned s = code >> 3 & 1, e = code >> 1 & 3, m = code & 1;
    const float mag = e == 0 ? 0.5f * (float)m : ldexpf(1.0f + 0.5f * (float)m, (int)e - 1);
    return s ? -mag : mag;
}

int main(void) {
    for (unsigned c = 0; c < 16; c++) CHECK(zp_fp4_value(c) == e2m1(c) && signbit(zp_fp4_value(c)) == signbit(e2m1(c)));
    CHECK(zp_fp4_value(7) == 6.0f && zp_fp4_value(15) == -6.0f && zp_fp4_value(1) == 0.5f);
    enum { ROWS = 3, COLS = 64, G = COLS / 32 };
    uint8_t blocks[ROWS][G][16], scales[ROWS][G];
    for (int r = 0; r < ROWS; r++)
        for (int g = 0; g < G; g++) {
            scales[r][g] = (uint8_t)(120 + 3 * r + g); /* 2^-7 .. 2^-1 */
            for (int j = 0; j < 16; j++) blocks[r][g][j] = (uint8_t)((j + r + g) % 16 | ((15 - j + g) % 16) << 4);
        }
    float out[ROWS][COLS];
    zp_mxfp4_dequant(&blocks[0][0][0], &scales[0][0], ROWS, COLS, &out[0][0]);
    int bad = 0;
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            const int g = c / 32, j = (c % 32) / 2;
            const unsigned code = c % 2 ? blocks[r][g][j] >> 4 : blocks[r][g][j] & 0xfu;
            bad += out[r][c] != e2m1(code) * ldexpf(1.0f, scales[r][g] - 127);
        }
    CHECK(bad == 0);
    CHECK(out[0][0] == 0.0f && out[0][1] == -6.0f * ldexpf(1.0f, -7)); /* byte 0xf0: low nibble 0, high 15 */
    return zp_test_finish("test_mxfp4");
}
