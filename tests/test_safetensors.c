/* test_safetensors.c - writer/reader round trip, sharded index, every malformed-header case,
 * and mkmodel checkpoints: loadable, deterministic, shape errors named by tensor. */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "files.h"
#include "config.h"
#include "mkmodel.h"
#include "model.h"
#include "safetensors.h"
#include "test_util.h"

static char tmp[512];

static const char *path_of(const char *name) {
    static char p[4][640];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tmp, name);
    return p[k];
}

static void write_raw(const char *name, const char *header, size_t data_bytes, int64_t header_len_override) {
    FILE *f = fopen(path_of(name), "wb");
    uint64_t n = header_len_override >= 0 ? (uint64_t)header_len_override : strlen(header);
    fwrite(&n, 8, 1, f);
    fwrite(header, 1, strlen(header), f);
    for (size_t i = 0; i < data_bytes; i++) fputc(i & 0xff, f);
    fclose(f);
}

static zp_status open_one(const char *name) {
    zp_safetensors st;
    memset(&st, 0, sizeof st);
    zp_status s = zp_st_open_file(&st, path_of(name));
    zp_st_close(&st);
    return s;
}

static void test_roundtrip(void) {
    float a[6] = {1, 2, 3, 4, 5, 6};
    uint16_t b[4] = {zp_f32_to_bf16(1.5f), zp_f32_to_bf16(-2.f), zp_f32_to_bf16(0.25f), zp_f32_to_bf16(3.f)};
    uint16_t h[2] = {zp_f32_to_f16(0.5f), zp_f32_to_f16(-65504.f)};
    zp_st_entry e[3] = {{"a", ZP_DTYPE_F32, 2, {2, 3}, a}, {"b", ZP_DTYPE_BF16, 1, {4}, b}, {"h", ZP_DTYPE_F16, 1, {2}, h}};
    CHECK_OK(zp_st_write(path_of("rt.safetensors"), e, 3));
    zp_safetensors st;
    memset(&st, 0, sizeof st);
    CHECK_OK(zp_st_open_file(&st, path_of("rt.safetensors")));
    const zp_st_tensor *ta = zp_st_find(&st, "a"), *tb = zp_st_find(&st, "b"), *th = zp_st_find(&st, "h");
    CHECK(ta && tb && th && !zp_st_find(&st, "__metadata__"));
    if (ta && tb && th) {
        CHECK(ta->ndim == 2 && ta->shape[0] == 2 && ta->shape[1] == 3 && memcmp(ta->data, a, sizeof a) == 0);
        float out[4];
        zp_convert_to_f32(out, tb->data, tb->dtype, 4);
        CHECK(out[0] == 1.5f && out[1] == -2.f && out[2] == 0.25f && out[3] == 3.f);
        zp_convert_to_f32(out, th->data, th->dtype, 2);
        CHECK(out[0] == 0.5f && out[1] == -65504.f);
    }
    zp_st_close(&st);
}

static void test_malformed(void) {
    const char *ok = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    write_raw("ok.st", ok, 8, -1);
    CHECK_OK(open_one("ok.st"));
    write_raw("trunc.st", ok, 4, -1);
    CHECK_FAILS(open_one("trunc.st"), ZP_ERR_FORMAT, "truncated");
    write_raw("hlen.st", ok, 8, 1 << 20);
    CHECK_FAILS(open_one("hlen.st"), ZP_ERR_FORMAT, "header length");
    write_raw("json.st", "{\"x\":", 0, -1);
    CHECK_FAILS(open_one("json.st"), ZP_ERR_FORMAT, "not a valid JSON");
    write_raw("dtype.st", "{\"x\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, -1);
    CHECK_FAILS(open_one("dtype.st"), ZP_ERR_UNSUPPORTED, "tensor x: dtype I8");
    write_raw("shape.st", "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, -1);
    CHECK_FAILS(open_one("shape.st"), ZP_ERR_FORMAT, "tensor x: shape needs 12 bytes");
    write_raw("order.st", "{\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, -1);
    CHECK_FAILS(open_one("order.st"), ZP_ERR_FORMAT, "begin <= end");
    write_raw("overlap.st",
              "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, -1);
    CHECK_FAILS(open_one("overlap.st"), ZP_ERR_FORMAT, "overlap");
    write_raw("tiny.st", "", 0, -1);
    FILE *f = fopen(path_of("short.st"), "wb");
    fputs("abc", f);
    fclose(f);
    CHECK_FAILS(open_one("short.st"), ZP_ERR_FORMAT, "too short");
    CHECK_FAILS(open_one("missing.st"), ZP_ERR_IO, "missing.st");
}

static void test_sharded(void) {
    char dir[640];
    snprintf(dir, sizeof dir, "%s/sharded", tmp);
    mkdir(dir, 0755);
    float a[2] = {1, 2}, b[3] = {3, 4, 5};
    zp_st_entry ea = {"a", ZP_DTYPE_F32, 1, {2}, a}, eb = {"b", ZP_DTYPE_F32, 1, {3}, b};
    char p[700];
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
    CHECK_OK(zp_st_write(p, &ea, 1));
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    CHECK_OK(zp_st_write(p, &eb, 1));
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    FILE *f = fopen(p, "w");
    fputs("{\"metadata\":{},\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00002-of-00002.safetensors\"}}", f);
    fclose(f);
    zp_safetensors st;
    CHECK_OK(zp_st_open_dir(dir, &st));
    CHECK(st.n_files == 2 && st.n_tensors == 2 && zp_st_find(&st, "b") && ((const float *)zp_st_find(&st, "b")->data)[2] == 5.f);
    zp_st_close(&st);
    f = fopen(p, "w"); /* b claimed in the wrong shard */
    fputs("{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00001-of-00002.safetensors\"}}", f);
    fclose(f);
    CHECK_FAILS(zp_st_open_dir(dir, &st), ZP_ERR_FORMAT, "tensor b");
    f = fopen(p, "w");
    fputs("{\"weight_map\":{\"a\":\"model-00003-of-00002.safetensors\"}}", f);
    fclose(f);
    CHECK_FAILS(zp_st_open_dir(dir, &st), ZP_ERR_IO, "model-00003-of-00002.safetensors");
    /* a folder where the weights file should be: said so, not "mmap failed: No such device" */
    char folder[1100], weights[1200];
    snprintf(folder, sizeof folder, "%s/folder_weights", ZP_TEST_TMP);
    snprintf(weights, sizeof weights, "%s/model.safetensors", folder);
    mkdir(folder, 0755);
    mkdir(weights, 0755);
    CHECK_FAILS(zp_st_open_dir(folder, &st), ZP_ERR_IO, "folder_weights/model.safetensors: a folder, not a file");
    CHECK_FAILS(zp_st_open_dir(tmp, &st), ZP_ERR_IO, "no model.safetensors");
}

static void test_mkmodel_checkpoints(void) {
    const char *presets[] = {"tiny-qwen3", "tiny-qwen2", "tiny-llama"};
    for (int i = 0; i < 3; i++) {
        const char *dir = zp_test_model(presets[i]);
        zp_backend *be;
        CHECK_OK(zp_backend_cpu_create(1, &be));
        zp_model *m = NULL;
        CHECK_OK(zp_model_load(dir, be, &m));
        if (m) {
            const zp_model_config *c = &m->cfg;
            size_t H = c->hidden, D = c->head_dim, I = c->intermediate, q = c->n_heads * D, k = c->n_kv_heads * D;
            size_t per_layer = 2 * H + H * (q + 2 * k) + q * H + 3 * H * I + (c->qkv_bias ? q + 2 * k : 0) + (c->qk_norm ? 2 * D : 0);
            size_t want = (size_t)c->vocab * H * (c->tie_embeddings ? 1 : 2) + H + per_layer * c->n_layers;
            CHECK(m->n_params == want);
            zp_model_free(m);
        }
        be->destroy(be);
    }
    /* same seed -> same bytes; another seed -> different weights */
    char d1[640], d2[640], d3[640];
    snprintf(d1, sizeof d1, "%s/mk1", tmp);
    snprintf(d2, sizeof d2, "%s/mk2", tmp);
    snprintf(d3, sizeof d3, "%s/mk3", tmp);
    CHECK_OK(zp_mkmodel("tiny-qwen2", d1, 7, ZP_DTYPE_F32));
    CHECK_OK(zp_mkmodel("tiny-qwen2", d2, 7, ZP_DTYPE_F32));
    CHECK_OK(zp_mkmodel("tiny-qwen2", d3, 8, ZP_DTYPE_F32));
    char *x, *y, *z, p[700];
    size_t nx, ny, nz;
    snprintf(p, sizeof p, "%s/model.safetensors", d1); CHECK_OK(zp_read_file(p, &x, &nx));
    snprintf(p, sizeof p, "%s/model.safetensors", d2); CHECK_OK(zp_read_file(p, &y, &ny));
    snprintf(p, sizeof p, "%s/model.safetensors", d3); CHECK_OK(zp_read_file(p, &z, &nz));
    CHECK(nx == ny && memcmp(x, y, nx) == 0);
    CHECK(nx == nz && memcmp(x, z, nx) != 0);
    free(x); free(y); free(z);
    /* a checkpoint that does not match its config names the tensor and the expected shape */
    snprintf(p, sizeof p, "%s/config.json", d1);
    FILE *f = fopen(p, "w");
    fputs("{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_size\":256,\"num_hidden_layers\":3,\"num_attention_heads\":2,"
          "\"num_key_value_heads\":1,\"intermediate_size\":640,\"vocab_size\":1024}", f);
    fclose(f);
    zp_backend *be;
    CHECK_OK(zp_backend_cpu_create(1, &be));
    zp_model *m = NULL;
    CHECK_FAILS(zp_model_load(d1, be, &m), ZP_ERR_FORMAT, "model.layers.0.mlp.gate_proj.weight has shape [512,256], expected [640,256]");
    be->destroy(be);
    CHECK_FAILS(zp_mkmodel("no-such-preset", d1, 1, ZP_DTYPE_BF16), ZP_ERR_INVALID, "no-such-preset");
}

int main(void) {
    snprintf(tmp, sizeof tmp, "%s/st", ZP_TEST_TMP);
    mkdir(ZP_TEST_TMP, 0755);
    mkdir(tmp, 0755);
    test_roundtrip();
    test_malformed();
    test_sharded();
    test_mkmodel_checkpoints();
    return zp_test_finish("test_safetensors");
}
