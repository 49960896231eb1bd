/* test_fp8.c - fp8 E4M3 conversions (dtype.h) against ml_dtypes' float8_e4m3fn
 * (tests/reference/make_fp8_goldens.py, tests/data/fp8/): every E4M3 byte decoded; every bf16
 * bit pattern and 60,756 fp32 cases (each halfway point between neighbouring E4M3 values and one
 * ulp either side, both signs, seeded random patterns) encoded, saturating at +-448; and the
 * saturation, NaN and signed-zero cases by name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "dtype.h"
#include "test_util.h"

static unsigned char *load(const char *name, size_t *n) {
    char path[512];
    char *buf = NULL;
    snprintf(path, sizeof path, "%s/fp8/%s", ZP_TEST_DATA, name);
    CHECK_OK(zp_read_file(path, &buf, n));
    return (unsigned char *)buf;
}

static int same_byte(uint8_t got, uint8_t want) { /* NaN's sign is not compared */
    return got == want || ((got & 0x7f) == 0x7f && (want & 0x7f) == 0x7f);
}

int main(void) {
    size_t n = 0;
    unsigned char *dec = load("e4m3_to_f32.bin", &n);
    CHECK(n == 1024);
    int bad = 0;
    for (int b = 0; dec && b < 256; b++) {
        uint32_t want, got;
        memcpy(&want, dec + 4 * b, 4);
        const float f = zp_e4m3_to_f32((uint8_t)b);
        memcpy(&got, &f, 4);
        const int nan = (want & 0x7fffffffu) > 0x7f800000u;
        if (nan ? !isnan(f) : got != want) { if (bad++ < 5) fprintf(stderr, "decode 0x%02x: got 0x%08x want 0x%08x\n", b, got, want); }
    }
    CHECK(bad == 0);
    unsigned char *bf = load("e4m3_from_bf16.bin", &n);
    CHECK(n == 65536);
    bad = 0;
    for (uint32_t h = 0; bf && h < 65536; h++) {
        const uint8_t got = zp_f32_to_e4m3(zp_bf16_to_f32((uint16_t)h));
        if (!same_byte(got, bf[h]) && bad++ < 5) fprintf(stderr, "bf16 0x%04x: got 0x%02x want 0x%02x\n", h, got, bf[h]);
    }
    CHECK(bad == 0);
    unsigned char *f32 = load("e4m3_from_f32.bin", &n);
    CHECK(n % 5 == 0 && n / 5 > 60000);
    bad = 0;
    for (size_t i = 0; f32 && i < n / 5; i++) {
        uint32_t bits;
        float x;
        memcpy(&bits, f32 + 5 * i, 4);
        memcpy(&x, &bits, 4);
        const uint8_t got = zp_f32_to_e4m3(x), want = f32[5 * i + 4];
        if (!same_byte(got, want) && bad++ < 5) fprintf(stderr, "f32 0x%08x (%g): got 0x%02x want 0x%02x\n", bits, x, got, want);
    }
    CHECK(bad == 0);
    printf("fp8: 256 decodes, 65,536 bf16 patterns, %zu fp32 cases as ml_dtypes\n", n / 5);
    /* by name: saturation, ties, the smallest subnormal, NaN, signed zero, and the round trip */
    CHECK(zp_f32_to_e4m3(448.0f) == 0x7e && zp_f32_to_e4m3(1e30f) == 0x7e && zp_f32_to_e4m3(-INFINITY) == 0xfe);
    CHECK(zp_f32_to_e4m3(464.0f) == 0x7e && zp_f32_to_e4m3(465.0f) == 0x7e); /* saturates where a bare cast gives NaN */
    CHECK(zp_f32_to_e4m3(1.0625f) == 0x38 && zp_f32_to_e4m3(1.1875f) == 0x3a); /* ties to the even mantissa */
    CHECK(zp_f32_to_e4m3(1.0f / 512) == 0x01 && zp_f32_to_e4m3(1.0f / 1024) == 0x00 && zp_f32_to_e4m3(3.0f / 2048) == 0x01);
    CHECK((zp_f32_to_e4m3(NAN) & 0x7f) == 0x7f && isnan(zp_e4m3_to_f32(0x7f)) && isnan(zp_e4m3_to_f32(0xff)));
    CHECK(zp_f32_to_e4m3(-0.0f) == 0x80 && zp_f32_to_e4m3(0.0f) == 0x00);
    for (int b = 0; b < 256; b++)
        if ((b & 0x7f) != 0x7f) CHECK(zp_f32_to_e4m3(zp_e4m3_to_f32((uint8_t)b)) == b);
    free(dec);
    free(bf);
    free(f32);
    return zp_test_finish("test_fp8");
}
