/* safetensors.h - read (mmap, validated) and write .safetensors checkpoints.
 *
 * Reads a single model.safetensors or a sharded checkpoint through
 * model.safetensors.index.json. The header is validated before any tensor is used: dtype
 * known (BF16/F16/F32, and U8 bytes), shape x element size == byte range, ranges inside the file, no two
 * tensors overlapping. It does not interpret names or convert dtypes (see weights.c).
 */
#ifndef ZP_SAFETENSORS_H
#define ZP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dtype.h"
#include "status.h"

#define ZP_ST_MAX_DIMS 4

typedef struct {
    char *name;
    zp_dtype dtype;
    int ndim;
    int64_t shape[ZP_ST_MAX_DIMS];
    const void *data; /* points into the mmap'ed file */
    size_t nbytes;
    int file;         /* index into zp_safetensors.files */
} zp_st_tensor;

typedef struct {
    char *path;
    void *map;
    size_t size;
} zp_st_file;

typedef struct {
    zp_st_file *files;
    int n_files;
    zp_st_tensor *tensors;
    int n_tensors;
} zp_safetensors;

/* Opens DIR/model.safetensors.index.json if present, else DIR/model.safetensors. */
zp_status zp_st_open_dir(const char *dir, zp_safetensors *st);
/* Adds the tensors of one .safetensors file. */
zp_status zp_st_open_file(zp_safetensors *st, const char *path);
const zp_st_tensor *zp_st_find(const zp_safetensors *st, const char *name);
void zp_st_close(zp_safetensors *st);

/* Writer: tensors given as name, dtype, shape and a data pointer of nbytes. */
typedef struct {
    const char *name;
    zp_dtype dtype;
    int ndim;
    int64_t shape[ZP_ST_MAX_DIMS];
    const void *data;
} zp_st_entry;

zp_status zp_st_write(const char *path, const zp_st_entry *entries, int n);
/* Streaming writer: writes the header of `entries` and returns the file positioned at the data
 * section; the caller then writes each entry's bytes in order and closes it. */
zp_status zp_st_write_begin(const char *path, const zp_st_entry *entries, int n, FILE **out);
size_t zp_st_entry_bytes(const zp_st_entry *e);

#endif
