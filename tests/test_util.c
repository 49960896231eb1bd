/* test_util.c - assertion bookkeeping and cached mkmodel fixtures. */
#include "test_util.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mkmodel.h"
#include "trig_stats.h"

int zp_test_failures = 0;

void zp_check_fails(zp_status got, zp_status want, const char *needle, const char *expr, const char *file, int line) {
    if (got != want) {
        fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", file, line, expr, zp_status_name(got), zp_status_name(want),
                zp_last_error());
        zp_test_failures++;
    } else if (needle && !strstr(zp_last_error(), needle)) {
        fprintf(stderr, "%s:%d: %s: error \"%s\" does not mention \"%s\"\n", file, line, expr, zp_last_error(), needle);
        zp_test_failures++;
    }
}

int zp_test_finish(const char *name) {
    if (zp_test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, zp_test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

/* Written into a private folder then renamed into place, so tests running in parallel never
 * see a half-written checkpoint. */
const char *zp_test_model(const char *preset) {
    static char paths[8][512];
    static int n = 0;
    char dir[512], st[600], tmp[600];
    snprintf(dir, sizeof dir, "%s/model-%s", ZP_TEST_TMP, preset);
    for (int i = 0; i < n && i < 8; i++)
        if (!strcmp(paths[i], dir)) return paths[i];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    struct stat sb;
    if (stat(st, &sb) != 0) {
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", dir, (long)getpid());
        if (zp_mkmodel(preset, tmp, 1, ZP_DTYPE_BF16) != ZP_OK) {
            fprintf(stderr, "fixture: mkmodel %s failed: %s\n", preset, zp_last_error());
            exit(1);
        }
        if (rename(tmp, dir) != 0) { /* another test won the race: use its copy */
            char cmd[1400];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
            if (system(cmd) != 0) fprintf(stderr, "fixture: could not remove %s\n", tmp);
        }
    }
    snprintf(paths[n % 8], sizeof paths[0], "%s", dir);
    return paths[n++ % 8];
}

const char *zp_test_kv4_config(const char *name, const char *arch, const char *type, const char *extra) {
    static char path[3][1024];
    static int k;
    char dir[900];
    char *out = path[k++ % 3];
    snprintf(dir, sizeof dir, "%s/%s", ZP_TEST_TMP, name);
    mkdir(dir, 0755);
    snprintf(out, sizeof path[0], "%s/config.json", dir);
    FILE *f = fopen(out, "w");
    CHECK(f != NULL);
    if (!f) return out;
    fprintf(f, "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"hidden_size\": 256, \"intermediate_size\": 512, "
               "\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"num_hidden_layers\": 2, \"head_dim\": 32, "
               "\"max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000, \"vocab_size\": 1024, "
               "\"bos_token_id\": 1, \"eos_token_id\": 2, \"tie_word_embeddings\": false%s}\n",
            arch, type, extra);
    fclose(f);
    return out;
}

double zp_max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
    }
    return m;
}

double zp_max_abs(const float *a, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

const char *zp_test_trig_stats(const char *name, int layers, int heads, int half) {
    static char path[512];
    const size_t cells = (size_t)layers * (size_t)heads * (size_t)half;
    zp_trig_stats s = {.n_layers = layers,
                       .n_heads = heads,
                       .half = half,
                       .mean_re = malloc(sizeof(float) * cells),
                       .mean_im = malloc(sizeof(float) * cells),
                       .abs_mean = malloc(sizeof(float) * cells)};
    CHECK(s.mean_re && s.mean_im && s.abs_mean);
    float *fields[3] = {s.mean_re, s.mean_im, s.abs_mean};
    for (int f = 0; f < 3 && s.mean_re && s.mean_im && s.abs_mean; f++)
        for (size_t i = 0; i < cells; i++) {
            const size_t l = i / ((size_t)heads * (size_t)half), in = i % ((size_t)heads * (size_t)half);
            fields[f][i] =
                f == 2 ? 1.5f + 0.01f * (float)(in % 7) : 0.3f * (float)((in * (size_t)(f + 3) + l) % 11) - 1.5f;
        }
    snprintf(path, sizeof path, "%s/%s.safetensors", ZP_TEST_TMP, name);
    CHECK_OK(zp_trig_stats_write(path, &s));
    zp_trig_stats_free(&s);
    return path;
}

float zp_top_two_gap(const float *row, int V) {
    float a = -INFINITY, b = -INFINITY, m = 0;
    for (int i = 0; i < V; i++) {
        if (row[i] > a) {
            b = a;
            a = row[i];
        } else if (row[i] > b)
            b = row[i];
        m = fmaxf(m, fabsf(row[i]));
    }
    return (a - b) / m;
}

void *zp_test_up(zp_backend *be, const float *x, zp_act_type type, size_t n) {
    void *b = zp_test_buf(be, type, n);
    if (b) CHECK_OK(be->from_host(be, b, type, x, 0, n));
    return b;
}

void *zp_test_buf(zp_backend *be, zp_act_type type, size_t n) {
    void *b = NULL;
    CHECK_OK(be->alloc(be, n, type, &b));
    return b;
}
