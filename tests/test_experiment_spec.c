/* test_experiment_spec.c - experiment definitions: grid expansion of every shipped experiment
 * (axes, policy_params lists, baselines, dataset lists, deduplication), run-id stability (same
 * inputs -> same id; commit, model checksum or any setting changes it), and config errors named
 * by key. */
#include <string.h>

#include "experiment.h"
#include "test_util.h"

static int count_policy(const experiment *x, const char *p) {
    int n = 0;
    for (int i = 0; i < x->n_runs; i++) n += !strcmp(x->runs[i].policy, p);
    return n;
}

int main(void) {
    const struct { const char *name; int runs, full; } want[] = {{"smoke", 10, 1}, {"aime_nmax_sweep", 5, 1}, {"amc_window_sweep", 6, 1},
                                                                 {"concurrency_sweep", 10, 2}, {"policy_comparison", 39, 3},
                                                                 {"ablation_zipage", 9, 1}, {"throughput_random", 4, 1},
                                                                 {"fidelity_policies", 26, 0}, {"fidelity_zipage_ablation", 4, 0},
                                                                 {"fidelity_zipage_lambda", 12, 0}, {"smoke_fidelity", 6, 0},
                                                                 {"fidelity_kv_fp8", 22, 2}, {"fidelity_kv_fp8_prompt", 7, 1},
                                                                 {"fidelity_triattention", 12, 0}, {"policy_front", 42, 2},
                                                                 {"fidelity_head_budgets", 4, 0}, {"fidelity_adaptive_budget", 12, 0}, {"passkey_adaptive_budget", 19, 1}, {"passkey_policy_front", 19, 1}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        experiment x;
        CHECK_OK(exp_load(want[i].name, ZIPAGE_SOURCE_DIR "/experiments", &x));
        if (x.n_runs != want[i].runs || count_policy(&x, "full") != want[i].full)
            fprintf(stderr, "%s: %d runs (%d full), expected %d (%d)\n", want[i].name, x.n_runs, count_policy(&x, "full"), want[i].runs, want[i].full);
        CHECK(x.n_runs == want[i].runs && count_policy(&x, "full") == want[i].full);
        exp_free(&x);
    }
    experiment a, b;
    CHECK_OK(exp_load("ablation_zipage", ZIPAGE_SOURCE_DIR "/experiments", &a));
    int distinct = 1;
    for (int i = 0; i < a.n_runs; i++)
        for (int j = 0; j < i; j++) distinct &= strcmp(a.runs[i].policy_params, a.runs[j].policy_params) || strcmp(a.runs[i].policy, a.runs[j].policy);
    CHECK(distinct);
    CHECK_OK(exp_load("ablation_zipage", ZIPAGE_SOURCE_DIR "/experiments", &b));
    exp_assign_ids(&a, "abc123", 42);
    exp_assign_ids(&b, "abc123", 42);
    for (int i = 0; i < a.n_runs; i++) CHECK(!strcmp(a.runs[i].run_id, b.runs[i].run_id) && strlen(a.runs[i].run_id) == 16);
    char first[17];
    snprintf(first, sizeof first, "%s", a.runs[0].run_id);
    exp_assign_ids(&b, "abc124", 42);
    CHECK(strcmp(first, b.runs[0].run_id));
    exp_assign_ids(&b, "abc123", 43);
    CHECK(strcmp(first, b.runs[0].run_id));
    for (int i = 1; i < a.n_runs; i++) CHECK(strcmp(a.runs[i].run_id, first));
    exp_free(&a);
    exp_free(&b);
    /* errors */
    const char *bad[][2] = {{"{\"model\":\"m\",\"dataset\":\"d\",\"nmaxx\":[1]}", "unknown key \"nmaxx\""},
                            {"{\"dataset\":\"d\"}", "\"model\" and \"dataset\" are required"},
                            {"{\"model\":\"m\",\"dataset\":null}", "\"dataset\" is null: leave the key out for its default"},
                            /* null is no value: it would silently mean the default (every problem) */
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"limit\":null}", "\"limit\" is null: leave the key out for its default, or give a value"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"nmax\":null}", "\"nmax\" is null"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy_params\":null}", "\"policy_params\" is null"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"baseline\":null}", "\"baseline\" is null"},
                            {"{\"model\":\"m\",\"dataset\":\"\"}", "\"model\" and \"dataset\" are required"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"samples\":0}", "\"samples\" must be a number in [1"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"nmax\":[\"x\"]}", "\"nmax\" values must be whole numbers in [1, 1e+06]"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"nmax\":0}", "\"nmax\" values must be whole numbers in [1"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"nmax\":2.7}", "\"nmax\" values must be whole numbers"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"nmax\":1e10}", "\"nmax\" values must be whole numbers"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"window\":[0]}", "\"window\" values must be whole numbers in [1"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"limit\":0.5}", "\"limit\" must be a number in [1"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"limit\":2.5}", "\"limit\" must be a whole number"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"samples\":1.5}", "\"samples\" must be a whole number"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy\":[]}", "\"policy\" is an empty list"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"nmax\":[]}", "\"nmax\" is an empty list"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy\":\"zipage\",\"policy_params\":{\"alpha\":[]}}",
                             "policy_params \"alpha\" is an empty list"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy_params\":[1]}", "\"policy_params\" must be an object"},
                            /* per-policy parameters: objects under policy names, not mixed with parameter names */
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy_params\":{\"streaming\":true}}", "names a policy: its value must be an object"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy_params\":{\"streaming\":{},\"sink\":4}}", "mixes policy names and parameter names"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy_params\":{\"streaming\":{\"sink\":[]}}}", "policy_params \"streaming\" \"sink\" is an empty list"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"system\":\"pirate\"}", "\"system\" must be \"math\" or null"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"kind\":\"bench\"}", "\"kind\" must be"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"gpu_memory_utilization\":1.5}", "\"gpu_memory_utilization\" must be a number in"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"budget_tau\":[0.9,1.5]}", "\"budget_tau\" values must be numbers in [0.001, 1]"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"budget_floor\":0}", "\"budget_floor\" values must be whole numbers in [1"},
                            {"[1,2]", "not a JSON object"},
                            /* a boolean is a boolean, and only an axis setting takes a list */
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"prefix_cache\":1}", "\"prefix_cache\" must be true or false"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"baseline\":\"yes\"}", "\"baseline\" must be true or false"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"block_size\":[16,32]}", "\"block_size\" must be a number in"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy\":[\"zipage\",3]}", "\"policy\" values must be strings"},
                            /* a cross product too large to run (found by the experiment fuzzer: it looped for minutes) */
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy\":\"zipage\",\"nmax\":[1,2,3,4,5,6,7,8],\"window\":[1,2,3,4,5,6,7,8],"
                             "\"policy_params\":{\"lambda\":[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8],\"decay\":[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9]}}",
                             "the axes multiply to 4608 runs, more than 4096: split the experiment"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy\":\"snap\"}", "unknown policy \"snap\" (known: full, streaming, h2o, snapkv-d"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"nmax\":1,\"nmax\":2}", "key \"nmax\" appears twice"},
                            {"{\"model\":\"m\",\"dataset\":\"d\",\"policy_params\":{\"a\":1,\"a\":2}}", "key \"a\" appears twice"},
                            {"{\"model\":\"m\",\"dataset\":\"d\"} {\"x\":1}", "line 1, column 29: text after the JSON value"},
                            /* a syntax error names its line and column */
                            {"{\n  \"model\": \"m\",\n  \"dataset\": \"d\"\n  \"limit\": 3\n}", "line 4, column 3: invalid JSON here"},
                            {"{\"model\": \"m\",\n\"nmax\": [1, 2,]}", "line 2, column 15: invalid JSON here"}};
    char path[512];
    snprintf(path, sizeof path, "%s/bad_experiment.json", ZP_TEST_TMP);
    { /* JSON nested 100,000 deep (the re-probe's): the place and the reason, not "not a JSON object" */
        FILE *f = fopen(path, "w");
        fputs("{\"model\": ", f);
        for (int i = 0; i < 100000; i++) fputc('[', f);
        fclose(f);
        experiment x;
        CHECK(exp_load(path, NULL, &x) != ZP_OK && strstr(zp_last_error(), "line 1, column ") &&
              strstr(zp_last_error(), "nesting deeper than 1000"));
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        FILE *f = fopen(path, "w");
        fputs(bad[i][0], f);
        fclose(f);
        experiment x;
        zp_status s = exp_load(path, NULL, &x);
        CHECK(s != ZP_OK);
        if (s == ZP_OK || !strstr(zp_last_error(), bad[i][1])) fprintf(stderr, "case %zu: \"%s\" lacks \"%s\"\n", i, zp_last_error(), bad[i][1]);
        CHECK(strstr(zp_last_error(), bad[i][1]) != NULL);
    }
    { /* the adaptive budget's axes: a fixed-budget run once (tau and floor at their defaults), full
         KV's baseline once with the fixed budget, each adaptive value its own run */
        FILE *f = fopen(path, "w");
        fputs("{\"model\":\"m\",\"dataset\":\"d\",\"baseline\":true,\"policy\":\"zipage\",\"budget\":[\"fixed\",\"adaptive\"],"
              "\"budget_tau\":[0.8,0.95],\"budget_floor\":[1,2]}", f);
        fclose(f);
        experiment x;
        CHECK_OK(exp_load(path, NULL, &x));
        int fixed = 0, adaptive = 0, full = 0;
        for (int i = 0; i < x.n_runs; i++) {
            const exp_run *r = &x.runs[i];
            full += !strcmp(r->policy, "full") && !strcmp(r->budget, "fixed") && r->budget_floor == 1;
            fixed += !strcmp(r->policy, "zipage") && !strcmp(r->budget, "fixed") && r->budget_tau == 0.9f && r->budget_floor == 1;
            adaptive += !strcmp(r->policy, "zipage") && !strcmp(r->budget, "adaptive");
        }
        printf("budget axes: %d runs, %d fixed, %d adaptive, %d full KV\n", x.n_runs, fixed, adaptive, full);
        CHECK(x.n_runs == 6 && fixed == 1 && adaptive == 4 && full == 1);
        exp_free(&x);
    }
    /* per-policy windows: each run without a window axis gets its policy's authors' value */
    {
        experiment pc;
        CHECK_OK(exp_load("policy_comparison", ZIPAGE_SOURCE_DIR "/experiments", &pc));
        const struct { const char *policy; int window; } want[] = {{"full", 0}, {"zipage", 16}, {"rkv", 8}, {"morphkv", 32}, {"snapkv-d", 8}, {"streaming", 16}, {"gkv", 16},
                                                                        {"snapkv", 32}};
        int seen = 0;
        for (int i = 0; i < pc.n_runs; i++)
            for (size_t k = 0; k < sizeof want / sizeof *want; k++)
                if (!strcmp(pc.runs[i].policy, want[k].policy)) {
                    CHECK(pc.runs[i].window == want[k].window);
                    /* the prompt-only SnapKV and full KV run the full scheduler, the rest hybrid */
                    const int full_sched = !strcmp(want[k].policy, "full") || !strcmp(want[k].policy, "snapkv");
                    CHECK(!strcmp(pc.runs[i].scheduler, full_sched ? "full" : "hybrid"));
                    seen |= 1 << k;
                }
        CHECK(seen == 255);
        /* per-policy parameters: StreamingLLM without and with its shift, the others at their defaults */
        int shift[2] = {0, 0}, others_default = 1;
        for (int i = 0; i < pc.n_runs; i++) {
            if (strcmp(pc.runs[i].policy, "streaming")) { others_default &= pc.runs[i].policy_params[0] == 0; continue; }
            shift[0] += !strcmp(pc.runs[i].policy_params, "{\"position_shift\":false}");
            shift[1] += !strcmp(pc.runs[i].policy_params, "{\"position_shift\":true}");
        }
        CHECK(shift[0] == 3 && shift[1] == 3 && others_default);
        exp_free(&pc);
    }
    /* gpu_memory_utilization reaches the runs and their resolved configuration (every setting is there) */
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"m\",\"dataset\":\"d\",\"device\":\"cuda\",\"gpu_memory_utilization\":0.8}", f);
    fclose(f);
    experiment g;
    CHECK_OK(exp_load(path, NULL, &g));
    CHECK(g.n_runs == 1 && g.runs[0].gpu_memory_utilization == 0.8f && strstr(g.runs[0].resolved, "\"gpu_memory_utilization\":0.8,"));
    exp_free(&g);
    CHECK_OK(exp_load("smoke", ZIPAGE_SOURCE_DIR "/experiments", &g));
    CHECK(g.runs[0].gpu_memory_utilization == 0.9f && strstr(g.runs[0].resolved, "\"gpu_memory_utilization\":0.9,"));
    exp_free(&g);
    /* the schema: every setting of both tables is in the resolved configuration, an axis setting
     * of the engine's table expands (kv_pool_tokens, last and fastest), and the engine config
     * of a run takes every engine setting */
    f = fopen(path, "w");
    fputs("{\"model\":\"m\",\"dataset\":[\"d1\",\"d2\"],\"policy\":\"zipage\",\"kv_pool_tokens\":[4096,8192],\"async\":true,"
          "\"prefix_cache\":false,\"block_size\":16,\"max_num_seqs\":7}", f);
    fclose(f);
    CHECK_OK(exp_load(path, NULL, &g));
    CHECK(g.n_runs == 4 && !strcmp(g.runs[1].dataset, "d1") && g.runs[1].kv_pool_tokens == 8192 && !strcmp(g.runs[2].dataset, "d2"));
    for (int i = 0; i < exp_n_settings; i++) {
        char key[80];
        snprintf(key, sizeof key, "\"%s\":", exp_settings[i].name);
        CHECK(strstr(g.runs[0].resolved, key) != NULL);
    }
    /* strings are escaped in the resolved configuration: a quote and a backslash in a path */
    {
        FILE *q = fopen(path, "w");
        fputs("{\"model\":\"m\\\"x\\\\y\",\"dataset\":\"d\"}", q);
        fclose(q);
        experiment e;
        CHECK_OK(exp_load(path, NULL, &e));
        CHECK(e.n_runs == 1 && !strcmp(e.runs[0].model, "m\"x\\y") && strstr(e.runs[0].resolved, "\"model\":\"m\\\"x\\\\y\","));
        exp_free(&e);
    }
    zp_engine_config ec = zp_engine_config_default();
    exp_engine_config(&g.runs[1], &ec);
    CHECK(ec.kv_pool_tokens == 8192 && ec.async_compress == 1 && ec.enable_prefix_cache == 0 && ec.block_size == 16 && ec.max_num_seqs == 7 &&
          !strcmp(ec.policy, "zipage") && ec.window == 16 && !strcmp(ec.scheduler, "hybrid"));
    exp_free(&g);
    return zp_test_finish("test_experiment_spec");
}
