/* files.c - whole files and strict JSON objects read with one error line naming the file
 * (files.h). Deliberately not here: what any file means (config.c, tokenizer_load.c, ...). */
#include "files.h"

#include <cjson/cJSON.h>
#include <dirent.h> /* a model folder is not empty */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

zp_status zp_read_file(const char *path, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return zp_fail(ZP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) { fclose(f); return zp_fail(ZP_ERR_IO, "%s: not a regular file", path); }
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return zp_fail(ZP_ERR_IO, "%s: cannot seek", path); }
    long n = ftell(f);
    rewind(f);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf) { fclose(f); return zp_fail(ZP_ERR_OOM, "%s: cannot allocate %ld bytes", path, n); }
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) { free(buf); return zp_fail(ZP_ERR_IO, "%s: short read", path); }
    buf[n] = 0;
    *out = buf;
    if (len) *len = (size_t)n;
    return ZP_OK;
}

static int by_key(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The first key that appears twice in an object of the tree (Python's json keeps the last
 * value, cJSON would find the first: such a file means two things), or NULL. */
static const char *duplicate_key(const cJSON *o, int depth) {
    if (depth > 64) return NULL; /* cJSON itself refuses deeper nesting */
    int n = 0;
    for (const cJSON *e = o->child; e; e = e->next) {
        n++;
        if (e->child) {
            const char *d = duplicate_key(e, depth + 1);
            if (d) return d;
        }
    }
    if (!cJSON_IsObject(o) || n < 2) return NULL;
    const char **keys = malloc(sizeof *keys * (size_t)n), *dup = NULL;
    if (!keys) return NULL;
    int k = 0;
    for (const cJSON *e = o->child; e; e = e->next) keys[k++] = e->string;
    qsort(keys, (size_t)n, sizeof *keys, by_key);
    for (int i = 0; i + 1 < n && !dup; i++)
        if (!strcmp(keys[i], keys[i + 1])) dup = keys[i];
    free(keys);
    return dup;
}

zp_status zp_json_parse_strict(const char *txt, const char *src, cJSON **out) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(txt, &end, 0);
    if (!root || (end && end[strspn(end, " \t\r\n")])) { /* the error's place: where parsing stopped, or what follows the value */
        if (root && end) end += strspn(end, " \t\r\n");
        int line = 1, col = 1;
        for (const char *p = txt; end && p < end && *p; p++) {
            if (*p == '\n') line++, col = 1;
            else col++;
        }
        cJSON_Delete(root);
        return zp_fail(ZP_ERR_FORMAT, "%s: line %d, column %d: %s", src, line, col,
                       root ? "text after the JSON value" : "invalid JSON here (a missing comma or quote, a trailing comma, or nesting deeper than 1000)");
    }
    if (!cJSON_IsObject(root)) { cJSON_Delete(root); return zp_fail(ZP_ERR_FORMAT, "%s: the top level is not a JSON object", src); }
    const char *dup = duplicate_key(root, 0);
    if (dup) {
        zp_status s = zp_fail(ZP_ERR_FORMAT, "%s: key \"%.200s\" appears twice in one object", src, dup);
        cJSON_Delete(root);
        return s;
    }
    *out = root;
    return ZP_OK;
}

zp_status zp_read_json_object(const char *path, cJSON **out) {
    char *txt;
    ZP_TRY(zp_read_file(path, &txt, NULL));
    zp_status s = zp_json_parse_strict(txt, path, out);
    free(txt);
    return s;
}

#define ZP_MODEL_DIR_HELP                                                                                            \
    "a model folder holds config.json, the tokenizer (tokenizer.json) and the weights (model.safetensors or a .gguf); " \
    "`make models` fetches SmolLM2-135M-Instruct into models/cache/, docs/models.md says how to use your own"

zp_status zp_model_dir_check(const char *dir, int need_config) {
    struct stat sb;
    if (stat(dir, &sb) != 0) return zp_fail(ZP_ERR_IO, "model folder %s does not exist (%s)", dir, ZP_MODEL_DIR_HELP);
    if (!S_ISDIR(sb.st_mode)) return zp_fail(ZP_ERR_IO, "model folder %s is not a folder (%s)", dir, ZP_MODEL_DIR_HELP);
    DIR *d = opendir(dir);
    if (!d) return zp_fail(ZP_ERR_IO, "model folder %s cannot be read: %s", dir, strerror(errno));
    int entries = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    if (!entries) return zp_fail(ZP_ERR_IO, "model folder %s is empty (%s)", dir, ZP_MODEL_DIR_HELP);
    if (!need_config) return ZP_OK;
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (stat(path, &sb) != 0) return zp_fail(ZP_ERR_IO, "model folder %s has no config.json (%s)", dir, ZP_MODEL_DIR_HELP);
    return ZP_OK;
}
