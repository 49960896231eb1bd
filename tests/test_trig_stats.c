/* test_trig_stats.c (label cpu) - TriAttention's statistics loader (compress/trig_stats.c): a file
 * of the model's shape loads with its values in place; each bad file is refused with one error
 * naming the file and what is wrong: a layer missing, a layer beyond the model, a head count or
 * head dim of another model, BF16, a tensor that is no statistic, a value that is not finite, no
 * file. The values of a file converted from the authors' .pt against torch.load's are checked
 * by test_triattention_stats (tests/reference/trig_stats_dump.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "safetensors.h"
#include "test_util.h"
#include "trig_stats.h"

enum { L = 2, H = 3, HALF = 4 };
static const char *CFG =
    "{\"architectures\":[\"Qwen3ForCausalLM\"],\"hidden_size\":32,\"num_hidden_layers\":2,\"num_attention_heads\":3,"
    "\"num_key_value_heads\":1,\"head_dim\":8,\"intermediate_size\":64,\"vocab_size\":100}";

static float vals[L][3][H * HALF];
static uint16_t bf16[H * HALF];

/* Writes the statistics of L layers (skip: leave out layer.1.q_abs_mean; extra: add layer.2's;
 * heads, half: the tensors' shape; use_bf16: layer 0's q_mean_real in BF16; odd: a stranger tensor
 * beside the complete set). */
static const char *write_stats(const char *name, int heads, int half, int skip, int extra, int use_bf16, int odd) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s.safetensors", ZP_TEST_TMP, name);
    static const char *const fields[3] = {"q_mean_real", "q_mean_imag", "q_abs_mean"};
    static char names[12][48];
    zp_st_entry e[13];
    int n = 0;
    for (int l = 0; l < L + extra; l++)
        for (int f = 0; f < 3; f++) {
            if (skip && l == 1 && f == 2) continue;
            snprintf(names[n], sizeof names[n], "layer.%d.%s", l, fields[f]);
            const int b = use_bf16 && l == 0 && f == 0;
            e[n] = (zp_st_entry){.name = names[n],
                                 .dtype = b ? ZP_DTYPE_BF16 : ZP_DTYPE_F32,
                                 .ndim = 2,
                                 .shape = {heads, half},
                                 .data = b ? (const void *)bf16 : (const void *)vals[l % L][f]};
            n++;
        }
    if (odd)
        e[n++] = (zp_st_entry){
            .name = "layer.0.k_mean", .dtype = ZP_DTYPE_F32, .ndim = 2, .shape = {heads, half}, .data = vals[0][0]};
    CHECK_OK(zp_st_write(path, e, n));
    return path;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    zp_model_config mc;
    CHECK_OK(zp_config_parse(CFG, "cfg.json", &mc));
    for (int l = 0; l < L; l++)
        for (int f = 0; f < 3; f++)
            for (int i = 0; i < H * HALF; i++) vals[l][f][i] = (float)(100 * l + 10 * f) + 0.25f * (float)i;
    zp_trig_stats s;
    CHECK_OK(zp_trig_stats_load(write_stats("good", H, HALF, 0, 0, 0, 0), &mc, &s));
    CHECK(s.n_layers == L && s.n_heads == H && s.half == HALF);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < HALF; i++) {
                CHECK(zp_trig_stats_row(s.mean_re, &s, l, h)[i] == vals[l][0][h * HALF + i]);
                CHECK(zp_trig_stats_row(s.mean_im, &s, l, h)[i] == vals[l][1][h * HALF + i]);
                CHECK(zp_trig_stats_row(s.abs_mean, &s, l, h)[i] == vals[l][2][h * HALF + i]);
            }
    zp_trig_stats_free(&s);
    CHECK_FAILS(zp_trig_stats_load(write_stats("missing", H, HALF, 1, 0, 0, 0), &mc, &s), ZP_ERR_INVALID,
                "no tensor layer.1.q_abs_mean");
    CHECK_FAILS(zp_trig_stats_load(write_stats("extra", H, HALF, 0, 1, 0, 0), &mc, &s), ZP_ERR_INVALID,
                "layer.2.q_mean_real is beyond the model's 2 layers");
    CHECK_FAILS(zp_trig_stats_load(write_stats("heads", 2, HALF, 0, 0, 0, 0), &mc, &s), ZP_ERR_INVALID,
                "has shape [2, 4]; the model needs [3, 4]");
    CHECK_FAILS(zp_trig_stats_load(write_stats("half", H, 2, 0, 0, 0, 0), &mc, &s), ZP_ERR_INVALID,
                "has shape [3, 2]; the model needs [3, 4]");
    CHECK_FAILS(zp_trig_stats_load(write_stats("bf16", H, HALF, 0, 0, 1, 0), &mc, &s), ZP_ERR_INVALID,
                "layer.0.q_mean_real must be F32");
    CHECK_FAILS(zp_trig_stats_load(write_stats("odd", H, HALF, 0, 0, 0, 1), &mc, &s), ZP_ERR_INVALID,
                "layer.0.k_mean is not a TriAttention statistic");
    vals[1][2][5] = NAN;
    CHECK_FAILS(zp_trig_stats_load(write_stats("nan", H, HALF, 0, 0, 0, 0), &mc, &s), ZP_ERR_INVALID,
                "layer.1.q_abs_mean holds a value that is not finite");
    vals[1][2][5] = 0;
    CHECK_FAILS(zp_trig_stats_load(ZP_TEST_TMP "/nowhere.safetensors", &mc, &s), ZP_ERR_IO, "nowhere.safetensors");
    CHECK(s.mean_re == NULL && s.n_layers == 0);
    return zp_test_finish("test_trig_stats");
}
