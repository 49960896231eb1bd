/* test_config.c - config.json parsing of every preset, and one clear error per malformed case;
 * the backends' tuning options as the command line reads them (tools/cli_options.c). */
#include <string.h>
#include <sys/stat.h> /* mkdir */

#include "config.h"
#include "cli_engine.h"
#include "cli_options.h"
#include "engine.h"
#include "settings.h"
#include "test_util.h"

static void test_presets(void) {
    const struct { const char *name; zp_arch arch; int layers, heads, kv, head_dim, qkv_bias, qk_norm, tie; zp_rope_type rope; } want[] = {
        {.name = "Qwen3-0.6B", .arch = ZP_ARCH_QWEN3, .layers = 28, .heads = 16, .kv = 8, .head_dim = 128, .qkv_bias = 0, .qk_norm = 1, .tie = 1, .rope = ZP_ROPE_DEFAULT},
        {.name = "Qwen3-8B", .arch = ZP_ARCH_QWEN3, .layers = 36, .heads = 32, .kv = 8, .head_dim = 128, .qkv_bias = 0, .qk_norm = 1, .tie = 0, .rope = ZP_ROPE_DEFAULT},
        {.name = "Qwen3-14B", .arch = ZP_ARCH_QWEN3, .layers = 40, .heads = 40, .kv = 8, .head_dim = 128, .qkv_bias = 0, .qk_norm = 1, .tie = 0, .rope = ZP_ROPE_DEFAULT},
        {.name = "DeepSeek-R1-Distill-Qwen-1.5B", .arch = ZP_ARCH_QWEN2, .layers = 28, .heads = 12, .kv = 2, .head_dim = 128, .qkv_bias = 1, .qk_norm = 0, .tie = 0, .rope = ZP_ROPE_DEFAULT},
        {.name = "DeepSeek-R1-Distill-Qwen-7B", .arch = ZP_ARCH_QWEN2, .layers = 28, .heads = 28, .kv = 4, .head_dim = 128, .qkv_bias = 1, .qk_norm = 0, .tie = 0, .rope = ZP_ROPE_DEFAULT},
        {.name = "DeepSeek-R1-Distill-Llama-8B", .arch = ZP_ARCH_LLAMA, .layers = 32, .heads = 32, .kv = 8, .head_dim = 128, .qkv_bias = 0, .qk_norm = 0, .tie = 0, .rope = ZP_ROPE_LLAMA3},
        {.name = "SmolLM2-135M-Instruct", .arch = ZP_ARCH_LLAMA, .layers = 30, .heads = 9, .kv = 3, .head_dim = 64, .qkv_bias = 0, .qk_norm = 0, .tie = 1, .rope = ZP_ROPE_DEFAULT},
        {.name = "tiny-qwen3", .arch = ZP_ARCH_QWEN3, .layers = 2, .heads = 4, .kv = 2, .head_dim = 64, .qkv_bias = 0, .qk_norm = 1, .tie = 1, .rope = ZP_ROPE_DEFAULT},
        {.name = "tiny-qwen2", .arch = ZP_ARCH_QWEN2, .layers = 3, .heads = 2, .kv = 1, .head_dim = 128, .qkv_bias = 1, .qk_norm = 0, .tie = 0, .rope = ZP_ROPE_DEFAULT},
        {.name = "tiny-llama", .arch = ZP_ARCH_LLAMA, .layers = 4, .heads = 4, .kv = 2, .head_dim = 64, .qkv_bias = 0, .qk_norm = 0, .tie = 0, .rope = ZP_ROPE_LLAMA3},
        {.name = "Qwen3-30B-A3B", .arch = ZP_ARCH_QWEN3_MOE, .layers = 48, .heads = 32, .kv = 4, .head_dim = 128, .qkv_bias = 0, .qk_norm = 1, .tie = 0, .rope = ZP_ROPE_DEFAULT},
        {.name = "Qwen3-235B-A22B", .arch = ZP_ARCH_QWEN3_MOE, .layers = 94, .heads = 64, .kv = 4, .head_dim = 128, .qkv_bias = 0, .qk_norm = 1, .tie = 0, .rope = ZP_ROPE_DEFAULT},
        {.name = "gpt-oss-20b", .arch = ZP_ARCH_GPT_OSS, .layers = 24, .heads = 64, .kv = 8, .head_dim = 64, .qkv_bias = 1, .qk_norm = 0, .tie = 0, .rope = ZP_ROPE_YARN},
        {.name = "gpt-oss-120b", .arch = ZP_ARCH_GPT_OSS, .layers = 36, .heads = 64, .kv = 8, .head_dim = 64, .qkv_bias = 1, .qk_norm = 0, .tie = 0, .rope = ZP_ROPE_YARN},
        {.name = "tiny-gpt-oss", .arch = ZP_ARCH_GPT_OSS, .layers = 4, .heads = 4, .kv = 2, .head_dim = 64, .qkv_bias = 1, .qk_norm = 0, .tie = 0, .rope = ZP_ROPE_YARN},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", ZIPAGE_SOURCE_DIR "/models", want[i].name);
        zp_model_config c;
        CHECK_OK(zp_config_load(dir, &c));
        CHECK(c.arch == want[i].arch);
        CHECK(c.n_layers == want[i].layers && c.n_heads == want[i].heads && c.n_kv_heads == want[i].kv);
        CHECK(c.head_dim == want[i].head_dim);
        CHECK(c.qkv_bias == want[i].qkv_bias && c.qk_norm == want[i].qk_norm && c.tie_embeddings == want[i].tie);
        CHECK(c.rope.type == want[i].rope);
    }
    zp_model_config c;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/Qwen3-8B", ZIPAGE_SOURCE_DIR "/models");
    CHECK_OK(zp_config_load(dir, &c));
    CHECK(c.n_eos == 2 && c.eos_ids[0] == 151645 && c.eos_ids[1] == 151643); /* from generation_config.json */
    CHECK(zp_config_is_eos(&c, 151643) && !zp_config_is_eos(&c, 151644));
    snprintf(dir, sizeof dir, "%s/DeepSeek-R1-Distill-Llama-8B", ZIPAGE_SOURCE_DIR "/models");
    CHECK_OK(zp_config_load(dir, &c));
    CHECK_NEAR(c.rope.factor, 8.0, 0);
    CHECK(c.rope.orig_max_pos == 8192 && c.vocab == 128256 && c.rope.theta == 500000.0);
}

static const char *GOOD =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"num_hidden_layers\":2,"
    "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":128,\"vocab_size\":100%s}";

static zp_status parse_with(const char *extra) {
    char buf[1024];
    snprintf(buf, sizeof buf, GOOD, extra);
    zp_model_config c;
    return zp_config_parse(buf, "cfg.json", &c);
}

static void test_malformed(void) {
    zp_model_config c;
    CHECK_OK(parse_with(""));
    CHECK_FAILS(zp_config_parse("{not json", "bad.json", &c), ZP_ERR_FORMAT, "bad.json");
    CHECK_FAILS(zp_config_parse("{\"architectures\":[\"MistralForCausalLM\"]}", "m.json", &c), ZP_ERR_UNSUPPORTED,
                "MistralForCausalLM");
    CHECK_FAILS(zp_config_parse("{\"architectures\":[\"Qwen3ForCausalLM\"],\"hidden_size\":8}", "q.json", &c), ZP_ERR_FORMAT,
                "num_hidden_layers");
    CHECK_FAILS(zp_config_parse("{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_size\":64,\"num_hidden_layers\":2,"
                                "\"num_attention_heads\":4,\"num_key_value_heads\":3,\"intermediate_size\":128,\"vocab_size\":100}",
                                "kv.json", &c),
                ZP_ERR_FORMAT, "kv.json: num_attention_heads 4 is not a multiple of num_key_value_heads 3");
    CHECK_OK(parse_with(",\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":4}"));
    CHECK_FAILS(parse_with(",\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8}"), ZP_ERR_FORMAT, "low_freq_factor");
    CHECK_FAILS(parse_with(",\"hidden_act\":\"gelu\""), ZP_ERR_UNSUPPORTED, "gelu");
    CHECK_FAILS(parse_with(",\"head_dim\":-4"), ZP_ERR_FORMAT, "head_dim");
    CHECK_FAILS(parse_with(",\"head_dim\":514"), ZP_ERR_UNSUPPORTED, "head_dim 514: at most 512");
    CHECK_FAILS(parse_with(",\"rms_norm_eps\":\"small\""), ZP_ERR_FORMAT, "rms_norm_eps");
    /* a model folder that is missing, empty, a file, or without config.json: said as such */
    CHECK_FAILS(zp_config_load("/nonexistent/model", &c), ZP_ERR_IO, "model folder /nonexistent/model does not exist (a model folder holds config.json");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/empty_model", ZP_TEST_TMP);
    mkdir(dir, 0755);
    CHECK_FAILS(zp_config_load(dir, &c), ZP_ERR_IO, "is empty (a model folder holds");
    snprintf(dir, sizeof dir, "%s/only_tokenizer", ZP_TEST_TMP);
    mkdir(dir, 0755);
    char file[700];
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    FILE *f = fopen(file, "w");
    fputs("{}", f);
    fclose(f);
    CHECK_FAILS(zp_config_load(dir, &c), ZP_ERR_IO, "has no config.json");
    CHECK_FAILS(zp_config_load(file, &c), ZP_ERR_IO, "is not a folder");
    CHECK_OK(parse_with(""));
    CHECK_OK(zp_config_parse_generation("{\"eos_token_id\":[5,6,7]}", "g.json", &c));
    CHECK(c.n_eos == 3 && c.eos_ids[2] == 7);
    CHECK_FAILS(zp_config_parse_generation("{\"eos_token_id\":\"x\"}", "g.json", &c), ZP_ERR_FORMAT, "eos_token_id");
}

/* Each config key that would change the math is refused by name (one case per key); keys
 * that do not are accepted; the transformers-5 style is read. */
static void test_refusals(void) {
    const char *cases[][2] = {
        {",\"use_sliding_window\":true", "\"use_sliding_window\": true is not supported"},
        {",\"layer_types\":[\"full_attention\",\"sliding_attention\"]", "\"layer_types\" has \"sliding_attention\""},
        {",\"layer_types\":[\"full_attention\"]", "\"layer_types\" must list 2 layers"},
        {",\"attention_bias\":true", "\"attention_bias\": true (biases on q, k, v and o_proj) is not supported"},
        {",\"mlp_bias\":true", "\"mlp_bias\": true is not supported"},
        {",\"final_logit_softcapping\":30.0", "\"final_logit_softcapping\" is not supported"},
        {",\"attn_logit_softcapping\":50.0", "\"attn_logit_softcapping\" is not supported"},
        {",\"rope_interleaved\":true", "\"rope_interleaved\": true is not supported"},
        {",\"use_mrope\":true", "\"use_mrope\": true is not supported"},
        {",\"quantization_config\":{\"quant_method\":\"awq\"}", "\"quantization_config\" is not supported"},
        {",\"auto_map\":{\"AutoModel\":\"x.Y\"}", "\"auto_map\" is not supported"},
        {",\"partial_rotary_factor\":0.5", "\"partial_rotary_factor\" 0.5 is not supported"},
        {",\"rope_parameters\":{\"rope_type\":\"default\",\"partial_rotary_factor\":0.25}", "\"partial_rotary_factor\" 0.25"},
        {",\"rope_parameters\":{\"rope_type\":\"longrope\",\"short_factor\":[1],\"long_factor\":[1]}", "rope_type \"longrope\" is not supported"},
        {",\"rope_parameters\":{\"rope_type\":\"su\"}", "rope_type \"su\" is not supported"},
        {",\"rope_scaling\":{\"type\":\"linear\",\"rope_type\":\"yarn\",\"factor\":4}", "has \"rope_type\": \"yarn\" and \"type\": \"linear\""},
        {",\"rope_parameters\":{\"rope_type\":\"yarn\"}", "rope_type \"yarn\" needs \"factor\""},
        {",\"rope_parameters\":{\"rope_type\":\"linear\",\"factor\":0}", "\"factor\" must be > 0"},
        {",\"rope_parameters\":{\"rope_type\":\"default\",\"mrope_section\":[1]}", "key \"mrope_section\" is not a RoPE parameter"},
        {",\"rope_parameters\":7", "\"rope_parameters\" must be an object or null"},
        {",\"hidden_act\":\"gelu_pytorch_tanh\"", "hidden_act \"gelu_pytorch_tanh\" is not supported"},
        {",\"sliding_windw\":4096", "unknown key \"sliding_windw\""},
        {",\"vocab_size\":200", "key \"vocab_size\" appears twice"},
        {",\"eos_token_id\":-5", "\"eos_token_id\" must be a non-negative integer"},
        {",\"eos_token_id\":1e30", "\"eos_token_id\" must be a non-negative integer"},
        {"} trailing", "text after the JSON value"},
        {",\"torch_dtype\":\"float8\"", "\"torch_dtype\" \"float8\" is not a dtype this loader knows"},
        {",\"tie_word_embeddings\":\"yes\"", "\"tie_word_embeddings\" must be true or false"},
        {",\"attention_bias\":0", "\"attention_bias\" must be true or false"},
        {",\"dtype\":7", "\"dtype\" (not a string) is not a dtype"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        zp_status s = parse_with(cases[i][0]);
        if (s == ZP_OK || !strstr(zp_last_error(), cases[i][1]))
            fprintf(stderr, "refusal case %zu (%s): got \"%s\"\n", i, cases[i][0], s == ZP_OK ? "accepted" : zp_last_error());
        CHECK(s != ZP_OK && strstr(zp_last_error(), cases[i][1]));
    }
    const char *accepted[] = {",\"use_sliding_window\":false,\"sliding_window\":4096,\"max_window_layers\":28",
                              ",\"layer_types\":[\"full_attention\",\"full_attention\"]", ",\"attention_bias\":false",
                              ",\"pretraining_tp\":1,\"use_cache\":true,\"transformers_version\":\"5.17.0\",\"dtype\":\"float32\"",
                              ",\"final_logit_softcapping\":null,\"partial_rotary_factor\":1.0", ",\"hidden_act\":\"swish\""};
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        zp_status s = parse_with(accepted[i]);
        if (s != ZP_OK) fprintf(stderr, "accept case %zu (%s): %s\n", i, accepted[i], zp_last_error());
        CHECK(s == ZP_OK);
    }
    /* transformers 5 style: theta and type inside rope_parameters; the v4 top-level key loses */
    zp_model_config c;
    char buf[1024];
    snprintf(buf, sizeof buf, GOOD, ",\"rope_theta\":10000,\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":1000000.0}");
    CHECK_OK(zp_config_parse(buf, "v5.json", &c));
    CHECK(c.rope.theta == 1e6 && c.rope.type == ZP_ROPE_DEFAULT);
    snprintf(buf, sizeof buf, GOOD, ",\"max_position_embeddings\":40960,\"rope_parameters\":{\"rope_type\":\"yarn\",\"factor\":4.0,\"rope_theta\":1e6}");
    CHECK_OK(zp_config_parse(buf, "v5.json", &c));
    CHECK(c.rope.type == ZP_ROPE_YARN && c.rope.orig_max_pos == 40960 && c.rope.factor == 4.0 && c.rope.truncate);
    /* a non-empty v4 rope_scaling replaces rope_parameters; an empty one does not */
    snprintf(buf, sizeof buf, GOOD, ",\"rope_scaling\":{},\"rope_parameters\":{\"rope_type\":\"linear\",\"factor\":2}");
    CHECK_OK(zp_config_parse(buf, "v5.json", &c));
    CHECK(c.rope.type == ZP_ROPE_LINEAR && c.rope.factor == 2 && c.rope.theta == 10000);
}

/* The backends' tuning options as the command line reads them (tools/cli_options.c): the
 * defaults when unset or empty; each accepted value of the ZIPAGE_<NAME> variables and of
 * --backend-option NAME=VALUE; a mistyped one fails naming it. */
static zp_status env_options(zp_backend_options *k) {
    *k = zp_backend_options_default();
    return cli_backend_options_env(k);
}

static void test_backend_options(void) {
    static const char *const names[] = {"ZIPAGE_COMPRESS_PRIORITY", "ZIPAGE_PROFILE", "ZIPAGE_GEMM_TUNE"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) unsetenv(names[i]);
    zp_backend_options k;
    CHECK_OK(env_options(&k));
    CHECK(!k.compress_priority_low && !k.profile && !k.gemm_tune);
    setenv("ZIPAGE_GEMM_TUNE", "", 1); /* empty: unset */
    CHECK_OK(env_options(&k));
    CHECK(!k.gemm_tune);
    const char *set[][2] = {{"ZIPAGE_COMPRESS_PRIORITY", "low"}, {"ZIPAGE_PROFILE", "1"}, {"ZIPAGE_GEMM_TUNE", "1"}};
    for (size_t i = 0; i < sizeof set / sizeof *set; i++) setenv(set[i][0], set[i][1], 1);
    CHECK_OK(env_options(&k));
    CHECK(k.compress_priority_low && k.profile && k.gemm_tune);
    setenv("ZIPAGE_GEMM_TUNE", "off", 1);
    CHECK_FAILS(env_options(&k), ZP_ERR_INVALID, "ZIPAGE_GEMM_TUNE=off: expected 0 or 1");
    setenv("ZIPAGE_GEMM_TUNE", "1", 1);
    setenv("ZIPAGE_COMPRESS_PRIORITY", "high", 1);
    CHECK_FAILS(env_options(&k), ZP_ERR_INVALID, "ZIPAGE_COMPRESS_PRIORITY=high: expected low");
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) unsetenv(names[i]);
    /* the same table through the flag */
    k = zp_backend_options_default();
    CHECK_OK(cli_backend_option("profile=1", &k));
    CHECK_OK(cli_backend_option("gemm_tune=1", &k));
    CHECK(k.profile && k.gemm_tune && !k.compress_priority_low);
    CHECK_FAILS(cli_backend_option("gemm_tune=fast", &k), ZP_ERR_INVALID, "gemm_tune=fast: expected 0 or 1");
    /* the decode kernels' variants left for the lab (dev/cuda/): no longer options */
    CHECK_FAILS(cli_backend_option("decode_kernel=mma", &k), ZP_ERR_INVALID, "NAME one of compress_priority, profile, gemm_tune");
    CHECK_FAILS(cli_backend_option("gemm=1", &k), ZP_ERR_INVALID, "expected NAME=VALUE, NAME one of compress_priority");
    CHECK_FAILS(cli_backend_option("gemm_tune", &k), ZP_ERR_INVALID, "expected NAME=VALUE");
}

/* The engine settings' schema (engine/settings.h) behind the defaults and the command line:
 * every row's default is zp_engine_config_default's; every row is a flag that sets its field
 * (a switch flips a boolean), refuses a value outside its range naming the flag, and is listed
 * in the usage. */
static void test_engine_schema(void) {
    const zp_engine_config d = zp_engine_config_default();
    char flag[64], *usage = NULL;
    size_t n_usage = 0;
    FILE *u = open_memstream(&usage, &n_usage);
    cli_engine_usage(u);
    fclose(u);
    CHECK(zp_engine_n_settings >= 14);
    for (int i = 0; i < zp_engine_n_settings; i++) {
        const zp_setting *s = &zp_engine_settings[i];
        const void *f = (const char *)&d + s->offset;
        zp_setting_flag(s, flag, sizeof flag);
        CHECK(strstr(usage, flag) != NULL);
        zp_engine_config c = zp_engine_config_default();
        void *g = (char *)&c + s->offset;
        int matched = 0;
        switch (s->type) {
        case ZP_SET_STR:
            CHECK(s->def_str ? !strcmp(*(const char *const *)f, s->def_str) : *(const char *const *)f == NULL);
            CHECK_OK(cli_engine_flag(flag, "xyz", &c, &matched));
            CHECK(matched && !strcmp(*(const char *const *)g, "xyz"));
            break;
        case ZP_SET_BOOL:
            CHECK(*(const int *)f == (int)s->def && cli_engine_switch(flag));
            CHECK_OK(cli_engine_flag(flag, NULL, &c, &matched));
            CHECK(matched && *(const int *)g == !(int)s->def);
            break;
        default: {
            const double want = s->hi > s->lo + 1 ? s->lo + 1 : s->hi;
            char v[64], high[64];
            snprintf(v, sizeof v, "%.17g", want);
            snprintf(high, sizeof high, "%.17g", s->hi * 2 + 1);
            CHECK(s->type == ZP_SET_FLOAT ? *(const float *)f == (float)s->def
                  : s->type == ZP_SET_I64 ? *(const int64_t *)f == (int64_t)s->def : *(const int *)f == (int)s->def);
            CHECK_OK(cli_engine_flag(flag, v, &c, &matched));
            CHECK(matched && (s->type == ZP_SET_FLOAT ? *(const float *)g == (float)want
                              : s->type == ZP_SET_I64 ? *(const int64_t *)g == (int64_t)want : *(const int *)g == (int)want));
            CHECK_FAILS(cli_engine_flag(flag, high, &c, &matched), ZP_ERR_INVALID, flag);
            if (s->type != ZP_SET_FLOAT) CHECK_FAILS(cli_engine_flag(flag, "2.5", &c, &matched), ZP_ERR_INVALID, "whole number");
        }
        }
    }
    free(usage);
    int matched = 1;
    zp_engine_config c = zp_engine_config_default();
    CHECK_OK(cli_engine_flag("--no-such-flag", "1", &c, &matched));
    CHECK(!matched);
}

static const char *MOE =
    "{\"architectures\":[\"Qwen3MoeForCausalLM\"],\"hidden_size\":64,\"num_hidden_layers\":4,"
    "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":128,\"vocab_size\":100%s}";

/* A config of template tpl (one %s: more keys) parsed as `src`. */
static zp_status parse_template(const char *tpl, const char *extra, const char *src, zp_model_config *c) {
    char buf[1024];
    snprintf(buf, sizeof buf, tpl, extra);
    return zp_config_parse(buf, src, c);
}

static zp_status parse_moe(const char *extra, zp_model_config *c) { return parse_template(MOE, extra, "moe.json", c); }

/* Qwen3MoeConfig's keys and class defaults (docs/moe-port.md §1.1-1.2), the sparse-layer rule, and
 * each refusal by name: the keys on a dense architecture, the alias disagreeing, a top-k beyond
 * the experts, a layer index out of range, shared experts (a key Qwen3-MoE does not have). */
static void test_moe(void) {
    zp_model_config c;
    CHECK_OK(parse_moe("", &c));
    CHECK(c.arch == ZP_ARCH_QWEN3_MOE && c.n_experts == 128 && c.n_experts_used == 8 && c.moe_intermediate == 768 && !c.norm_topk);
    CHECK(c.qk_norm && c.head_dim == 16 && c.n_kv_heads == 2);
    for (int l = 0; l < 4; l++) CHECK(zp_config_layer_is_moe(&c, l));
    CHECK_OK(parse_moe(",\"num_local_experts\":6,\"num_experts_per_tok\":2,\"norm_topk_prob\":true,\"decoder_sparse_step\":2,"
                       "\"mlp_only_layers\":[3],\"moe_intermediate_size\":32,\"output_router_logits\":false,\"router_aux_loss_coef\":0.001",
                       &c));
    CHECK(c.n_experts == 6 && c.n_experts_used == 2 && c.norm_topk && c.moe_intermediate == 32);
    CHECK(!zp_config_layer_is_moe(&c, 0) && zp_config_layer_is_moe(&c, 1) && !zp_config_layer_is_moe(&c, 2) && !zp_config_layer_is_moe(&c, 3));
    CHECK_FAILS(parse_with(",\"num_experts\":8"), ZP_ERR_UNSUPPORTED, "\"num_experts\" on LlamaForCausalLM, a dense architecture");
    CHECK_FAILS(parse_moe(",\"num_experts\":8,\"num_local_experts\":6", &c), ZP_ERR_FORMAT, "\"num_experts\" 8 and \"num_local_experts\" 6 disagree");
    CHECK_FAILS(parse_moe(",\"num_experts\":4,\"num_experts_per_tok\":5", &c), ZP_ERR_FORMAT, "\"num_experts_per_tok\" 5 must be in [1, num_experts 4]");
    CHECK_FAILS(parse_moe(",\"mlp_only_layers\":[4]", &c), ZP_ERR_FORMAT, "\"mlp_only_layers\" has an entry that is not a layer index in [0, 4)");
    CHECK_FAILS(parse_moe(",\"decoder_sparse_step\":0", &c), ZP_ERR_FORMAT, "decoder_sparse_step");
    CHECK_FAILS(parse_moe(",\"shared_expert_intermediate_size\":256", &c), ZP_ERR_UNSUPPORTED, "unknown key \"shared_expert_intermediate_size\"");
    CHECK_FAILS(parse_moe(",\"use_sliding_window\":true", &c), ZP_ERR_UNSUPPORTED, "use_sliding_window");
}

static const char *GPT_OSS =
    "{\"architectures\":[\"GptOssForCausalLM\"],\"hidden_size\":64,\"num_hidden_layers\":4,"
    "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":32,\"vocab_size\":100%s}";

static zp_status parse_gpt_oss(const char *extra, zp_model_config *c) { return parse_template(GPT_OSS, extra, "gpt-oss.json", c); }

/* GptOssConfig's keys and class defaults (docs/moe-port.md §2.1, transformers 5.25's
 * configuration_gpt_oss.py): the published gpt-oss-20b figures, the defaults of a bare config
 * (alternating layer types, window 128, yarn at theta 150000, biases, 128 experts top 4, the
 * SwiGLU clamp), and each refusal by name: an unknown layer type, another quantisation, an
 * unknown MXFP4 key, Qwen3-MoE's keys on gpt-oss, gpt-oss's keys and sliding layers elsewhere. */
static void test_gpt_oss(void) {
    zp_model_config c;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/gpt-oss-20b", ZIPAGE_SOURCE_DIR "/models");
    CHECK_OK(zp_config_load(dir, &c));
    CHECK(c.n_experts == 32 && c.n_experts_used == 4 && c.moe_intermediate == 2880 && c.gpt_oss_moe && c.experts_mxfp4);
    CHECK(c.attn_sinks && c.o_bias && c.qkv_bias && !c.qk_norm && c.sliding_window == 128 && c.vocab == 201088);
    CHECK(zp_config_layer_window(&c, 0) == 128 && zp_config_layer_window(&c, 1) == 0 && zp_config_layer_window(&c, 22) == 128 &&
          zp_config_layer_window(&c, 23) == 0);
    CHECK(c.rope.theta == 150000.0 && c.rope.orig_max_pos == 4096 && !c.rope.truncate && c.rope.factor == 32.0);
    for (int l = 0; l < 24; l++) CHECK(zp_config_layer_is_moe(&c, l));
    CHECK_OK(parse_gpt_oss("", &c)); /* the class defaults */
    CHECK(c.n_experts == 128 && c.n_experts_used == 4 && c.sliding_window == 128 && c.o_bias && !c.experts_mxfp4 && c.head_dim == 64);
    CHECK(zp_config_layer_window(&c, 0) == 128 && !zp_config_layer_window(&c, 1) && zp_config_layer_window(&c, 2) == 128);
    CHECK(c.rope.type == ZP_ROPE_YARN && c.rope.theta == 150000.0 && c.rope.factor == 32.0 && c.rope.orig_max_pos == 4096 && !c.rope.truncate);
    CHECK_NEAR(c.swiglu_alpha, 1.702, 1e-6);
    CHECK_NEAR(c.swiglu_limit, 7.0, 0);
    CHECK_NEAR(c.rms_eps, 1e-5, 1e-12);
    CHECK(c.n_kv_heads == 2);
    CHECK_OK(parse_gpt_oss(",\"attention_bias\":false,\"num_experts\":6,\"sliding_window\":8,\"swiglu_limit\":0.5,"
                           "\"layer_types\":[\"full_attention\",\"full_attention\",\"sliding_attention\",\"full_attention\"]", &c));
    CHECK(!c.o_bias && !c.qkv_bias && c.n_experts == 6 && !zp_config_layer_window(&c, 0) && zp_config_layer_window(&c, 2) == 8);
    CHECK_NEAR(c.swiglu_limit, 0.5, 0);
    CHECK_OK(parse_gpt_oss(",\"quantization_config\":{\"quant_method\":\"mxfp4\",\"dequantize\":true,\"modules_to_not_convert\":[]}", &c));
    CHECK(c.experts_mxfp4);
    CHECK_FAILS(parse_gpt_oss(",\"layer_types\":[\"full_attention\",\"chunked_attention\",\"full_attention\",\"full_attention\"]", &c),
                ZP_ERR_UNSUPPORTED, "\"layer_types\" entry 1 is \"chunked_attention\"");
    CHECK_FAILS(parse_gpt_oss(",\"layer_types\":[\"full_attention\"]", &c), ZP_ERR_FORMAT, "\"layer_types\" must list 4 layers");
    CHECK_FAILS(parse_gpt_oss(",\"quantization_config\":{\"quant_method\":\"fp8\"}", &c), ZP_ERR_UNSUPPORTED, "quant_method \"fp8\" is not supported");
    CHECK_FAILS(parse_gpt_oss(",\"quantization_config\":{\"quant_method\":\"mxfp4\",\"group_size\":64}", &c), ZP_ERR_UNSUPPORTED,
                "\"quantization_config\" key \"group_size\"");
    CHECK_FAILS(parse_gpt_oss(",\"moe_intermediate_size\":16", &c), ZP_ERR_UNSUPPORTED, "\"moe_intermediate_size\" on GptOssForCausalLM");
    CHECK_FAILS(parse_gpt_oss(",\"sliding_window\":null", &c), ZP_ERR_FORMAT, "\"sliding_window\" must be at least 1");
    CHECK_FAILS(parse_gpt_oss(",\"swiglu_limit\":0", &c), ZP_ERR_FORMAT, "\"swiglu_limit\" must be above 0");
    CHECK_FAILS(parse_gpt_oss(",\"num_experts_per_tok\":200", &c), ZP_ERR_FORMAT, "\"num_experts_per_tok\" 200 must be in [1, num_local_experts 128]");
    CHECK_FAILS(parse_moe(",\"swiglu_limit\":7.0", &c), ZP_ERR_UNSUPPORTED, "\"swiglu_limit\" on Qwen3MoeForCausalLM (a GptOssForCausalLM key)");
    CHECK_FAILS(parse_moe(",\"layer_types\":[\"sliding_attention\",\"full_attention\",\"full_attention\",\"full_attention\"]", &c),
                ZP_ERR_UNSUPPORTED, "only full_attention is supported");
}

int main(void) {
    test_presets();
    test_moe();
    test_gpt_oss();
    test_malformed();
    test_refusals();
    test_backend_options();
    test_engine_schema();
    return zp_test_finish("test_config");
}
