/* test_rope.c - RoPE against transformers itself: 24 configurations (every rope type, both
 * config styles, legacy "type", missing theta / head_dim / original_max_position_embeddings,
 * head sizes 64-128) whose inverse frequencies and attention scaling transformers 5.17 (torch
 * 2.11, CPU) computed, in tests/data/rope/transformers-5.17.jsonl (made by
 * tests/device/make_rope_goldens.py). Every configuration transformers accepts is either
 * reproduced (inv_freq within 2 ulp per element: torch's pow is SLEEF's, within 1 ulp of the
 * correctly rounded one we compute; the attention factor exactly) or refused for a documented
 * reason (rope.h): longrope, partial_rotary_factor != 1, "type" and "rope_type" disagreeing.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "files.h"
#include "config.h"
#include "test_util.h"

static int ulp_diff(float a, float b) {
    int32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x > y ? x - y : y - x;
}

static void hex_floats(const char *hex, float *out, int n) {
    for (int i = 0; i < n; i++) {
        unsigned char b[4];
        for (int k = 0; k < 4; k++) sscanf(hex + 8 * i + 2 * k, "%2hhx", &b[k]);
        memcpy(&out[i], b, 4); /* little-endian, as torch's numpy().tobytes() on x86 */
    }
}

/* The fields a whole config needs but RoPE does not use. */
static void complete(cJSON *cfg) {
    if (!cJSON_GetObjectItem(cfg, "num_hidden_layers")) cJSON_AddNumberToObject(cfg, "num_hidden_layers", 1);
    if (!cJSON_GetObjectItem(cfg, "intermediate_size")) cJSON_AddNumberToObject(cfg, "intermediate_size", 64);
    if (!cJSON_GetObjectItem(cfg, "vocab_size")) cJSON_AddNumberToObject(cfg, "vocab_size", 16);
    if (!cJSON_GetObjectItem(cfg, "num_key_value_heads"))
        cJSON_AddNumberToObject(cfg, "num_key_value_heads", cJSON_GetObjectItem(cfg, "num_attention_heads")->valuedouble);
}

static int refused_by_design(const char *name) {
    static const char *const names[] = {"q3_both_type_keys", "llama_prf_default", "llama_prf_linear", "qwen2_longrope",
                                        "llama_longrope_topomax", "llama_longrope_factor", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return 1;
    return 0;
}

/* x rotated at pos as the backends rotate a new key: fp32 angle, cos/sin rounded once, times att. */
static void rope_at(const float *x, float *out, const float *inv_freq, int half, int pos, float att) {
    for (int i = 0; i < half; i++) {
        const float a = (float)pos * inv_freq[i], c = (float)cos((double)a) * att, s = (float)sin((double)a) * att;
        out[i] = x[i] * c - x[i + half] * s;
        out[i + half] = x[i + half] * c + x[i] * s;
    }
}

/* zp_rope_shift_row: a key rotated at `from` and shifted to `to` is the key rotated at `to` (the
 * attention factor kept) to within fp32 rounding, at positions up to 2^17 where one fp32 angle
 * ulp is 2^-7 rad; a rotation by the fp32 angle of (to - from) would miss by that ulp. */
static void rope_shift(void) {
    enum { HALF = 64 };
    zp_rope_config r = {.type = ZP_ROPE_DEFAULT, .theta = 1e6};
    float inv_freq[HALF], att, x[2 * HALF], k[2 * HALF], want[2 * HALF], naive[2 * HALF];
    zp_rope_frequencies(&r, 2 * HALF, inv_freq, &att);
    for (int i = 0; i < 2 * HALF; i++) x[i] = (float)sin(0.7 * i + 0.3) * (1.0f + 0.01f * (float)i);
    static const int moves[][2] = {{40, 4}, {1000, 63}, {131071, 60000}, {131000, 5}, {77, 77}, {5, 99000}};
    double worst = 0, worst_naive = 0;
    for (size_t m = 0; m < sizeof moves / sizeof moves[0]; m++) {
        const int from = moves[m][0], to = moves[m][1];
        rope_at(x, k, inv_freq, HALF, from, 1.25f);
        rope_at(x, want, inv_freq, HALF, to, 1.25f);
        memcpy(naive, k, sizeof k);
        zp_rope_shift_row(k, inv_freq, HALF, from, to);
        for (int i = 0; i < HALF; i++) { /* the naive shift: one fp32 angle (to - from) * inv_freq */
            const float a = (float)(to - from) * inv_freq[i], c = (float)cos((double)a), s = (float)sin((double)a);
            const float x1 = naive[i], x2 = naive[i + HALF];
            naive[i] = x1 * c - x2 * s;
            naive[i + HALF] = x2 * c + x1 * s;
        }
        const double d = zp_max_abs_diff(k, want, 2 * HALF), dn = zp_max_abs_diff(naive, want, 2 * HALF);
        worst = d > worst ? d : worst;
        worst_naive = dn > worst_naive ? dn : worst_naive;
        if (from == to) CHECK(d == 0.0);
    }
    printf("rope shift: worst |shifted - rotated at the target| %.3g (a shift by the fp32 angle of the distance: %.3g)\n", worst, worst_naive);
    CHECK(worst < 2e-6);
    CHECK(worst_naive > 1e-3);
}

int main(void) {
    rope_shift();
    char path[512], *txt;
    snprintf(path, sizeof path, "%s/rope/transformers-5.17.jsonl", ZP_TEST_DATA);
    CHECK_OK(zp_read_file(path, &txt, NULL));
    int cases = 0, reproduced = 0, refused = 0, exact = 0, elements = 0, worst = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line), *cfg = cJSON_GetObjectItem(o, "config");
        const char *name = cJSON_GetObjectItem(o, "name")->valuestring;
        complete(cfg);
        char *json = cJSON_PrintUnformatted(cfg);
        zp_model_config c;
        zp_status s = zp_config_parse(json, name, &c);
        free(json);
        cases++;
        if (cJSON_GetObjectItem(o, "error")) { /* transformers refused: so must we */
            CHECK(s != ZP_OK);
            refused += s != ZP_OK;
        } else if (s != ZP_OK) {
            if (!refused_by_design(name)) fprintf(stderr, "%s: refused: %s\n", name, zp_last_error());
            CHECK(refused_by_design(name));
            refused++;
        } else {
            CHECK(!refused_by_design(name));
            const char *hex = cJSON_GetObjectItem(o, "inv_freq_f32le")->valuestring;
            const int half = (int)strlen(hex) / 8;
            CHECK(half == c.head_dim / 2);
            float want[256], got[256], att;
            hex_floats(hex, want, half);
            zp_rope_frequencies(&c.rope, c.head_dim, got, &att);
            int case_worst = 0;
            for (int i = 0; i < half; i++) {
                int u = ulp_diff(got[i], want[i]);
                case_worst = u > case_worst ? u : case_worst;
                exact += u == 0;
            }
            elements += half;
            worst = case_worst > worst ? case_worst : worst;
            const float want_att = (float)cJSON_GetObjectItem(o, "attention_scaling")->valuedouble;
            if (case_worst > 2 || att != want_att)
                fprintf(stderr, "%s: inv_freq off by up to %d ulp, attention factor %.9g vs %.9g\n", name, case_worst, att, want_att);
            CHECK(case_worst <= 2 && att == want_att);
            reproduced++;
        }
        cJSON_Delete(o);
    }
    free(txt);
    printf("rope: %d transformers configurations: %d reproduced (%d/%d inv_freq elements bit-identical, worst %d ulp), %d refused by design\n",
           cases, reproduced, exact, elements, worst, refused);
    CHECK(cases == 24 && reproduced == 18 && refused == 6);
    return zp_test_finish("test_rope");
}
