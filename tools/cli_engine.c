/* cli_engine.c - parser of the engine flags shared by generate and bench (cli_engine.h): the
 * rows of the settings schema (engine/settings.h), each a flag of its name, plus the few flags
 * with their own syntax below. */
#include "cli_engine.h"

#include <stdint.h>
#include <string.h>

#include "cli_common.h"
#include "cli_options.h" /* --backend-option */
#include "policy.h"      /* policy_names */
#include "settings.h"    /* zp_engine_settings */

static const char USAGE_OWN[] =
    "  --threads N            CPU threads (default: all)\n"
    "  --kv-pool-gib X        or the KV state's memory: K/V blocks plus an evicting policy's score and query\n"
    "                         caches (every policy gets the same memory)\n"
    "  --policy-params JSON   policy parameters, e.g. '{\"lambda\": 0.3}'\n"
    "  --no-cuda-graphs       CUDA: launch every decode step's kernels (default: replay them as graphs,\n"
    "                         one per batch shape; --cuda-graphs insists, an error on the CPU)\n"
    "  --backend-option N=V   a tuning option (A/B switches of the benchmarks): compress_priority=low,\n"
    "                         profile=0|1, gemm_tune=0|1 (also ZIPAGE_<NAME> variables)\n";

void cli_engine_usage(FILE *f) {
    char names[256], flag[64];
    policy_names(names, sizeof names); /* from the registry: no second list here */
    for (int i = 0; i < zp_engine_n_settings; i++) {
        const zp_setting *s = &zp_engine_settings[i];
        zp_setting_flag(s, flag, sizeof flag);
        const char *meta = s->type == ZP_SET_BOOL ? "" : s->type == ZP_SET_STR ? " S" : s->type == ZP_SET_FLOAT ? " F" : " N";
        char left[80];
        snprintf(left, sizeof left, "%s%s", flag, meta);
        fprintf(f, "  %-22s %s%s\n", left, s->help, strcmp(s->name, "policy") ? "" : ":");
        if (!strcmp(s->name, "policy")) fprintf(f, "  %-22s %s\n", "", names);
    }
    fputs(USAGE_OWN, f);
}

/* The schema's row of a flag, or NULL. */
static const zp_setting *row_of_flag(const char *flag) {
    char f[64];
    for (int i = 0; i < zp_engine_n_settings; i++) {
        zp_setting_flag(&zp_engine_settings[i], f, sizeof f);
        if (!strcmp(f, flag)) return &zp_engine_settings[i];
    }
    return NULL;
}

int cli_engine_switch(const char *flag) {
    const zp_setting *s = row_of_flag(flag);
    return (s && s->type == ZP_SET_BOOL) || !strcmp(flag, "--cuda-graphs") || !strcmp(flag, "--no-cuda-graphs");
}

zp_status cli_engine_flag(const char *a, const char *v, zp_engine_config *ec, int *matched) {
    *matched = 1;
    const zp_setting *s = row_of_flag(a);
    if (s && s->type == ZP_SET_BOOL) return zp_setting_parse(s, a, s->def ? "0" : "1", ec); /* a switch: the other value */
    if (s) return zp_setting_parse(s, a, v, ec);
    if (!strcmp(a, "--kv-pool-gib")) {
        float x;
        ZP_TRY(cli_float(a, v, 1e-3, 1e6, &x));
        ec->kv_pool_bytes = (double)x * 1073741824.0;
    } else if (!strcmp(a, "--policy-params")) ec->policy_params = v;
    else if (!strcmp(a, "--threads")) return cli_int(a, v, 0, 4096, &ec->n_threads);
    else if (!strcmp(a, "--cuda-graphs")) ec->cuda_graphs = 1;
    else if (!strcmp(a, "--no-cuda-graphs")) ec->cuda_graphs = 0;
    else if (!strcmp(a, "--backend-option")) return cli_backend_option(v, &ec->backend);
    else *matched = 0;
    return ZP_OK;
}
