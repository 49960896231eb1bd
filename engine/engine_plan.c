/* engine_plan.c - every engine setting that decides what the engine is, resolved once from the
 * configuration before anything is loaded (engine_plan_resolve): the policy, looked up once and
 * its parameters checked once; the KV geometry; the scheduler's kind; the K/V element type and
 * where its scales come from; the layer budget's kind; whether the prefix cache can serve. The
 * engine, its scheduler and its compressor read the plan, never the raw settings for these, and
 * nothing changes the configuration afterwards. Deliberately not here: sizes that need the model
 * or the device (the pool, the query slots, the layer budgets' views: engine.c, engine_memory.c). */
#include "engine_internal.h"

#include "kv_scales.h"

/* The policy's facts that depend on its parameters: a stored (global) history, a live history
 * (exact H2O), the position shift of StreamingLLM, a score per KV head (attention, keys or a
 * history) and one set across layers (TriAttention's modes other than per_layer_perhead). */
static zp_status policy_facts(const zp_engine_config *cfg, engine_plan *p) {
    zp_policy pol;
    ZP_TRY(policy_init_ops(p->ops, cfg->policy_params, &pol));
    zp_score_plan plan;
    if (p->ops->evicts && policy_plan(&pol, p->geo.budget, p->geo.window, &plan) == ZP_OK) {
        p->history_live = plan.history_live;
        p->shift_positions = plan.shift_positions;
        p->attention_score = plan.attention || plan.history_live; /* exact H2O: every query's attention, summed live */
        p->head_scores = plan.attention || plan.key_score != ZP_KEYS_NONE || plan.global != ZP_GLOBAL_NONE;
        p->across_layers = plan.key_score == ZP_KEYS_TRIG && plan.trig_mode != ZP_TRIG_PER_LAYER_PERHEAD;
    }
    p->stores_history = p->geo.evicts && policy_stores_history(&pol, p->geo.budget, p->geo.window);
    policy_destroy(&pol);
    return ZP_OK;
}

/* head_budget: uniform, or adakv for a policy whose plan scores each KV head with one budget for
 * every layer (policy_facts: not StreamingLLM's scoreless plan, not TriAttention across layers,
 * not StreamingLLM's position shift; not PyramidKV's per-layer budgets). */
static zp_status head_budget_check(const zp_engine_config *cfg, engine_plan *p) {
    const char *k = cfg->head_budget ? cfg->head_budget : "uniform";
    if (!strcmp(k, "uniform")) return ZP_OK;
    if (strcmp(k, "adakv")) return zp_fail(ZP_ERR_INVALID, "head_budget \"%s\" is not known (uniform, adakv)", k);
    if (!p->ops->evicts) return zp_fail(ZP_ERR_INVALID, "head_budget adakv needs an evicting policy (policy is %s)", p->ops->name);
    if (p->layer_budget != ZP_LAYERS_UNIFORM)
        return zp_fail(ZP_ERR_UNSUPPORTED, "head_budget adakv: not with layer_budget %s yet (per-layer budgets inside the cap)", cfg->layer_budget);
    if (!p->head_scores)
        return zp_fail(ZP_ERR_INVALID, "head_budget adakv: policy %s gives its tokens no score per KV head to share a layer's budget by",
                       p->ops->name);
    if (p->across_layers)
        return zp_fail(ZP_ERR_INVALID, "head_budget adakv: policy %s scores across layers (mode per_layer_perhead scores each layer's heads)",
                       p->ops->name);
    if (p->shift_positions) return zp_fail(ZP_ERR_INVALID, "head_budget adakv: not with position_shift (policy %s)", p->ops->name);
    p->head_adakv = 1;
    p->head_floor = cfg->head_floor;
    return ZP_OK;
}

/* budget: fixed (N_max blocks), or adaptive for a capping policy whose plan scores tokens by
 * attention (its window's, or exact H2O's live history), the mass the count is taken over (not
 * StreamingLLM, with or without its position shift, the key scores or TriAttention), with one
 * budget for every layer and head (not pyramid, not adakv). What needs the model or the backend
 * (sliding layers, CUDA, tensor parallelism, the query slots) is engine.c's. */
static zp_status budget_check(const zp_engine_config *cfg, engine_plan *p) {
    const char *k = cfg->budget ? cfg->budget : "fixed";
    if (!strcmp(k, "fixed")) return ZP_OK;
    if (strcmp(k, "adaptive")) return zp_fail(ZP_ERR_INVALID, "budget \"%s\" is not known (fixed, adaptive)", k);
    const char *pol = p->ops->name;
    if (!p->ops->evicts || p->ops->prompt_only)
        return zp_fail(ZP_ERR_INVALID, "budget adaptive needs a policy that caps every request at N_max blocks (policy is %s)", pol);
    if (!p->attention_score)
        return zp_fail(ZP_ERR_INVALID, "budget adaptive: policy %s scores no attention mass to take the count over", pol);
    if (p->layer_budget != ZP_LAYERS_UNIFORM)
        return zp_fail(ZP_ERR_UNSUPPORTED, "budget adaptive: not with layer_budget %s (one count for every layer)", cfg->layer_budget);
    if (p->head_adakv) return zp_fail(ZP_ERR_UNSUPPORTED, "budget adaptive: not with head_budget adakv (one count for every head)");
    if (cfg->budget_tau <= 0.f || cfg->budget_tau > 1.f)
        return zp_fail(ZP_ERR_INVALID, "budget_tau %g must be in (0, 1]", cfg->budget_tau);
    if (cfg->budget_floor < 1 || cfg->budget_floor > p->geo.nmax)
        return zp_fail(ZP_ERR_INVALID, "budget_floor %d must be in [1, nmax %d]", cfg->budget_floor, p->geo.nmax);
    p->budget_adaptive = 1;
    p->budget_tau = cfg->budget_tau;
    p->budget_floor = cfg->budget_floor;
    return ZP_OK;
}

/* The scheduler: the policy's (hybrid for a capping policy, full otherwise) unless cfg names one
 * that fits it. */
static zp_status scheduler_kind(const zp_engine_config *cfg, engine_plan *p) {
    const zp_policy_ops *ops = p->ops;
    p->sched = ops->evicts && !ops->prompt_only ? ZP_SCHED_HYBRID : ZP_SCHED_FULL;
    if (cfg->scheduler && !sched_kind_parse(cfg->scheduler, &p->sched))
        return zp_fail(ZP_ERR_INVALID, "unknown scheduler \"%s\" (known: full, strict, hybrid)", cfg->scheduler);
    if (!ops->evicts && p->sched != ZP_SCHED_FULL)
        return zp_fail(ZP_ERR_INVALID, "scheduler %s needs an evicting policy (policy is %s)", cfg->scheduler, ops->name);
    if (ops->prompt_only && p->sched != ZP_SCHED_FULL)
        return zp_fail(ZP_ERR_INVALID, "scheduler %s: policy %s compresses only prompts and runs the full scheduler", cfg->scheduler, ops->name);
    return ZP_OK;
}

zp_status engine_plan_resolve(const zp_engine_config *cfg, engine_plan *p) {
    memset(p, 0, sizeof *p);
    const char *name = cfg->policy ? cfg->policy : "full";
    p->ops = policy_find(name);
    if (!p->ops) return policy_unknown(name);
    ZP_TRY(zp_geometry_resolve(p->ops, cfg->block_size, cfg->nmax, cfg->window, &p->geo));
    ZP_TRY(zp_kv_dtype_parse(cfg->kv_dtype, &p->kv_fp8));
    ZP_TRY(zp_kv_scales_parse(cfg->kv_scales, p->kv_fp8, &p->kv_calibrate));
    ZP_TRY(zp_layer_budget_check(cfg->layer_budget, cfg->pyramid_beta, &p->geo, &p->layer_budget));
    ZP_TRY(scheduler_kind(cfg, p));
    ZP_TRY(policy_facts(cfg, p));
    ZP_TRY(head_budget_check(cfg, p));
    ZP_TRY(budget_check(cfg, p));
    /* each request's live history, or compressed prompt, is its own: no prefix hits */
    p->prefix_cache = cfg->enable_prefix_cache && !p->history_live && !p->ops->prompt_only;
    return ZP_OK;
}
