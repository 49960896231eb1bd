/* gguf_quants.h - dequantisation of GGUF's block-quantised tensor types, one block at a time:
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (32 values a block) and the K-quants Q2_K, Q3_K, Q4_K, Q5_K,
 * Q6_K (256 values a block, sub-block scales), bit layouts as the GGUF format defines them and
 * the PyPI gguf package dequantises them (the oracle of tests/test_gguf.c). Plain C, fp32.
 * Deliberately not here: the file format (gguf.c) and any quantisation. */
#ifndef ZP_GGUF_QUANTS_H
#define ZP_GGUF_QUANTS_H

#include <stdint.h>

typedef struct {
    uint32_t type;      /* ggml type id */
    const char *name;
    int block_values;   /* values per block */
    int block_bytes;    /* bytes per block */
    void (*dequant)(const uint8_t *block, float *out); /* out[block_values] */
} zp_gguf_quant;

/* The block type with this ggml id, or NULL (F32/F16/BF16 are not block types). */
const zp_gguf_quant *zp_gguf_quant_find(uint32_t type);

#endif
