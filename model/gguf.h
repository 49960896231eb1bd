/* gguf.h - GGUF (llama.cpp) checkpoint reader: header, metadata key/values, tensor infos,
 * alignment, all validated against the file size (truncated or malformed files give one error
 * naming the file and the tensor or key; offsets and sizes checked without wrap-around,
 * overlapping tensors refused, at most 2^40 values a tensor and 4 levels of nested arrays);
 * dequantisation of F32, F16, BF16 and the block types of gguf_quants.h (Q4_0 ... Q8_0, Q2_K ...
 * Q6_K) to fp32. The model loader maps GGUF tensor names to Hugging Face ones and refuses an
 * architecture it does not run (model.c). */
#ifndef ZP_GGUF_H
#define ZP_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

enum { ZP_GGML_F32 = 0, ZP_GGML_F16 = 1, ZP_GGML_Q4_0 = 2, ZP_GGML_Q4_1 = 3, ZP_GGML_Q8_0 = 8, ZP_GGML_BF16 = 30 };

typedef struct {
    char *name;
    int ndim;
    int64_t ne[4];      /* GGUF order: ne[0] is the contiguous (column) dimension */
    uint32_t type;
    const uint8_t *data;
    size_t nbytes;
} zp_gguf_tensor;

typedef struct {
    char *key;
    uint32_t type;      /* GGUF value type */
    int64_t i;          /* integers and bools */
    double f;           /* floats */
    char *s;            /* strings */
    uint64_t n_arr;     /* arrays: element count (contents not kept) */
} zp_gguf_kv;

typedef struct {
    char path[4096];
    void *map;
    size_t size;
    zp_gguf_kv *kv;
    int n_kv;
    zp_gguf_tensor *tensors;
    int n_tensors;
} zp_gguf;

zp_status zp_gguf_open(const char *path, zp_gguf *g);
void zp_gguf_close(zp_gguf *g);
const zp_gguf_tensor *zp_gguf_find(const zp_gguf *g, const char *name);
const zp_gguf_kv *zp_gguf_get(const zp_gguf *g, const char *key);
/* Dequantises a whole tensor (ne[0] * ne[1] * ... values) into dst. */
zp_status zp_gguf_dequantize(const zp_gguf *g, const zp_gguf_tensor *t, float *dst);
const char *zp_ggml_type_name(uint32_t type);

#endif
