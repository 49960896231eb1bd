/* cmd_mkmodel.c - `zipage mkmodel --preset NAME|--config FILE --out DIR [--seed S] [--dtype bf16|f16|f32]` */
#include <stdio.h>
#include <string.h>

#include "cli_common.h" /* cli_value, cli_i64, cli_report */
#include "mkmodel.h"    /* zp_mkmodel */

static void usage(FILE *f) {
    fprintf(f, "usage: zipage mkmodel (--preset NAME | --config FILE) --out DIR [--seed 1] [--dtype bf16]\n"
               "  --preset NAME   a folder of models/ (tiny-qwen3, tiny-qwen2, tiny-llama, Qwen3-0.6B, ...)\n"
               "  --config FILE   any supported config.json\n"
               "  --out DIR       checkpoint folder to write (config.json, generation_config.json, model.safetensors)\n"
               "  --seed S        weight seed (default 1)\n"
               "  --dtype T       bf16 | f16 | f32 (default bf16)\n");
}

int cmd_mkmodel(int argc, char **argv) {
    const char *src = NULL, *out = NULL, *v;
    int64_t seed = 1;
    zp_dtype dt = ZP_DTYPE_BF16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--preset") || !strcmp(a, "--config") || !strcmp(a, "--out") || !strcmp(a, "--seed") || !strcmp(a, "--dtype")) {
            if (!(v = cli_value(argc, argv, &i))) return cli_report("mkmodel", ZP_ERR_INVALID);
            if (!strcmp(a, "--out")) out = v;
            else if (!strcmp(a, "--seed")) { zp_status s = cli_i64(a, v, 0, INT64_MAX, &seed); if (s) return cli_report("mkmodel", s); }
            else if (!strcmp(a, "--dtype")) {
                if (!strcmp(v, "bf16")) dt = ZP_DTYPE_BF16;
                else if (!strcmp(v, "f16")) dt = ZP_DTYPE_F16;
                else if (!strcmp(v, "f32")) dt = ZP_DTYPE_F32;
                else return cli_report("mkmodel", zp_fail(ZP_ERR_INVALID, "--dtype: \"%s\" is not bf16, f16 or f32", v));
            } else src = v;
        } else {
            usage(stderr);
            return cli_report("mkmodel", zp_fail(ZP_ERR_INVALID, "unknown flag %s", a));
        }
    }
    if (!src || !out) { usage(stderr); return cli_report("mkmodel", zp_fail(ZP_ERR_INVALID, "--preset/--config and --out are required")); }
    zp_status s = zp_mkmodel(src, out, (uint64_t)seed, dt);
    if (s != ZP_OK) return cli_report("mkmodel", s);
    printf("wrote %s (from %s, seed %lld, %s)\n", out, src, (long long)seed, zp_dtype_name(dt));
    return 0;
}
