/* gguf_quants.c - see gguf_quants.h. Each function reads one block at `b` (little-endian
 * fields, f16 scales) and writes its values in order. */
#include "gguf_quants.h"

#include <string.h>

#include "dtype.h" /* zp_f16_to_f32 */

static float f16_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return zp_f16_to_f32(h);
}

/* Q8_0: f16 d, int8 q[32]; x = d q. */
static void dq_q8_0(const uint8_t *b, float *y) {
    const float d = f16_at(b);
    for (int j = 0; j < 32; j++) y[j] = d * (float)(int8_t)b[2 + j];
}

/* Q4_0: f16 d, u8 qs[16]; value j the low nibble of qs[j], j + 16 the high one; x = d (q - 8). */
static void dq_q4_0(const uint8_t *b, float *y) {
    const float d = f16_at(b);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((b[2 + j] & 0x0F) - 8);
        y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
    }
}

/* Q4_1: f16 d, f16 m, u8 qs[16]; x = d q + m. */
static void dq_q4_1(const uint8_t *b, float *y) {
    const float d = f16_at(b), m = f16_at(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(b[4 + j] & 0x0F) + m;
        y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
    }
}

/* Q5_0 / Q5_1: the Q4 nibbles with a fifth bit from the 32-bit mask qh (bit j for value j, bit
 * j + 16 for value j + 16). Q5_0: f16 d, qh, qs[16], x = d (q - 16); Q5_1: f16 d, f16 m, qh,
 * qs[16], x = d q + m. */
static void dq_q5(const uint8_t *qhp, const uint8_t *qs, float d, float m, int offset, float *y) {
    uint32_t qh;
    memcpy(&qh, qhp, 4);
    for (int j = 0; j < 16; j++) {
        const int lo = (qs[j] & 0x0F) | (int)(((qh >> j) & 1) << 4), hi = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
        y[j] = d * (float)(lo - offset) + m;
        y[j + 16] = d * (float)(hi - offset) + m;
    }
}
static void dq_q5_0(const uint8_t *b, float *y) { dq_q5(b + 2, b + 6, f16_at(b), 0.0f, 16, y); }
static void dq_q5_1(const uint8_t *b, float *y) { dq_q5(b + 4, b + 8, f16_at(b), f16_at(b + 2), 0, y); }

/* The 6-bit scale and min of sub-block j (0..7) packed in the 12 bytes s of Q4_K and Q5_K:
 * sub-blocks 0-3 in the low 6 bits of s[j] and s[j + 4], 4-7 in the nibbles of s[j + 4] with
 * their top two bits in the high bits of s[j - 4] and s[j]. */
static void k_scale_min(const uint8_t *s, int j, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q4_K: f16 d, f16 dmin, scales[12], qs[128]; 8 sub-blocks of 32: x = d sc q - dmin mn, values
 * 64 i .. 64 i + 31 the low nibbles of qs[32 i ..], the next 32 the high nibbles.
 * Q5_K: f16 d, f16 dmin, scales[12], qh[32], qs[128]: the same with a fifth bit, bit 2 i of
 * qh[l] for value 64 i + l and bit 2 i + 1 for value 64 i + 32 + l. qh NULL: Q4_K. */
static void dq_k4(const uint8_t *b, const uint8_t *qh, const uint8_t *q, float *y) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const uint8_t *s = b + 4;
    for (int i = 0; i < 4; i++, q += 32, y += 64) {
        int sc0, m0, sc1, m1;
        k_scale_min(s, 2 * i, &sc0, &m0);
        k_scale_min(s, 2 * i + 1, &sc1, &m1);
        const float d0 = d * (float)sc0, dm0 = dmin * (float)m0, d1 = d * (float)sc1, dm1 = dmin * (float)m1;
        for (int l = 0; l < 32; l++) {
            const int h0 = qh ? ((qh[l] >> (2 * i)) & 1) << 4 : 0, h1 = qh ? ((qh[l] >> (2 * i + 1)) & 1) << 4 : 0;
            y[l] = d0 * (float)((q[l] & 0x0F) + h0) - dm0;
            y[l + 32] = d1 * (float)((q[l] >> 4) + h1) - dm1;
        }
    }
}
static void dq_q4_k(const uint8_t *b, float *y) { dq_k4(b, NULL, b + 16, y); }
static void dq_q5_k(const uint8_t *b, float *y) { dq_k4(b, b + 16, b + 48, y); }

/* Q6_K: ql[128], qh[64], int8 scales[16], f16 d; 16 sub-blocks of 16: x = d sc (q - 32), q six
 * bits: four nibbles of ql and two bits of qh per value, in two halves of 128. */
static void dq_q6_k(const uint8_t *b, float *y) {
    const float d = f16_at(b + 208);
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, y += 128) {
        for (int l = 0; l < 32; l++) {
            const int is = l / 16;
            const int q1 = (ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4), q2 = (ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4);
            const int q3 = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4), q4 = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
            y[l] = d * (float)sc[is] * (float)(q1 - 32);
            y[l + 32] = d * (float)sc[is + 2] * (float)(q2 - 32);
            y[l + 64] = d * (float)sc[is + 4] * (float)(q3 - 32);
            y[l + 96] = d * (float)sc[is + 6] * (float)(q4 - 32);
        }
    }
}

/* Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], f16 d, f16 dmin; 16 sub-blocks
 * of 16, two bits a value: x = d sc q - dmin mn. */
static void dq_q2_k(const uint8_t *b, float *y) {
    const float d = f16_at(b + 80), dmin = f16_at(b + 82);
    const uint8_t *s = b, *q = b + 16;
    int is = 0;
    for (int half = 0; half < 2; half++, q += 32) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int k = 0; k < 2; k++, is++, y += 16) {
                const float dl = d * (float)(s[is] & 0x0F), ml = dmin * (float)(s[is] >> 4);
                for (int l = 0; l < 16; l++) y[l] = dl * (float)((q[16 * k + l] >> shift) & 3) - ml;
            }
        }
    }
}

/* The 16 6-bit scales of Q3_K from its 12 bytes: low nibbles from bytes 0-7 (sub-blocks 0-7 the
 * low nibble, 8-15 the high nibble), the top two bits from bytes 8-11; each minus 32. */
static void q3_scales(const uint8_t *s, int *out) {
    for (int j = 0; j < 16; j++) {
        const int low = j < 8 ? s[j] & 0x0F : s[j - 8] >> 4;
        const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (low | (high << 4)) - 32;
    }
}

/* Q3_K: hmask[32], qs[64], scales[12], f16 d; two low bits from qs, the third from hmask (set:
 * no offset, clear: minus 4): x = d sc q. */
static void dq_q3_k(const uint8_t *b, float *y) {
    const float d = f16_at(b + 108);
    const uint8_t *hm = b, *q = b + 32;
    int sc[16], is = 0;
    q3_scales(b + 96, sc);
    uint8_t m = 1;
    for (int half = 0; half < 2; half++, q += 32) {
        for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
            for (int k = 0; k < 2; k++, is++, y += 16) {
                const float dl = d * (float)sc[is];
                for (int l = 0; l < 16; l++)
                    y[l] = dl * (float)((int)((q[16 * k + l] >> shift) & 3) - ((hm[16 * k + l] & m) ? 0 : 4));
            }
        }
    }
}

static const zp_gguf_quant QUANTS[] = {
    {2, "Q4_0", 32, 18, dq_q4_0},    {3, "Q4_1", 32, 20, dq_q4_1},    {6, "Q5_0", 32, 22, dq_q5_0},
    {7, "Q5_1", 32, 24, dq_q5_1},    {8, "Q8_0", 32, 34, dq_q8_0},    {10, "Q2_K", 256, 84, dq_q2_k},
    {11, "Q3_K", 256, 110, dq_q3_k}, {12, "Q4_K", 256, 144, dq_q4_k}, {13, "Q5_K", 256, 176, dq_q5_k},
    {14, "Q6_K", 256, 210, dq_q6_k},
};

const zp_gguf_quant *zp_gguf_quant_find(uint32_t type) {
    for (size_t i = 0; i < sizeof QUANTS / sizeof *QUANTS; i++)
        if (QUANTS[i].type == type) return &QUANTS[i];
    return NULL;
}
