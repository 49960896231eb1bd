/* safetensors.c - safetensors reader (mmap + header validation) and writer.
 * Format: u64 little-endian header length N, N bytes of JSON
 * {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then data.
 */
#include "safetensors.h"

#include "files.h"

#include <cjson/cJSON.h> /* header and index parsing, header writing */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int parse_dtype(const char *s, zp_dtype *t) {
    if (strcmp(s, "F32") == 0) *t = ZP_DTYPE_F32;
    else if (strcmp(s, "F16") == 0) *t = ZP_DTYPE_F16;
    else if (strcmp(s, "BF16") == 0) *t = ZP_DTYPE_BF16;
    else if (strcmp(s, "U8") == 0) *t = ZP_DTYPE_U8;
    else return 0;
    return 1;
}

static zp_status map_file(const char *path, zp_st_file *f) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return zp_fail(ZP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) { close(fd); return zp_fail(ZP_ERR_IO, "%s: fstat failed: %s", path, strerror(errno)); }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return zp_fail(ZP_ERR_IO, "%s: %s, not a file", path, S_ISDIR(sb.st_mode) ? "a folder" : "not a regular file");
    }
    f->size = (size_t)sb.st_size;
    if (f->size < 8) { close(fd); return zp_fail(ZP_ERR_FORMAT, "%s: file is %zu bytes, too short for a safetensors header", path, f->size); }
    f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) { f->map = NULL; return zp_fail(ZP_ERR_IO, "%s: mmap failed: %s", path, strerror(errno)); }
    f->path = strdup(path);
    ZP_CHECK_ALLOC(f->path);
    return ZP_OK;
}

static zp_status parse_entry(const cJSON *e, const char *path, const uint8_t *data, size_t data_len,
                             zp_st_tensor *t) {
    const char *nm = e->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: header entry needs dtype, shape and data_offsets [begin,end]", path, nm);
    if (!parse_dtype(dt->valuestring, &t->dtype))
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: tensor %s: dtype %s is not supported (expected BF16, F16, F32 or U8)", path, nm, dt->valuestring);
    t->ndim = cJSON_GetArraySize(sh);
    if (t->ndim > ZP_ST_MAX_DIMS) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: tensor %s: %d dimensions (at most %d)", path, nm, t->ndim, ZP_ST_MAX_DIMS);
    uint64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        const cJSON *x = cJSON_GetArrayItem(sh, d);
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0 && x->valuedouble <= 1e12) || x->valuedouble != (double)(int64_t)x->valuedouble)
            return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: shape entry %d is not a valid size", path, nm, d);
        t->shape[d] = (int64_t)x->valuedouble;
        if (t->shape[d] && numel > (1ull << 50) / (uint64_t)t->shape[d]) /* no wrap-around below */
            return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: more than 2^50 values", path, nm);
        numel *= (uint64_t)t->shape[d];
    }
    const cJSON *b = cJSON_GetArrayItem(off, 0), *en = cJSON_GetArrayItem(off, 1);
    if (!cJSON_IsNumber(b) || !cJSON_IsNumber(en) || !(b->valuedouble >= 0) || en->valuedouble < b->valuedouble ||
        en->valuedouble > 9007199254740992.0) /* range before the conversion below */
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: data_offsets must be 0 <= begin <= end < 2^53", path, nm);
    uint64_t begin = (uint64_t)b->valuedouble, end = (uint64_t)en->valuedouble;
    if (end > data_len)
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: data_offsets end %llu is past the data section (%zu bytes; file truncated?)",
                       path, nm, (unsigned long long)end, data_len);
    if (numel * (uint64_t)zp_dtype_size(t->dtype) != end - begin)
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: shape needs %llu bytes of %s but data_offsets span %llu", path, nm,
                       (unsigned long long)(numel * zp_dtype_size(t->dtype)), zp_dtype_name(t->dtype),
                       (unsigned long long)(end - begin));
    t->data = data + begin;
    t->nbytes = end - begin;
    t->name = strdup(nm);
    ZP_CHECK_ALLOC(t->name);
    return ZP_OK;
}

static int cmp_by_data(const void *a, const void *b) {
    const zp_st_tensor *x = *(const zp_st_tensor *const *)a, *y = *(const zp_st_tensor *const *)b;
    return (x->data > y->data) - (x->data < y->data);
}

/* No two tensors of one file may share bytes. */
static zp_status check_overlap(zp_st_tensor *ts, int n, const char *path) {
    if (n < 2) return ZP_OK;
    zp_st_tensor **v = malloc(sizeof *v * (size_t)n);
    ZP_CHECK_ALLOC(v);
    for (int i = 0; i < n; i++) v[i] = &ts[i];
    qsort(v, (size_t)n, sizeof *v, cmp_by_data);
    for (int i = 1; i < n; i++) {
        const uint8_t *prev_end = (const uint8_t *)v[i - 1]->data + v[i - 1]->nbytes;
        if ((const uint8_t *)v[i]->data < prev_end && v[i]->nbytes > 0) {
            zp_status s = zp_fail(ZP_ERR_FORMAT, "%s: tensors %s and %s overlap in the data section", path,
                                  v[i - 1]->name, v[i]->name);
            free(v);
            return s;
        }
    }
    free(v);
    return ZP_OK;
}

static zp_status parse_header(zp_safetensors *st, int fi, const cJSON *root) {
    zp_st_file *f = &st->files[fi];
    uint64_t hlen;
    memcpy(&hlen, f->map, 8);
    const uint8_t *data = (const uint8_t *)f->map + 8 + hlen;
    size_t data_len = f->size - 8 - (size_t)hlen;
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) n++;
    zp_st_tensor *grown = realloc(st->tensors, sizeof *grown * (size_t)(st->n_tensors + n));
    ZP_CHECK_ALLOC(grown);
    st->tensors = grown;
    int first = st->n_tensors;
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        if (!cJSON_IsObject(e)) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: header entry is not an object", f->path, e->string);
        if (zp_st_find(st, e->string))
            return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s appears twice in the checkpoint", f->path, e->string);
        zp_st_tensor *t = &st->tensors[st->n_tensors];
        memset(t, 0, sizeof *t);
        t->file = fi;
        ZP_TRY(parse_entry(e, f->path, data, data_len, t));
        st->n_tensors++;
    }
    return check_overlap(st->tensors + first, st->n_tensors - first, f->path);
}

zp_status zp_st_open_file(zp_safetensors *st, const char *path) {
    zp_st_file *grown = realloc(st->files, sizeof *grown * (size_t)(st->n_files + 1));
    ZP_CHECK_ALLOC(grown);
    st->files = grown;
    zp_st_file *f = &st->files[st->n_files];
    memset(f, 0, sizeof *f);
    ZP_TRY(map_file(path, f));
    int fi = st->n_files++;
    uint64_t hlen;
    memcpy(&hlen, f->map, 8);
    if (hlen > (100u << 20)) /* the format's own cap on the header */
        return zp_fail(ZP_ERR_FORMAT, "%s: header length %llu is over 100 MiB", path, (unsigned long long)hlen);
    if (hlen > f->size - 8)
        return zp_fail(ZP_ERR_FORMAT, "%s: header length %llu exceeds the file size %zu (truncated or not safetensors)",
                       path, (unsigned long long)hlen, f->size);
    cJSON *root = cJSON_ParseWithLength((const char *)f->map + 8, (size_t)hlen);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return zp_fail(ZP_ERR_FORMAT, "%s: header is not a valid JSON object", path);
    }
    zp_status s = parse_header(st, fi, root);
    cJSON_Delete(root);
    return s;
}

static zp_status open_index(zp_safetensors *st, const char *dir, const char *index_path) {
    char *txt = NULL;
    FILE *fp = fopen(index_path, "rb");
    if (!fp) return zp_fail(ZP_ERR_IO, "%s: cannot open", index_path);
    fclose(fp);
    ZP_TRY(zp_read_file(index_path, &txt, NULL));
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    const cJSON *wm = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(wm)) {
        cJSON_Delete(root);
        return zp_fail(ZP_ERR_FORMAT, "%s: missing \"weight_map\" object", index_path);
    }
    zp_status s = ZP_OK;
    const cJSON *e;
    /* open each distinct shard once, in order of first mention */
    cJSON_ArrayForEach(e, wm) {
        if (!cJSON_IsString(e)) { s = zp_fail(ZP_ERR_FORMAT, "%s: weight_map[%s] is not a file name", index_path, e->string); break; }
        if (strchr(e->valuestring, '/')) { s = zp_fail(ZP_ERR_FORMAT, "%s: shard name %s must be a plain file name", index_path, e->valuestring); break; }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->valuestring);
        int seen = 0;
        for (int i = 0; i < st->n_files; i++) seen |= strcmp(st->files[i].path, path) == 0;
        if (!seen && (s = zp_st_open_file(st, path)) != ZP_OK) break;
    }
    cJSON_ArrayForEach(e, wm) {
        if (s != ZP_OK) break;
        const zp_st_tensor *t = zp_st_find(st, e->string);
        if (!t) { s = zp_fail(ZP_ERR_FORMAT, "%s: tensor %s is listed in the index but missing from %s", index_path, e->string, e->valuestring); break; }
        const char *base = strrchr(st->files[t->file].path, '/');
        if (strcmp(base ? base + 1 : st->files[t->file].path, e->valuestring) != 0) {
            s = zp_fail(ZP_ERR_FORMAT, "%s: tensor %s is listed in %s but found in %s", index_path, e->string, e->valuestring,
                        st->files[t->file].path);
            break;
        }
    }
    cJSON_Delete(root);
    return s;
}

zp_status zp_st_open_dir(const char *dir, zp_safetensors *st) {
    memset(st, 0, sizeof *st);
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    struct stat sb;
    zp_status s;
    if (stat(path, &sb) == 0) {
        s = open_index(st, dir, path);
    } else {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if (stat(path, &sb) != 0)
            return zp_fail(ZP_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json (run `zipage mkmodel` or pass --model)", dir);
        s = zp_st_open_file(st, path);
    }
    if (s != ZP_OK) zp_st_close(st);
    return s;
}

const zp_st_tensor *zp_st_find(const zp_safetensors *st, const char *name) {
    for (int i = 0; i < st->n_tensors; i++)
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    return NULL;
}

void zp_st_close(zp_safetensors *st) {
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].map) munmap(st->files[i].map, st->files[i].size);
        free(st->files[i].path);
    }
    free(st->tensors);
    free(st->files);
    memset(st, 0, sizeof *st);
}

size_t zp_st_entry_bytes(const zp_st_entry *e) {
    size_t n = (size_t)zp_dtype_size(e->dtype);
    for (int d = 0; d < e->ndim; d++) n *= (size_t)e->shape[d];
    return n;
}

zp_status zp_st_write_begin(const char *path, const zp_st_entry *entries, int n, FILE **out) {
    cJSON *root = cJSON_CreateObject();
    ZP_CHECK_ALLOC(root);
    cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cJSON *t = cJSON_AddObjectToObject(root, entries[i].name);
        cJSON_AddStringToObject(t, "dtype", zp_dtype_name(entries[i].dtype));
        cJSON *sh = cJSON_AddArrayToObject(t, "shape");
        for (int d = 0; d < entries[i].ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)entries[i].shape[d]));
        cJSON *o = cJSON_AddArrayToObject(t, "data_offsets");
        size_t nb = zp_st_entry_bytes(&entries[i]);
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + nb)));
        off += nb;
    }
    char *hdr = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    ZP_CHECK_ALLOC(hdr);
    size_t hlen = strlen(hdr), padded = (hlen + 7) & ~(size_t)7;
    FILE *f = fopen(path, "wb");
    if (!f) { free(hdr); return zp_fail(ZP_ERR_IO, "%s: cannot create: %s", path, strerror(errno)); }
    uint64_t h64 = padded;
    int ok = fwrite(&h64, 8, 1, f) == 1 && fwrite(hdr, 1, hlen, f) == hlen;
    for (size_t i = hlen; ok && i < padded; i++) ok = fputc(' ', f) != EOF;
    free(hdr);
    if (!ok) { fclose(f); return zp_fail(ZP_ERR_IO, "%s: write failed (disk full?)", path); }
    *out = f;
    return ZP_OK;
}

zp_status zp_st_write(const char *path, const zp_st_entry *entries, int n) {
    FILE *f;
    ZP_TRY(zp_st_write_begin(path, entries, n, &f));
    int ok = 1;
    for (int i = 0; ok && i < n; i++) {
        size_t nb = zp_st_entry_bytes(&entries[i]);
        ok = fwrite(entries[i].data, 1, nb, f) == nb;
    }
    if (fclose(f) != 0 || !ok) return zp_fail(ZP_ERR_IO, "%s: write failed (disk full?)", path);
    return ZP_OK;
}
