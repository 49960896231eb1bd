/* mxfp4.h - MXFP4 weights (the OCP microscaling format gpt-oss checkpoints store their experts
 * in) dequantised to fp32, as transformers' _convert_moe_packed_tensors does (docs/moe-port.md
 * §3): each group of 32 consecutive inputs of an output row shares one E8M0 scale byte s (the
 * factor 2^(s - 127)); each byte of a group's 16 holds two FP4 E2M1 codes, the low nibble the
 * even element. Exact: every value is representable in fp32. Not here: reading the tensors
 * (model.c) or a quantiser. */
#ifndef ZP_MXFP4_H
#define ZP_MXFP4_H

#include <stddef.h>
#include <stdint.h>

/* The value of a 4-bit E2M1 code (bit 3 the sign). */
float zp_fp4_value(unsigned code);
/* out[rows][cols] from blocks [rows][cols / 32][16] and scales [rows][cols / 32] (cols a
 * multiple of 32). */
void zp_mxfp4_dequant(const uint8_t *blocks, const uint8_t *scales, size_t rows, size_t cols, float *out);

#endif
