/* gguf.c - see gguf.h. Layout: magic "GGUF", u32 version (2 or 3), u64 tensor count, u64 kv
 * count, the kvs (string key, u32 type, value), the tensor infos (string name, u32 ndim, u64
 * ne[ndim], u32 type, u64 offset), padding to general.alignment (default 32), data. */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtype.h"       /* zp_f16_to_f32, zp_bf16_to_f32 */
#include "gguf_quants.h" /* the block types */

typedef struct {
    const uint8_t *p, *end;
    const char *path;
} cursor;

static int take(cursor *c, void *dst, size_t n) {
    if ((size_t)(c->end - c->p) < n) return 0;
    memcpy(dst, c->p, n);
    c->p += n;
    return 1;
}

static char *take_string(cursor *c) {
    uint64_t n;
    if (!take(c, &n, 8) || n > (uint64_t)(c->end - c->p) || n > (1u << 24)) return NULL;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, c->p, n);
    s[n] = 0;
    c->p += n;
    return s;
}

static const int type_size[13] = {1, 1, 2, 2, 4, 4, 4, 1, -1, -1, 8, 8, 8}; /* by GGUF value type; 8 string, 9 array */

#define GGUF_MAX_NESTING 4          /* arrays of arrays: deeper is refused (no stack overflow) */
#define GGUF_MAX_NUMEL (1ll << 40) /* values of one tensor */

static zp_status skip_value(cursor *c, uint32_t type, zp_gguf_kv *kv, const char *key, int depth) {
    if (depth > GGUF_MAX_NESTING) return zp_fail(ZP_ERR_FORMAT, "%s: key %s nests arrays deeper than %d", c->path, key, GGUF_MAX_NESTING);
    if (type > 12) return zp_fail(ZP_ERR_FORMAT, "%s: key %s has unknown value type %u", c->path, key, type);
    if (type == 8) {
        char *s = take_string(c);
        if (!s) return zp_fail(ZP_ERR_FORMAT, "%s: key %s: string runs past the end of the file", c->path, key);
        if (kv) kv->s = s; else free(s);
        return ZP_OK;
    }
    if (type == 9) {
        uint32_t at;
        uint64_t n;
        if (!take(c, &at, 4) || !take(c, &n, 8)) return zp_fail(ZP_ERR_FORMAT, "%s: key %s: truncated array header", c->path, key);
        if (kv) kv->n_arr = n;
        for (uint64_t i = 0; i < n; i++) ZP_TRY(skip_value(c, at, NULL, key, depth + 1));
        return ZP_OK;
    }
    uint8_t buf[8] = {0};
    if (!take(c, buf, (size_t)type_size[type])) return zp_fail(ZP_ERR_FORMAT, "%s: key %s: value runs past the end of the file", c->path, key);
    if (kv) {
        switch (type) {
        case 0: kv->i = buf[0]; break;
        case 1: kv->i = (int8_t)buf[0]; break;
        case 2: { uint16_t v; memcpy(&v, buf, 2); kv->i = v; } break;
        case 3: { int16_t v; memcpy(&v, buf, 2); kv->i = v; } break;
        case 4: { uint32_t v; memcpy(&v, buf, 4); kv->i = v; } break;
        case 5: { int32_t v; memcpy(&v, buf, 4); kv->i = v; } break;
        case 6: { float v; memcpy(&v, buf, 4); kv->f = v; } break;
        case 7: kv->i = buf[0] != 0; break;
        case 10: case 11: { int64_t v; memcpy(&v, buf, 8); kv->i = v; } break;
        case 12: { double v; memcpy(&v, buf, 8); kv->f = v; } break;
        }
    }
    return ZP_OK;
}

/* Bytes of n elements of a tensor type: -1 when n is not a whole number of blocks, -2 for a
 * type we cannot read. */
static int64_t type_bytes(uint32_t type, int64_t n) {
    switch (type) {
    case ZP_GGML_F32: return n * 4;
    case ZP_GGML_F16: case ZP_GGML_BF16: return n * 2;
    default: break;
    }
    const zp_gguf_quant *q = zp_gguf_quant_find(type);
    if (!q) return -2;
    return n % q->block_values ? -1 : n / q->block_values * q->block_bytes;
}

const char *zp_ggml_type_name(uint32_t t) {
    switch (t) {
    case 0: return "F32"; case 1: return "F16"; case 2: return "Q4_0"; case 3: return "Q4_1"; case 6: return "Q5_0"; case 7: return "Q5_1";
    case 8: return "Q8_0"; case 10: return "Q2_K"; case 11: return "Q3_K"; case 12: return "Q4_K"; case 13: return "Q5_K"; case 14: return "Q6_K";
    case 30: return "BF16"; default: return "unknown";
    }
}

static zp_status read_tensor_infos(cursor *c, zp_gguf *g, uint64_t n, uint64_t *max_end) {
    g->tensors = calloc(n ? n : 1, sizeof *g->tensors);
    ZP_CHECK_ALLOC(g->tensors);
    for (uint64_t k = 0; k < n; k++) {
        zp_gguf_tensor *t = &g->tensors[g->n_tensors];
        uint32_t nd;
        if ((t->name = take_string(c)) != NULL) g->n_tensors++; /* owned by g from here */
        if (!t->name || !take(c, &nd, 4) || nd == 0 || nd > 4)
            return zp_fail(ZP_ERR_FORMAT, "%s: tensor info %llu is truncated or has a bad rank", g->path, (unsigned long long)k);
        t->ndim = (int)nd;
        int64_t numel = 1;
        for (uint32_t d = 0; d < 4; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t v;
            if (!take(c, &v, 8) || v == 0 || v > (uint64_t)GGUF_MAX_NUMEL || numel > GGUF_MAX_NUMEL / (int64_t)v)
                return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: bad dimension (zero, or more than 2^40 values)", g->path, t->name);
            t->ne[d] = (int64_t)v;
            numel *= (int64_t)v;
        }
        uint64_t off;
        if (!take(c, &t->type, 4) || !take(c, &off, 8)) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: truncated info", g->path, t->name);
        int64_t nb = type_bytes(t->type, numel);
        if (nb == -2)
            return zp_fail(ZP_ERR_UNSUPPORTED, "%s: tensor %s: type %s is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K-Q6_K)",
                           g->path, t->name, zp_ggml_type_name(t->type));
        if (nb < 0) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: %lld values is not a whole number of blocks", g->path, t->name, (long long)numel);
        if (off > g->size || (uint64_t)nb > g->size - off) /* no wrap-around: both are bounded by the file */
            return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: offset %llu + %lld bytes lies outside the file", g->path, t->name,
                           (unsigned long long)off, (long long)nb);
        t->nbytes = (size_t)nb;
        t->data = (const uint8_t *)(uintptr_t)off; /* relative until the data section is known */
        if (off + (uint64_t)nb > *max_end) *max_end = off + (uint64_t)nb;
    }
    return ZP_OK;
}

static int by_data(const void *a, const void *b) {
    const zp_gguf_tensor *x = *(const zp_gguf_tensor *const *)a, *y = *(const zp_gguf_tensor *const *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

/* No two tensors share bytes (as the safetensors reader requires). */
static zp_status check_overlaps(const zp_gguf *g) {
    if (g->n_tensors < 2) return ZP_OK;
    const zp_gguf_tensor **v = malloc(sizeof *v * (size_t)g->n_tensors);
    ZP_CHECK_ALLOC(v);
    for (int i = 0; i < g->n_tensors; i++) v[i] = &g->tensors[i];
    qsort(v, (size_t)g->n_tensors, sizeof *v, by_data);
    zp_status s = ZP_OK;
    for (int i = 0; i + 1 < g->n_tensors && s == ZP_OK; i++)
        if (v[i]->data + v[i]->nbytes > v[i + 1]->data)
            s = zp_fail(ZP_ERR_FORMAT, "%s: tensors %s and %s overlap", g->path, v[i]->name, v[i + 1]->name);
    free(v);
    return s;
}

static zp_status parse(zp_gguf *g) {
    cursor c = {g->map, (const uint8_t *)g->map + g->size, g->path};
    char magic[4];
    uint32_t version;
    uint64_t n_t, n_kv;
    if (!take(&c, magic, 4) || memcmp(magic, "GGUF", 4)) return zp_fail(ZP_ERR_FORMAT, "%s: not a GGUF file (bad magic)", g->path);
    if (!take(&c, &version, 4) || !take(&c, &n_t, 8) || !take(&c, &n_kv, 8)) return zp_fail(ZP_ERR_FORMAT, "%s: truncated header", g->path);
    if (version < 2 || version > 3) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: GGUF version %u (supported: 2, 3)", g->path, version);
    if (n_kv > (1u << 20) || n_t > (1u << 20)) return zp_fail(ZP_ERR_FORMAT, "%s: implausible counts (%llu tensors, %llu keys)", g->path, (unsigned long long)n_t, (unsigned long long)n_kv);
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    ZP_CHECK_ALLOC(g->kv);
    for (uint64_t k = 0; k < n_kv; k++) {
        zp_gguf_kv *kv = &g->kv[g->n_kv];
        if ((kv->key = take_string(&c)) != NULL) g->n_kv++; /* owned by g from here: freed on any error */
        if (!kv->key || !take(&c, &kv->type, 4))
            return zp_fail(ZP_ERR_FORMAT, "%s: metadata entry %llu is truncated", g->path, (unsigned long long)k);
        ZP_TRY(skip_value(&c, kv->type, kv, kv->key, 0));
    }
    uint64_t max_end = 0;
    ZP_TRY(read_tensor_infos(&c, g, n_t, &max_end));
    const zp_gguf_kv *al = zp_gguf_get(g, "general.alignment");
    uint64_t align = al ? (uint64_t)al->i : 32, pos = (uint64_t)(c.p - (const uint8_t *)g->map);
    if (align == 0 || (align & (align - 1))) return zp_fail(ZP_ERR_FORMAT, "%s: general.alignment %llu is not a power of two", g->path, (unsigned long long)align);
    if (align > (1u << 20)) return zp_fail(ZP_ERR_FORMAT, "%s: general.alignment %llu is implausible", g->path, (unsigned long long)align);
    uint64_t data = (pos + align - 1) / align * align;
    if (max_end > 0 && (data > g->size || max_end > g->size - data)) /* no tensor bytes: no data section needed */
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor data needs %llu bytes, the file has %zu (truncated?)", g->path,
                       (unsigned long long)(data + max_end), g->size);
    for (int k = 0; k < g->n_tensors; k++) {
        uint64_t off = (uint64_t)(uintptr_t)g->tensors[k].data;
        if (off % align) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: offset %llu is not aligned", g->path, g->tensors[k].name, (unsigned long long)off);
        g->tensors[k].data = (const uint8_t *)g->map + data + off;
    }
    return check_overlaps(g);
}

zp_status zp_gguf_open(const char *path, zp_gguf *g) {
    memset(g, 0, sizeof *g);
    snprintf(g->path, sizeof g->path, "%s", path);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return zp_fail(ZP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size < 24) { close(fd); return zp_fail(ZP_ERR_FORMAT, "%s: too short for a GGUF header", path); }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return zp_fail(ZP_ERR_IO, "%s: %s, not a file", path, S_ISDIR(sb.st_mode) ? "a folder" : "not a regular file");
    }
    g->size = (size_t)sb.st_size;
    g->map = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (g->map == MAP_FAILED) { g->map = NULL; return zp_fail(ZP_ERR_IO, "%s: mmap failed: %s", path, strerror(errno)); }
    zp_status s = parse(g);
    if (s != ZP_OK) zp_gguf_close(g);
    return s;
}

void zp_gguf_close(zp_gguf *g) {
    for (int i = 0; i < g->n_kv; i++) { free(g->kv[i].key); free(g->kv[i].s); }
    for (int i = 0; i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    if (g->map) munmap(g->map, g->size);
    memset(g, 0, sizeof *g);
}

const zp_gguf_tensor *zp_gguf_find(const zp_gguf *g, const char *name) {
    for (int i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}

const zp_gguf_kv *zp_gguf_get(const zp_gguf *g, const char *key) {
    for (int i = 0; i < g->n_kv; i++)
        if (!strcmp(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

static float f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return zp_f16_to_f32(h);
}

zp_status zp_gguf_dequantize(const zp_gguf *g, const zp_gguf_tensor *t, float *dst) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->ne[d];
    const uint8_t *p = t->data;
    switch (t->type) {
    case ZP_GGML_F32: memcpy(dst, p, (size_t)n * 4); break;
    case ZP_GGML_F16: for (int64_t i = 0; i < n; i++) dst[i] = f16(p + 2 * i); break;
    case ZP_GGML_BF16: for (int64_t i = 0; i < n; i++) { uint16_t h; memcpy(&h, p + 2 * i, 2); dst[i] = zp_bf16_to_f32(h); } break;
    default: {
        const zp_gguf_quant *q = zp_gguf_quant_find(t->type);
        if (!q) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: tensor %s: type %s cannot be dequantised", g->path, t->name, zp_ggml_type_name(t->type));
        for (int64_t b = 0; b < n / q->block_values; b++) q->dequant(p + b * q->block_bytes, dst + b * q->block_values);
    }
    }
    return ZP_OK;
}
