/* trig_stats_dump.c - loads TriAttention's statistics with the engine's loader
 * (compress/trig_stats.c) for the model of CONFIG_DIR and prints them as JSON in the layout of
 * tests/data/triattention/tiny_stats_expected.json ("layerLL_headHH": {q_mean_real, q_mean_imag,
 * q_abs_mean}), each float with 9 significant digits (exact in float32), so that
 * test_triattention_stats compares them with torch.load's values of the authors' .pt.
 * Usage: trig_stats_dump STATS.safetensors CONFIG_DIR */
#include <stdio.h>

#include "trig_stats.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: trig_stats_dump STATS.safetensors CONFIG_DIR\n");
        return 2;
    }
    zp_model_config mc;
    zp_trig_stats s;
    if (zp_config_load(argv[2], &mc) != ZP_OK || zp_trig_stats_load(argv[1], &mc, &s) != ZP_OK) {
        fprintf(stderr, "trig_stats_dump: %s\n", zp_last_error());
        return 1;
    }
    const float *fields[3] = {s.mean_re, s.mean_im, s.abs_mean};
    const char *names[3] = {"q_mean_real", "q_mean_imag", "q_abs_mean"};
    printf("{");
    for (int l = 0; l < s.n_layers; l++)
        for (int h = 0; h < s.n_heads; h++) {
            printf("%s\"layer%02d_head%02d\": {", l || h ? ", " : "", l, h);
            for (int f = 0; f < 3; f++) {
                const float *row = zp_trig_stats_row(fields[f], &s, l, h);
                printf("%s\"%s\": [", f ? ", " : "", names[f]);
                for (int i = 0; i < s.half; i++) printf("%s%.9g", i ? ", " : "", row[i]);
                printf("]");
            }
            printf("}");
        }
    printf("}\n");
    zp_trig_stats_free(&s);
    return 0;
}
