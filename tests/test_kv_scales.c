/* test_kv_scales.c - the scales of the FP8 K/V cache (kv_scales.h, issue 39).
 * Checkpoint scales: every name of vLLM's loader (vllm 0.34.0 weight_utils.py
 * maybe_remap_kv_scale_name, base_config.py's cache-scale mapper, fp8.py's output_scale) is read,
 * in F32 and BF16, of shape [] or [1]; a lone kv_scale serves both; a layer without any keeps 1.0;
 * no scale at all gives none; every refusal names the tensor (one side only, two names for one
 * scale, a second value, 0, NaN, two elements). Through a model: a sharded checkpoint (index.json)
 * with scales gives each of its layers' KV heads its per-tensor scale in the engine's fp8 cache.
 * Calibration (kv_scales prompt): after the first prefill each KV head's scales of layer 0 are
 * max|k| / 200 and max|v| / 100 of the keys and values an fp32 cache (kv_dtype auto) holds for
 * the same prompt and its bytes are e4m3(that cache / scale); in every layer the largest stored
 * byte is max / scale's rounding; a later prefill changes nothing.
 * Refusals: prompt without fp8, an unknown kv_scales. Not here: CUDA (no fp8 kernels yet). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dtype.h"
#include "engine.h"
#include "kv_scales.h"
#include "mkmodel.h"
#include "model.h"
#include "safetensors.h"
#include "test_runner.h"
#include "test_util.h"

typedef struct {
    const char *name;
    float v;
    int bf16, shape1, n; /* BF16 storage; shape [1] (else []); n elements (0: 1) */
} scale_t;

/* Writes the scales into path as a safetensors file. */
static void write_scales(const char *path, const scale_t *s, int n) {
    zp_st_entry e[16];
    static uint16_t h[16][2];
    static float f[16][2];
    for (int i = 0; i < n; i++) {
        const int k = s[i].n ? s[i].n : 1;
        for (int j = 0; j < k; j++) h[i][j] = zp_f32_to_bf16(s[i].v), f[i][j] = s[i].v;
        e[i] = (zp_st_entry){s[i].name, s[i].bf16 ? ZP_DTYPE_BF16 : ZP_DTYPE_F32, k > 1 || s[i].shape1, {k}, s[i].bf16 ? (void *)h[i] : (void *)f[i]};
    }
    CHECK_OK(zp_st_write(path, e, n));
}

/* zp_kv_scales_read of a file holding s (3 layers). */
static zp_status read_scales(const scale_t *s, int n, float **out) {
    char path[600];
    snprintf(path, sizeof path, "%s/kv_scales_case.safetensors", ZP_TEST_TMP);
    write_scales(path, s, n);
    zp_safetensors st;
    zp_status r = zp_st_open_file(memset(&st, 0, sizeof st), path);
    if (r == ZP_OK) r = zp_kv_scales_read(&st, "ckpt", 3, out);
    zp_st_close(&st);
    return r;
}

static void test_names(void) {
    const scale_t a[] = {{"model.layers.0.self_attn.k_scale", 0.5f, 0, 0, 0},     {"model.layers.0.self_attn.v_scale", 0.25f, 1, 1, 0},
                         {"model.layers.2.self_attn.kv_scale", 2.0f, 0, 1, 0},    {"model.layers.1.mlp.down_proj.weight_scale", 9.f, 0, 0, 0}};
    float *s = NULL;
    CHECK_OK(read_scales(a, 4, &s));
    const float want[6] = {0.5f, 1.0f, 2.0f, 0.25f, 1.0f, 2.0f}; /* K of layers 0-2, then V */
    CHECK(s && !memcmp(s, want, sizeof want));
    free(s);
    /* every other name of one side, a layer each */
    const char *forms[][2] = {{"attn.k_scale", "attn.v_scale"}, {"k_proj.k_scale", "v_proj.v_scale"},
                              {"k_proj.output_scale", "v_proj.output_scale"}, {"qkv_proj.k_scale", "qkv_proj.v_scale"},
                              {"k_cache.scale", "v_cache.scale"}};
    for (int f = 0; f < 5; f++) {
        char kn[96], vn[96];
        snprintf(kn, sizeof kn, "model.layers.1.self_attn.%s", forms[f][0]);
        snprintf(vn, sizeof vn, "model.layers.1.self_attn.%s", forms[f][1]);
        const scale_t b[] = {{kn, 0.125f, 1, 0, 0}, {vn, 4.0f, 0, 1, 0}};
        s = NULL;
        CHECK_OK(read_scales(b, 2, &s));
        CHECK(s && s[0] == 1.0f && s[1] == 0.125f && s[2] == 1.0f && s[4] == 4.0f && s[3] == 1.0f);
        free(s);
    }
    const scale_t none[] = {{"model.layers.0.mlp.down_proj.weight_scale", 3.f, 0, 0, 0}};
    s = (float *)1;
    CHECK_OK(read_scales(none, 1, &s));
    CHECK(s == NULL);
    /* refusals */
    const scale_t one[] = {{"model.layers.1.self_attn.k_scale", 0.5f, 0, 0, 0}};
    CHECK_FAILS(read_scales(one, 1, &s), ZP_ERR_FORMAT, "ckpt: layer 1 has model.layers.1.self_attn.k_scale but no V scale");
    const scale_t two[] = {{"model.layers.0.self_attn.k_scale", 0.5f, 0, 0, 0}, {"model.layers.0.self_attn.k_proj.output_scale", 0.5f, 0, 0, 0},
                           {"model.layers.0.self_attn.v_scale", 0.5f, 0, 0, 0}};
    CHECK_FAILS(read_scales(two, 3, &s), ZP_ERR_FORMAT, "layer 0 has two K scales, model.layers.0.self_attn.k_scale and model.layers.0.self_attn.k_proj.output_scale");
    const scale_t both[] = {{"model.layers.0.self_attn.kv_scale", 0.5f, 0, 0, 0}, {"model.layers.0.self_attn.v_scale", 0.5f, 0, 0, 0}};
    CHECK_FAILS(read_scales(both, 2, &s), ZP_ERR_FORMAT, "layer 0 has model.layers.0.self_attn.kv_scale and model.layers.0.self_attn.v_scale");
    const scale_t zero[] = {{"model.layers.2.self_attn.k_scale", 0.f, 0, 0, 0}, {"model.layers.2.self_attn.v_scale", 1.f, 0, 0, 0}};
    CHECK_FAILS(read_scales(zero, 2, &s), ZP_ERR_FORMAT, "K/V scale model.layers.2.self_attn.k_scale is 0 (a scale must be finite and above 0)");
    const scale_t nan[] = {{"model.layers.2.self_attn.kv_scale", NAN, 0, 0, 0}};
    CHECK_FAILS(read_scales(nan, 1, &s), ZP_ERR_FORMAT, "K/V scale model.layers.2.self_attn.kv_scale is nan");
    const scale_t wide[] = {{"model.layers.0.self_attn.v_scale", 1.f, 0, 0, 2}, {"model.layers.0.self_attn.k_scale", 1.f, 0, 0, 0}};
    CHECK_FAILS(read_scales(wide, 2, &s), ZP_ERR_FORMAT, "K/V scale model.layers.0.self_attn.v_scale has 2 elements (a per-tensor scale has one)");
    int c;
    CHECK_FAILS(zp_kv_scales_parse("dynamic", 1, &c), ZP_ERR_INVALID, "kv_scales \"dynamic\" is neither checkpoint nor prompt");
    CHECK_FAILS(zp_kv_scales_parse("prompt", 0, &c), ZP_ERR_INVALID, "kv_scales prompt calibrates an fp8 cache's scales, and kv_dtype is not fp8");
}

/* A tiny-qwen3 checkpoint split in two shards by an index.json, the second holding K/V scales
 * for layers 0 (per side) and 1 (kv_scale); the engine's fp8 cache takes them per head. */
static void test_checkpoint(void) {
    char dir[600], p1[700], p2[700], idx[700];
    snprintf(dir, sizeof dir, "%s/kv-scales-model", ZP_TEST_TMP);
    CHECK_OK(zp_mkmodel("tiny-qwen3", dir, 1, ZP_DTYPE_BF16));
    snprintf(p1, sizeof p1, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/model-00002-of-00002.safetensors", dir);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    char orig[700];
    snprintf(orig, sizeof orig, "%s/model.safetensors", dir);
    CHECK(rename(orig, p1) == 0);
    const scale_t s[] = {{"model.layers.0.self_attn.k_scale", 0.5f, 0, 0, 0}, {"model.layers.0.self_attn.v_scale", 0.25f, 1, 1, 0},
                         {"model.layers.1.self_attn.kv_scale", 2.0f, 0, 1, 0}};
    write_scales(p2, s, 3);
    zp_safetensors st;
    memset(&st, 0, sizeof st);
    CHECK_OK(zp_st_open_file(&st, p1));
    FILE *f = fopen(idx, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "{\"metadata\": {}, \"weight_map\": {");
    for (int i = 0; i < st.n_tensors; i++) fprintf(f, "\"%s\": \"model-00001-of-00002.safetensors\", ", st.tensors[i].name);
    for (int i = 0; i < 3; i++) fprintf(f, "\"%s\": \"model-00002-of-00002.safetensors\"%s", s[i].name, i < 2 ? ", " : "");
    fprintf(f, "}}\n");
    fclose(f);
    zp_st_close(&st);
    zp_engine_config c = zp_engine_config_default();
    c.model_dir = dir;
    c.block_size = 16;
    c.kv_dtype = "fp8";
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&c, &e));
    if (!e) return;
    const zp_attn_dims *d = &e->kv.dims;
    const int L = d->n_layers, G = d->n_kv_heads;
    int bad = 0;
    for (int l = 0; l < L; l++)
        for (int g = 0; g < G; g++) {
            const float k = l == 0 ? 0.5f : l == 1 ? 2.0f : 1.0f, v = l == 0 ? 0.25f : l == 1 ? 2.0f : 1.0f;
            bad += d->k_scale[l * G + g] != k || d->v_scale[l * G + g] != v;
        }
    printf("checkpoint scales: %d layers x %d KV heads, %d differ from the checkpoint's (1.0 where it has none)\n", L, G, bad);
    CHECK(L >= 2 && bad == 0);
    int prompt[20];
    for (int i = 0; i < 20; i++) prompt[i] = 5 + 7 * i;
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = 4;
    sp.temperature = 0;
    CHECK_OK(zp_engine_add_request(e, prompt, 20, &sp, 0, 0, 0));
    while (zp_engine_has_unfinished(e)) {
        zp_status r = zp_engine_step(e);
        CHECK_OK(r);
        if (r != ZP_OK) break;
    }
    zp_engine_free(e);
}

/* One engine on tiny-qwen3 (block 16) after its first prefill of `prompt` (40 tokens). */
static zp_engine *prefilled(const char *kv_dtype, const char *kv_scales, const int *prompt, int n) {
    zp_engine_config c = zp_engine_config_default();
    c.model_dir = zp_test_model("tiny-qwen3");
    c.block_size = 16;
    c.kv_dtype = kv_dtype;
    c.kv_scales = kv_scales;
    c.enable_prefix_cache = 0;
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&c, &e));
    if (!e) return NULL;
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = 8;
    sp.temperature = 0;
    CHECK_OK(zp_engine_add_request(e, prompt, n, &sp, 0, 0, 0));
    CHECK_OK(zp_engine_step(e)); /* the prefill: the prompt's K/V written */
    return e;
}

static void test_calibration(void) {
    enum { N = 40 };
    int prompt[N], later[N];
    for (int i = 0; i < N; i++) prompt[i] = (i * 37 + 11) % 900 + 3, later[i] = (i * 53 + 7) % 900 + 3;
    zp_engine *ref = prefilled("auto", "checkpoint", prompt, N), *e = prefilled("fp8", "prompt", prompt, N);
    if (!ref || !e) { zp_engine_free(ref); zp_engine_free(e); return; }
    const zp_attn_dims *d = &e->kv.dims;
    const int L = d->n_layers, G = d->n_kv_heads, D = d->head_dim, per_layer = d->num_blocks * d->block_size * G * D;
    const float *kf = ref->kv.k, *vf = ref->kv.v;
    const uint8_t *k8 = e->kv.k, *v8 = e->kv.v;
    if (ref->sched.running.n != 1 || e->sched.running.n != 1) { CHECK(0); zp_engine_free(ref); zp_engine_free(e); return; }
    const int *bt = ref->sched.running.v[0]->blocks, *bt8 = e->sched.running.v[0]->blocks; /* the prompt's blocks */
    /* layer 0 reads the same input in both engines: its scales and bytes against the fp32 cache
     * exactly; a later layer's input has passed through fp8 attention, so there the largest
     * stored magnitude is checked: max|x| / scale rounds to e4m3's 192 or 208 (K: 200) and 96 or
     * 104 (V: 100) */
    int bad_scale = 0, bad_byte = 0, not_one = 0, bad_peak = 0;
    for (int l = 0; l < L; l++)
        for (int g = 0; g < G; g++) {
            float ak = 0, av = 0, pk = 0, pv = 0; /* the fp32 cache's maxima; the fp8 cache's largest decoded bytes */
            const float ks = d->k_scale[l * G + g], vs = d->v_scale[l * G + g];
            for (int t = 0; t < N; t++) {
                const size_t at = (size_t)l * per_layer + (((size_t)bt[t / 16] * 16 + t % 16) * G + g) * D;
                const size_t at8 = (size_t)l * per_layer + (((size_t)bt8[t / 16] * 16 + t % 16) * G + g) * D;
                for (int i = 0; i < D; i++) {
                    ak = fmaxf(ak, fabsf(kf[at + i])), av = fmaxf(av, fabsf(vf[at + i]));
                    pk = fmaxf(pk, fabsf(zp_e4m3_to_f32(k8[at8 + i]))), pv = fmaxf(pv, fabsf(zp_e4m3_to_f32(v8[at8 + i])));
                    if (l == 0) bad_byte += k8[at8 + i] != zp_f32_to_e4m3(kf[at + i] / ks) || v8[at8 + i] != zp_f32_to_e4m3(vf[at + i] / vs);
                }
            }
            if (l == 0) bad_scale += ks != ak / 200.0f || vs != av / 100.0f;
            bad_peak += !((pk == 192.f || pk == 208.f) && (pv == 96.f || pv == 104.f));
            not_one += ks != 1.0f && vs != 1.0f;
        }
    printf("calibrated scales: layer 0: %d of %d heads differ from max/200 and max/100 of the fp32 cache, %d bytes from e4m3(fp32 / scale); "
           "every layer: %d heads whose largest byte is not max/scale's\n", bad_scale, G, bad_byte, bad_peak);
    CHECK(bad_scale == 0 && bad_byte == 0 && bad_peak == 0 && not_one == L * G);
    /* a later request's prefill leaves them as they are */
    float *before = malloc(sizeof(float) * 2 * (size_t)L * G);
    if (before) memcpy(before, e->kv.scales, sizeof(float) * 2 * (size_t)L * G);
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = 4;
    sp.temperature = 0;
    CHECK_OK(zp_engine_add_request(e, later, N, &sp, 1, 0, 0));
    while (zp_engine_has_unfinished(e)) {
        zp_status r = zp_engine_step(e);
        CHECK_OK(r);
        if (r != ZP_OK) break;
    }
    CHECK(before && !memcmp(before, e->kv.scales, sizeof(float) * 2 * (size_t)L * G));
    free(before);
    zp_engine_free(ref);
    zp_engine_free(e);
    /* refusals at engine creation */
    zp_engine_config c = zp_engine_config_default();
    c.model_dir = zp_test_model("tiny-qwen3");
    c.kv_scales = "prompt";
    zp_engine *x = NULL;
    CHECK_FAILS(zp_engine_init(&c, &x), ZP_ERR_INVALID, "kv_scales prompt calibrates an fp8 cache's scales, and kv_dtype is not fp8");
    c.kv_dtype = "fp8", c.kv_scales = "first-batch";
    CHECK_FAILS(zp_engine_init(&c, &x), ZP_ERR_INVALID, "kv_scales \"first-batch\" is neither checkpoint nor prompt");
}

int main(void) {
    test_names();
    test_checkpoint();
    test_calibration();
    return zp_test_finish("test_kv_scales");
}
