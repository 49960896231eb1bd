/* cli_engine.c - parser of the engine flags shared by generate and bench (cli_engine.h). */
#include "cli_engine.h"

#include <stdint.h>
#include <string.h>

#include "cli_common.h"
#include "cli_options.h" /* --backend-option */
#include "policy.h" /* policy_names */

static const char USAGE_BEFORE_POLICY[] =
    "  --block-size B         KV block size (default 256)\n"
    "  --kv-pool-tokens N     KV pool size in tokens (default: CPU 32768, at most 2 GiB; CUDA from free memory)\n"
    "  --kv-pool-gib X        or the KV state's memory: K/V blocks plus an evicting policy's score and query\n"
    "                         caches (every policy gets the same memory)\n"
    "  --gpu-memory-utilization F  CUDA: share of device memory for weights, activations and KV (default 0.9)\n"
    "  --max-num-seqs N       running requests at most (default 256)\n"
    "  --max-num-batched-tokens N  tokens in one step at most (default 8192; the Zipage reference runs 63840)\n"
    "  --no-prefix-cache      disable prefix caching\n"
    "  --threads N            CPU threads (default: all)\n";
static const char USAGE_AFTER_POLICY[] =
    "  --policy-params JSON   policy parameters, e.g. '{\"lambda\": 0.3}'\n"
    "  --nmax N               blocks kept per request after compression (default 8)\n"
    "  --window W             window queries per request (default: the policy's, its authors' value)\n"
    "  --max-concurrency M    query slots (default: pool blocks / (nmax + 1))\n"
    "  --scheduler S          hybrid (default with a policy), strict, full\n"
    "  --async                compress on a worker thread while others decode\n"
    "  --no-cuda-graphs       CUDA: launch every decode step's kernels (default: replay them as graphs,\n"
    "                         one per batch shape; --cuda-graphs insists, an error on the CPU)\n"
    "  --backend-option N=V   a tuning option (A/B switches of the benchmarks): compress_priority=low,\n"
    "                         profile=0|1, gemm_tune=0|1 (also ZIPAGE_<NAME> variables)\n";

void cli_engine_usage(FILE *f) {
    char names[256];
    policy_names(names, sizeof names); /* from the registry: no second list here */
    fputs(USAGE_BEFORE_POLICY, f);
    fprintf(f, "  --policy NAME          eviction policy (default full): %s\n", names);
    fputs(USAGE_AFTER_POLICY, f);
}

int cli_engine_switch(const char *flag) {
    return !strcmp(flag, "--no-prefix-cache") || !strcmp(flag, "--async") || !strcmp(flag, "--cuda-graphs") || !strcmp(flag, "--no-cuda-graphs");
}

zp_status cli_engine_flag(const char *a, const char *v, zp_engine_config *ec, int *matched) {
    *matched = 1;
    if (!strcmp(a, "--device")) ec->device = v;
    else if (!strcmp(a, "--precision")) ec->precision = v;
    else if (!strcmp(a, "--block-size")) return cli_int(a, v, 1, 65536, &ec->block_size);
    else if (!strcmp(a, "--kv-pool-tokens")) return cli_i64(a, v, 1, INT64_MAX, &ec->kv_pool_tokens);
    else if (!strcmp(a, "--kv-pool-gib")) {
        float x;
        ZP_TRY(cli_float(a, v, 1e-3, 1e6, &x));
        ec->kv_pool_bytes = (double)x * 1073741824.0;
    } else if (!strcmp(a, "--gpu-memory-utilization")) return cli_float(a, v, 0.01, 1.0, &ec->gpu_memory_utilization);
    else if (!strcmp(a, "--max-num-seqs")) return cli_int(a, v, 1, 1 << 20, &ec->max_num_seqs);
    else if (!strcmp(a, "--max-num-batched-tokens")) return cli_int(a, v, 1, 100000000, &ec->max_num_batched_tokens);
    else if (!strcmp(a, "--no-prefix-cache")) ec->enable_prefix_cache = 0;
    else if (!strcmp(a, "--threads")) return cli_int(a, v, 0, 4096, &ec->n_threads);
    else if (!strcmp(a, "--policy")) ec->policy = v;
    else if (!strcmp(a, "--policy-params")) ec->policy_params = v;
    else if (!strcmp(a, "--nmax")) return cli_int(a, v, 1, 1 << 20, &ec->nmax);
    else if (!strcmp(a, "--window")) return cli_int(a, v, 1, 65536, &ec->window);
    else if (!strcmp(a, "--max-concurrency")) return cli_int(a, v, 1, 1 << 20, &ec->max_concurrency);
    else if (!strcmp(a, "--scheduler")) ec->scheduler = v;
    else if (!strcmp(a, "--async")) ec->async_compress = 1;
    else if (!strcmp(a, "--cuda-graphs")) ec->cuda_graphs = 1;
    else if (!strcmp(a, "--no-cuda-graphs")) ec->cuda_graphs = 0;
    else if (!strcmp(a, "--backend-option")) return cli_backend_option(v, &ec->backend);
    else *matched = 0;
    return ZP_OK;
}
