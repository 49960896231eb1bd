/* settings.h - the one schema of the engine's settings: each is a row of ZP_ENGINE_SETTINGS
 * (name, type, zp_engine_config field, default, range, flags, help). From it come the engine's
 * defaults (zp_engine_config_default), the command line's flags and usage (tools/cli_engine.c:
 * --NAME with '_' as '-', a switch --NAME or --no-NAME for a boolean), the experiment JSON keys
 * and their sweep axes (experiments/experiment.c: key NAME; ZP_SETTING_AXIS rows may be lists,
 * expanded as a cross product) and the resolved configuration a run id hashes. Adding an
 * engine setting is one row here: its field of zp_engine_config and its member of exp_run are
 * declared from the row (ZP_SETTING_FIELD, ZP_SETTING_MEMBER); what the engine does with it
 * is the engine's code.
 * A descriptor (zp_setting) places a row in a struct: the engine's zp_engine_config, where
 * strings are pointers, or the experiment's exp_run, where they are char arrays.
 * Not here: settings that are not the engine's (sampling, datasets: experiment.h's
 * EXP_RUN_SETTINGS uses the same descriptors), and the few flags with their own syntax
 * (--kv-pool-gib, --cuda-graphs, --policy-params, --backend-option). */
#ifndef ZP_SETTINGS_H
#define ZP_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef enum { ZP_SET_INT, ZP_SET_I64, ZP_SET_FLOAT, ZP_SET_STR, ZP_SET_BOOL } zp_setting_type;
enum { ZP_SETTING_AXIS = 1 }; /* flags: an experiment may give a list of values (a sweep axis) */

/* X(name, type, field, def, def_str, lo, hi, flags, help): lo/hi bound numbers (a default
 * outside them means "unset"); def_str is a string's default (NULL: none). Sweep axes expand
 * in this order, the last fastest. */
#define ZP_ENGINE_SETTINGS(X)                                                                                                       \
    X(device, ZP_SET_STR, device, 0, "cpu", 0, 0, 0, "cpu (default), cuda or cuda:N")                                              \
    X(precision, ZP_SET_STR, precision, 0, "bf16", 0, 0, 0, "CUDA storage: bf16 (default) or fp32 (the parity mode)")             \
    X(tp, ZP_SET_INT, tp, 1, NULL, 1, 64, 0,                                                                                      \
      "tensor-parallel ranks (default 1): KV heads and MLP rows split over GPUs base..base+tp-1 of cuda[:base], or CPU threads")   \
    X(block_size, ZP_SET_INT, block_size, 256, NULL, 1, 65536, 0, "KV block size (default 256)")                                   \
    X(gpu_memory_utilization, ZP_SET_FLOAT, gpu_memory_utilization, 0.9, NULL, 0.01, 1, 0,                                         \
      "CUDA: share of device memory for weights, activations and KV (default 0.9)")                                                \
    X(max_num_seqs, ZP_SET_INT, max_num_seqs, 256, NULL, 1, 1e6, 0,                                                                \
      "requests in one step's batch at most (default 256; the running list may hold more: docs/algorithm.md 4.8)")                 \
    X(max_num_batched_tokens, ZP_SET_INT, max_num_batched_tokens, 8192, NULL, 1, 1e8, 0,                                          \
      "tokens in one step at most (default 8192; the Zipage reference runs 63840)")                                                \
    X(prefix_cache, ZP_SET_BOOL, enable_prefix_cache, 1, NULL, 0, 1, 0, "turns off the prefix cache of full prompt blocks (on by default)")       \
    X(scheduler, ZP_SET_STR, scheduler, 0, NULL, 0, 0, 0, "hybrid (default with an evicting policy), strict, full")                \
    X(admission_reserve, ZP_SET_FLOAT, admission_reserve, 0, NULL, 0, 1, 0,                                        \
      "share of each request's most blocks that admission holds back (0, the default: a prompt's blocks, as vLLM and the Zipage " \
      "reference admit; 1: room for every running request to reach its cap: no preemption, but where a first compression " \
      "replaces shared prefix blocks with fresh ones)")                                          \
    X(async, ZP_SET_BOOL, async_compress, 0, NULL, 0, 1, 0, "compress on a worker thread while others decode")                     \
    X(policy, ZP_SET_STR, policy, 0, "full", 0, 0, ZP_SETTING_AXIS, "eviction policy (default full)")                              \
    X(nmax, ZP_SET_INT, nmax, 8, NULL, 1, 1e6, ZP_SETTING_AXIS, "blocks kept per request after compression (default 8)")       \
    X(window, ZP_SET_INT, window, 0, NULL, 1, 1e6, ZP_SETTING_AXIS, "window queries per request (default: the policy's, its authors' value)") \
    X(layer_budget, ZP_SET_STR, layer_budget, 0, "uniform", 0, 0, ZP_SETTING_AXIS,                                              \
      "per-layer budgets: uniform (default) or pyramid (PyramidKV's schedule inside the N_max cap)")                               \
    X(pyramid_beta, ZP_SET_INT, pyramid_beta, 20, NULL, 1, 1000, 0, "PyramidKV's beta: the top layer keeps about 1/beta of the mean (default 20)") \
    X(head_budget, ZP_SET_STR, head_budget, 0, "uniform", 0, 0, ZP_SETTING_AXIS,                                                \
      "per-head budgets: uniform (default) or adakv (AdaKV's allocation of each layer's budget across its KV heads, "            \
      "memory-equal inside the N_max cap; CPU backend)")                                                                           \
    X(head_floor, ZP_SET_FLOAT, head_floor, 0.2, NULL, 0, 1, ZP_SETTING_AXIS,                                                    \
      "adakv: the share of the budget every head keeps (AdaKV's floor_alpha, default 0.2)")                                       \
    X(budget, ZP_SET_STR, budget, 0, "fixed", 0, 0, ZP_SETTING_AXIS,                                                            \
      "blocks a compression keeps: fixed (N_max, default) or adaptive (per request, the fewest whole blocks whose candidates "   \
      "hold budget_tau of the policy's attention mass, averaged over layers and KV heads; CPU backend)")                        \
    X(budget_tau, ZP_SET_FLOAT, budget_tau, 0.9, NULL, 0.001, 1, ZP_SETTING_AXIS,                                               \
      "adaptive: the share of attention mass the kept candidates hold (default 0.9)")                                            \
    X(budget_floor, ZP_SET_INT, budget_floor, 1, NULL, 1, 1e6, ZP_SETTING_AXIS,                                                 \
      "adaptive: the fewest blocks a compression keeps (default 1, at most N_max)")                                             \
    X(max_concurrency, ZP_SET_INT, max_concurrency, 0, NULL, 0, 1e6, ZP_SETTING_AXIS,                                         \
      "query slots (0, the default: pool blocks / (nmax + 1))")                                                                     \
    X(kv_pool_tokens, ZP_SET_I64, kv_pool_tokens, 0, NULL, 0, 1e12, ZP_SETTING_AXIS,                                              \
      "KV pool size in tokens (0, the default: CPU 32768, at most 2 GiB; CUDA from free memory)")                                  \
    X(kv_dtype, ZP_SET_STR, kv_dtype, 0, "auto", 0, 0, ZP_SETTING_AXIS,                                                           \
      "K/V cache type: auto (the storage type, default) or fp8 (E4M3, as vLLM's --kv-cache-dtype fp8)")              \
    X(kv_scales, ZP_SET_STR, kv_scales, 0, "checkpoint", 0, 0, 0,                                                                \
      "fp8 cache scales: checkpoint (default: the checkpoint's per-tensor k_scale/v_scale, else 1.0) or prompt (per layer and KV " \
      "head from the first prefill's keys and values, max/200 and max/100 as vLLM's dynamic scales)")

/* A row's member of zp_engine_config (ZP_SETTING_FIELD) and of a struct that owns its strings
 * (ZP_SETTING_MEMBER, named by the setting: experiments' exp_run). */
#define ZP_SETTING_CTYPE_ZP_SET_INT int
#define ZP_SETTING_CTYPE_ZP_SET_I64 int64_t
#define ZP_SETTING_CTYPE_ZP_SET_FLOAT float
#define ZP_SETTING_CTYPE_ZP_SET_BOOL int
#define ZP_SETTING_CTYPE_ZP_SET_STR const char *
#define ZP_SETTING_FIELD(name, type, field, def, def_str, lo, hi, flags, help) ZP_SETTING_CTYPE_##type field;
#define ZP_SETTING_OWNED_ZP_SET_INT(n) int n;
#define ZP_SETTING_OWNED_ZP_SET_I64(n) int64_t n;
#define ZP_SETTING_OWNED_ZP_SET_FLOAT(n) float n;
#define ZP_SETTING_OWNED_ZP_SET_BOOL(n) int n;
#define ZP_SETTING_OWNED_ZP_SET_STR(n) char n[64];
#define ZP_SETTING_MEMBER(name, type, field, def, def_str, lo, hi, flags, help) ZP_SETTING_OWNED_##type(name)

/* One row placed in a struct. size: a string's capacity when its field is a char array, 0 when
 * it is a const char * (then a parsed string is the caller's text, which must outlive it). */
typedef struct {
    const char *name;
    zp_setting_type type;
    size_t offset, size;
    double def, lo, hi;
    const char *def_str;
    int flags;
    const char *help;
} zp_setting;

/* The rows placed in zp_engine_config. */
extern const zp_setting zp_engine_settings[];
extern const int zp_engine_n_settings;

/* Writes every row's default into base. */
void zp_settings_defaults(const zp_setting *t, int n, void *base);
/* The row named name, or NULL. */
const zp_setting *zp_setting_find(const zp_setting *t, int n, const char *name);
/* Sets a row from text (a flag's value; for a boolean 0/1/true/false), checking its type and
 * range; `what` names the source in an error (a flag, or file: "key"). */
zp_status zp_setting_parse(const zp_setting *s, const char *what, const char *text, void *base);
/* Sets a row from a number (a JSON value): whole where the type is, within the range. */
zp_status zp_setting_set_number(const zp_setting *s, const char *what, double v, void *base);
/* Writes the row's value as JSON (a number, true/false, a quoted string or null); 0 when it did
 * not fit in n bytes (out then holds a cut value, not to be used). */
int zp_setting_json(const zp_setting *s, const void *base, char *out, size_t n);
/* The row's flag: --name with '_' as '-', or --no-name for a boolean that defaults to on. */
void zp_setting_flag(const zp_setting *s, char *out, size_t n);

#endif
