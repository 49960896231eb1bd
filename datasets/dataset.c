/* dataset.c - JSONL loading with per-line validation, and subset selection. */
#include "dataset.h"

#include "passkey.h" /* generated, not read */

#include <cjson/cJSON.h> /* one object per line */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>   /* scandir: the known names */
#include <sys/stat.h>
#include <unistd.h>   /* access */

static char *str_field(const cJSON *o, const char *key) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(it)) return strdup(it->valuestring);
    if (cJSON_IsNumber(it)) {
        char buf[64];
        snprintf(buf, sizeof buf, "%d", it->valueint);
        return strdup(buf);
    }
    return NULL;
}

static int read_text(const char *path, char **out, char *err) {
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, ZP_DS_ERR, "%.300s: cannot open (dataset files live in datasets/data/)", path); return -1; }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) { /* a directory or a FIFO has no usable size */
        fclose(f);
        snprintf(err, ZP_DS_ERR, "%.300s: not a regular file", path);
        return -1;
    }
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n < 0) { fclose(f); snprintf(err, ZP_DS_ERR, "%.300s: cannot seek", path); return -1; }
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(buf); snprintf(err, ZP_DS_ERR, "%.300s: read failed", path); return -1; }
    fclose(f);
    buf[n] = 0;
    *out = buf;
    return 0;
}

/* The offset of the first byte of p[0..n) that is not valid UTF-8 (overlong forms, surrogates
 * and code points past U+10FFFF included), or -1 when all is. */
static long utf8_invalid_at(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        const unsigned c = p[i];
        size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!k || i + k > n) return (long)i;
        unsigned cp = k == 1 ? c : c & (0x7f >> k);
        for (size_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xc0) != 0x80) return (long)i;
            cp = cp << 6 | (p[i + j] & 0x3f);
        }
        const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return (long)i;
        i += k;
    }
    return -1;
}

/* A name that is no dataset: the error lists the names there are (dir's .jsonl files, sorted,
 * and the generated ones). */
static int unknown_name(const char *name, const char *dir, char *err) {
    char known[400] = "";
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *f = ents[i]->d_name;
        size_t len = strlen(f);
        if (len > 6 && !strcmp(f + len - 6, ".jsonl") && strlen(known) + len < sizeof known - 40)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%.*s, ", (int)(len - 6), f);
        free(ents[i]);
    }
    if (n > 0) free(ents);
    snprintf(err, ZP_DS_ERR, "unknown dataset \"%.100s\" (known: %spasskey, passkey-N; or a path to a .jsonl file; %.200s holds the files)", name, known, dir);
    return -1;
}

/* Every test of a list is an object with string "input" and "output". */
static int check_tests(const cJSON *tests, const char *key, const ds_item *it, const char *path, int line, char *err) {
    int k = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tests) {
        k++;
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "input")) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "output"))) {
            snprintf(err, ZP_DS_ERR, "%.300s: line %d (%s): %s entry %d needs string \"input\" and \"output\"", path, line, it->id, key, k);
            return -1;
        }
    }
    return 0;
}

/* The keys a record may have (the shipped files' and the importer's; datasets/data/README.md):
 * any other is refused, naming it, rather than silently ignored (a misspelt "answer" too). */
static const char *const MATH_KEYS[] = {"id", "problem", "answer", "answer_int", "answer_as_given", "solution", "year", "exam", "number",
                                        "url", "source_index", "source_id", "source", "subject", "level", "unique_id", NULL};
static const char *const CODE_KEYS[] = {"id", "question_id", "question_title", "platform", "contest_id", "release_date", "difficulty", "question",
                                        "starter_code", "test_type", "fn_name", "public_tests", "public_tests_source", "private_tests",
                                        "private_tests_available", "hidden_tests_ref", "qwq_global_id", "prompt_qwq", "source", NULL};

static int check_record_keys(const cJSON *o, int is_code, const char *path, int line, char *err) {
    const char *const *known = is_code ? CODE_KEYS : MATH_KEYS;
    const cJSON *e;
    cJSON_ArrayForEach(e, o) {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++) ok = !strcmp(known[i], e->string);
        if (!ok) {
            snprintf(err, ZP_DS_ERR, "%.300s: line %d has the unknown key \"%.60s\" (a %s record's keys: id, %s, ...; datasets/data/README.md)", path,
                     line, e->string, is_code ? "code" : "math", is_code ? "question, test_type, public_tests" : "problem, answer");
            return -1;
        }
    }
    return 0;
}

static int parse_item(const cJSON *o, int is_code, ds_item *it, const char *path, int line, char *err) {
    memset(it, 0, sizeof *it);
    it->line = line;
    if (check_record_keys(o, is_code, path, line, err)) return -1;
    it->id = str_field(o, "id");
    it->problem = str_field(o, is_code ? "question" : "problem");
    if (!it->id || !it->problem) {
        snprintf(err, ZP_DS_ERR, "%.300s: line %d has no string \"id\" and \"%s\"", path, line, is_code ? "question" : "problem");
        return -1;
    }
    if (!it->id[0] || strchr(it->id, ',')) { /* ids filters are comma-separated */
        snprintf(err, ZP_DS_ERR, "%.300s: line %d: \"id\" must be non-empty and without commas (got \"%.100s\")", path, line, it->id);
        return -1;
    }
    if (!is_code) {
        const cJSON *ans = cJSON_GetObjectItemCaseSensitive(o, "answer");
        if (ans && !cJSON_IsString(ans)) { /* 3.5 would have become "3": the reference as written, a string */
            snprintf(err, ZP_DS_ERR, "%.300s: line %d (%s): \"answer\" must be a string (write it as the reference is written, e.g. \"3.5\")", path, line,
                     it->id);
            return -1;
        }
        it->answer = str_field(o, "answer");
        it->difficulty = str_field(o, "level");
        if (!it->answer) { snprintf(err, ZP_DS_ERR, "%.300s: line %d (%s) has no \"answer\"", path, line, it->id); return -1; }
        return 0;
    }
    it->difficulty = str_field(o, "difficulty");
    it->test_type = str_field(o, "test_type");
    it->fn_name = str_field(o, "fn_name");
    it->starter_code = str_field(o, "starter_code");
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(o, "public_tests");
    if (!it->test_type || !cJSON_IsArray(tests) || (strcmp(it->test_type, "stdin") && !it->fn_name)) {
        snprintf(err, ZP_DS_ERR, "%.300s: line %d (%s): code items need test_type, public_tests and fn_name for functional tests", path, line, it->id);
        return -1;
    }
    /* LiveCodeBench grades by standard input exactly when there is no function name */
    if (strcmp(it->test_type, "stdin") && strcmp(it->test_type, "functional")) {
        snprintf(err, ZP_DS_ERR, "%.300s: line %d (%s): test_type \"%.40s\" is neither stdin nor functional", path, line, it->id, it->test_type);
        return -1;
    }
    if (!strcmp(it->test_type, "stdin") && it->fn_name) {
        snprintf(err, ZP_DS_ERR, "%.300s: line %d (%s): a stdin problem with fn_name \"%.40s\"", path, line, it->id, it->fn_name);
        return -1;
    }
    const cJSON *priv = cJSON_GetObjectItemCaseSensitive(o, "private_tests");
    if (priv && !cJSON_IsNull(priv) && !cJSON_IsArray(priv)) {
        snprintf(err, ZP_DS_ERR, "%.300s: line %d (%s): \"private_tests\" is not a list", path, line, it->id);
        return -1;
    }
    if (check_tests(tests, "public_tests", it, path, line, err) || (cJSON_IsArray(priv) && check_tests(priv, "private_tests", it, path, line, err)))
        return -1;
    it->tests_json = cJSON_PrintUnformatted(tests);
    if (cJSON_GetArraySize(priv) > 0) it->private_tests_json = cJSON_PrintUnformatted(priv);
    return 0;
}

int ds_open(const char *name, const char *dir, ds_dataset *d, char *err) {
    memset(d, 0, sizeof *d);
    if (passkey_is_name(name)) return passkey_open(name, d, err);
    char path[4096], *txt;
    if (strstr(name, ".jsonl")) snprintf(path, sizeof path, "%s", name);
    else snprintf(path, sizeof path, "%s/%s.jsonl", dir, name);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(d->name, sizeof d->name, "%.*s", (int)(strlen(base) - 6), base);
    d->is_code = strstr(d->name, "livecodebench") != NULL;
    if (!strstr(name, ".jsonl") && access(path, F_OK) != 0) return unknown_name(name, dir, err);
    if (read_text(path, &txt, err)) return -1;
    int cap = 64, line = 0, rc = 0;
    d->items = malloc(sizeof *d->items * (size_t)cap);
    for (char *p = txt, *nl; p && *p && rc == 0; p = nl ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        if (nl) *nl = 0;
        line++;
        if (!*p) continue;
        const long bad = utf8_invalid_at((const unsigned char *)p, strlen(p));
        if (bad >= 0) {
            snprintf(err, ZP_DS_ERR, "%.300s: line %d is not valid UTF-8 (byte %ld of the line)", path, line, bad + 1);
            rc = -1;
            break;
        }
        const char *end = NULL;
        cJSON *o = cJSON_ParseWithOpts(p, &end, 0);
        if (end) end += strspn(end, " \t\r");
        if (!cJSON_IsObject(o)) {
            snprintf(err, ZP_DS_ERR, "%.300s: line %d is not a JSON object (truncated file?)", path, line);
            rc = -1;
        } else if (end && *end) {
            snprintf(err, ZP_DS_ERR, "%.300s: line %d has text after its JSON object", path, line);
            rc = -1;
        } else if (strstr(p, "\\u0000")) {
            snprintf(err, ZP_DS_ERR, "%.300s: line %d contains a NUL character (\\u0000)", path, line);
            rc = -1;
        } else {
            if (d->n == cap) d->items = realloc(d->items, sizeof *d->items * (size_t)(cap *= 2));
            rc = parse_item(o, d->is_code, &d->items[d->n], path, line, err);
            d->n++;
        }
        cJSON_Delete(o);
    }
    free(txt);
    if (rc == 0 && d->n == 0) { snprintf(err, ZP_DS_ERR, "%.300s: no items", path); rc = -1; }
    for (int i = 0; rc == 0 && i < d->n; i++) /* ids select problems and key the samples: unique */
        for (int j = i + 1; rc == 0 && j < d->n; j++)
            if (!strcmp(d->items[i].id, d->items[j].id)) {
                snprintf(err, ZP_DS_ERR, "%.300s: lines %d and %d have the same id \"%.100s\"", path, d->items[i].line, d->items[j].line, d->items[i].id);
                rc = -1;
            }
    for (int i = 0; rc == 0 && i < d->n; i++) d->n_private += d->items[i].private_tests_json != NULL;
    if (rc == 0 && d->n_private > 0 && d->n_private < d->n) { /* a run is graded on one test set */
        for (int i = 0; i < d->n; i++)
            if (!d->items[i].private_tests_json) {
                snprintf(err, ZP_DS_ERR, "%.300s: %d of %d problems have private tests, line %d (%.100s) has none: fill all or none",
                         path, d->n_private, d->n, d->items[i].line, d->items[i].id);
                break;
            }
        rc = -1;
    }
    if (rc) ds_free(d);
    return rc;
}

void ds_free(ds_dataset *d) {
    for (int i = 0; i < d->n; i++) {
        ds_item *it = &d->items[i];
        free(it->id); free(it->problem); free(it->answer); free(it->difficulty); free(it->test_type); free(it->fn_name);
        free(it->starter_code); free(it->tests_json); free(it->private_tests_json);
    }
    free(d->items);
    memset(d, 0, sizeof *d);
}

static int id_listed(const char *ids, const char *id) {
    size_t n = strlen(id);
    for (const char *p = ids; (p = strstr(p, id)) != NULL; p += n)
        if ((p == ids || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

int ds_select(const ds_dataset *d, const char *ids, int limit, int stratified, int **idx, int *n, char *err) {
    int *v = malloc(sizeof(int) * (size_t)d->n), m = 0;
    if (!v) { snprintf(err, ZP_DS_ERR, "out of memory"); return -1; }
    for (int i = 0; i < d->n; i++)
        if (!ids || id_listed(ids, d->items[i].id)) v[m++] = i;
    if (ids && m == 0) { free(v); snprintf(err, ZP_DS_ERR, "%.300s: none of the ids \"%.200s\" exists", d->name, ids); return -1; }
    if (limit > 0 && limit < m && !stratified) m = limit;
    if (limit > 0 && limit < m && stratified) { /* proportional per difficulty, largest remainder */
        const char *cls[16];
        int count[16] = {0}, take[16] = {0}, nc = 0;
        for (int i = 0; i < m; i++) {
            const char *c = d->items[v[i]].difficulty ? d->items[v[i]].difficulty : "";
            int k = 0;
            while (k < nc && strcmp(cls[k], c)) k++;
            if (k == nc && nc < 16) cls[nc++] = c;
            if (k < 16) count[k]++;
        }
        int given = 0;
        double rem[16];
        for (int k = 0; k < nc; k++) { double q = (double)limit * count[k] / m; take[k] = (int)q; rem[k] = q - take[k]; given += take[k]; }
        while (given < limit) {
            int best = 0;
            for (int k = 1; k < nc; k++) if (rem[k] > rem[best]) best = k;
            take[best]++; rem[best] = -1; given++;
        }
        int w = 0;
        for (int i = 0; i < m; i++) {
            const char *c = d->items[v[i]].difficulty ? d->items[v[i]].difficulty : "";
            int k = 0;
            while (k < nc && strcmp(cls[k], c)) k++;
            if (k < nc && take[k] > 0) { take[k]--; v[w++] = v[i]; }
        }
        m = w;
    }
    *idx = v;
    *n = m;
    return 0;
}
