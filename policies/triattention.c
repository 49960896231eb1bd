/* triattention.c - TriAttention (docs/triattention.md; the authors' code WeianMao/triattention
 * @ c3744ee6): each cached key scored, with no query window, by the expected RoPE logit of the
 * model's calibrated mean queries at 17 future positions plus a magnitude term (scorers/trig.c),
 * z-normalised per (layer, query head) over the decode tokens; the prompt is kept and never
 * scored, counted in the budget (a prompt longer than the budget keeps its first budget tokens,
 * as the authors' code). No recent window, no sink. Modes: per_head (the paper's runs, the
 * default: per KV head the mean over layers of the group's max, one kept set per KV head shared by
 * every layer), union (the max over every layer and query head: one set for everything),
 * per_layer_perhead (per layer the group's max: a set per layer and KV head). Parameters: stats
 * (the statistics file, safetensors, compress/trig_stats.h; required to run), mode. The block size
 * and N_max give the cadence: block 128 and N_max = budget / 128 compress every 128 decode steps,
 * as the paper. No history. Not prefix-compatible (the prompt's protection is per request).
 * Oracle of the scores and kept sets: tests/reference/ref_triattention.py. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

static const char *const modes[] = {"per_layer_perhead", "per_head", "union", NULL}; /* zp_trig_mode's order */

typedef struct {
    char stats[1024]; /* "": none given */
    zp_trig_mode mode;
} trig_state;

static zp_status trig_init(const cJSON *params, void **state) {
    static const char *const known[] = {"stats", "mode", NULL};
    trig_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    int m = ZP_TRIG_PER_HEAD;
    zp_status st = policy_check_keys(params, "triattention", known);
    if (st == ZP_OK) st = policy_param_choice(params, "triattention", "mode", modes, &m);
    s->mode = (zp_trig_mode)m;
    const cJSON *stats = cJSON_GetObjectItemCaseSensitive(params, "stats");
    if (st == ZP_OK && stats &&
        (!cJSON_IsString(stats) || !stats->valuestring[0] || strlen(stats->valuestring) >= sizeof s->stats))
        st = zp_fail(ZP_ERR_INVALID,
                     "policy triattention: parameter \"stats\" must be the path of a statistics file (under %zu bytes)",
                     sizeof s->stats);
    if (st == ZP_OK && stats) snprintf(s->stats, sizeof s->stats, "%s", stats->valuestring);
    if (st != ZP_OK) {
        free(s);
        return st;
    }
    *state = s;
    return ZP_OK;
}

static void trig_plan(const void *state, int budget, int window, zp_score_plan *p) {
    (void)budget;
    (void)window;
    const trig_state *s = state;
    p->attention = 0;
    p->key_score = ZP_KEYS_TRIG; /* the prompt at +inf (the view's protect), the rest by score */
    p->trig_mode = s->mode;
    p->trig_stats_path = s->stats[0] ? s->stats : NULL;
}

static void trig_describe(const void *state, char *buf, size_t len) {
    const trig_state *s = state;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "stats", s->stats);
    cJSON_AddStringToObject(o, "mode", modes[s->mode]);
    char *j = cJSON_PrintUnformatted(o);
    snprintf(buf, len, "%s", j ? j : "{}");
    free(j);
    cJSON_Delete(o);
}

const zp_policy_ops policy_triattention_ops = {
    .name = "triattention",
    .label = "TriAttention",
    .summary = "expected RoPE logits of calibrated mean queries (TriAttention; needs a statistics file)",
    .evicts = 1,
    .needs_history = 0,
    .needs_stats = 1,
    .prefix_compatible = 0,
    .prompt_only = 0,
    .default_window = 1, /* no queries are read: the smallest query cache */
    .init = trig_init,
    .destroy = free,
    .plan = trig_plan,
    .describe = trig_describe,
};
