/* cmd_prompts.c - `zipage prompts --model DIR --dataset NAME|FILE.jsonl [--system TEXT|--math-system]
 * [--no-thinking] [--raw] [--chat FAMILY] [--limit N] [--ids A,B] [--out F.jsonl]`: LiveCodeBench items get its question
 * template and system message unless --raw (the system message and template as the runner builds
 * them, experiments/item_prompt.c, unless --raw or --system);
 * renders every item of a dataset through the model's chat template and tokenizes it; writes
 * one JSON line per item ({"id", "prompt", "ids"}). For inspecting prompts and for the
 * tokenizer/template comparison with Hugging Face (tests/device/hf_tokenizer_compare.py). */
#include <cjson/cJSON.h> /* dataset lines, output lines */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "cli_common.h"
#include "dataset.h" /* ds_open, ds_select */
#include "item_prompt.h" /* item_prompt: the runner's prompts */
#include "prompts.h"     /* ds_user_prompt (--raw, --system) */
#include "tokenizer.h"
#include "paths.h"

typedef struct {
    const char *model, *dataset, *ids, *out, *chat;
    zp_chat_opts co;
    int limit, raw, math_system;
} prompts_args;

static zp_status parse(int argc, char **argv, prompts_args *a) {
    memset(a, 0, sizeof *a);
    a->co.enable_thinking = 1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        if (!strcmp(f, "--math-system")) { a->math_system = 1; continue; }
        if (!strcmp(f, "--no-thinking")) { a->co.enable_thinking = 0; continue; }
        if (!strcmp(f, "--raw")) { a->raw = 1; continue; } /* the item text as is, no benchmark template */
        if (!(v = cli_value(argc, argv, &i))) return ZP_ERR_INVALID;
        if (!strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "--dataset")) a->dataset = v;
        else if (!strcmp(f, "--ids")) a->ids = v;
        else if (!strcmp(f, "--out")) a->out = v;
        else if (!strcmp(f, "--system")) a->co.system = v;
        else if (!strcmp(f, "--chat")) a->chat = v;
        else if (!strcmp(f, "--limit")) ZP_TRY(cli_int(f, v, 1, 1 << 30, &a->limit));
        else return zp_fail(ZP_ERR_INVALID, "unknown flag %s", f);
    }
    if (!a->model || !a->dataset) return zp_fail(ZP_ERR_INVALID, "--model DIR and --dataset NAME|FILE.jsonl are required");
    if (a->chat && !zp_chat_family_parse(a->chat, &a->co.family))
        return zp_fail(ZP_ERR_INVALID, "--chat: unknown family \"%s\" (qwen3, r1, llama3, smollm2)", a->chat);
    if (!a->chat) ZP_TRY(zp_chat_detect(a->model, &a->co.family));
    return ZP_OK;
}

/* One dataset item -> one output line. */
static zp_status render_item(zp_tokenizer *t, const prompts_args *a, const ds_dataset *d, const ds_item *it, FILE *out) {
    char *prompt = NULL;
    int *ids = NULL, n = 0;
    zp_status s;
    if (a->raw || a->co.system) { /* the item text or a system message as given, not the runner's protocol */
        char *user = a->raw ? strdup(it->problem) : ds_user_prompt(d, it);
        ZP_CHECK_ALLOC(user);
        zp_chat_opts co = a->co;
        if (!co.system && a->math_system) co.system = ZP_MATH_SYSTEM_PROMPT;
        s = zp_chat_render(&co, user, &prompt);
        free(user);
        if (s == ZP_OK) s = zp_tokenizer_encode(t, prompt, strlen(prompt), 1, &ids, &n);
    } else {
        s = item_prompt(t, a->co, d, it, a->math_system, &prompt, &ids, &n); /* as the runner builds it */
    }
    if (s == ZP_OK) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", it->id);
        cJSON_AddStringToObject(o, "prompt", prompt);
        cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(ids, n));
        char *js = cJSON_PrintUnformatted(o);
        fprintf(out, "%s\n", js);
        free(js);
        cJSON_Delete(o);
        free(ids);
    }
    free(prompt);
    return s;
}

int cmd_prompts(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "--help")) {
        printf("usage: zipage prompts --model DIR --dataset NAME|FILE.jsonl [--system TEXT|--math-system] [--no-thinking] [--raw]\n"
               "                      [--chat qwen3|r1|llama3|smollm2] [--limit N] [--ids A,B] [--out F.jsonl]\n");
        return 0;
    }
    prompts_args a;
    zp_status s = parse(argc, argv, &a);
    if (s != ZP_OK) return cli_report("prompts", s);
    zp_tokenizer *t;
    if ((s = zp_tokenizer_load(a.model, &t)) != ZP_OK) return cli_report("prompts", s);
    ds_dataset d;
    char err[ZP_DS_ERR];
    int *idx = NULL, n = 0;
    if (ds_open(a.dataset, zp_path(ZP_PATH_DATASETS), &d, err) || ds_select(&d, a.ids, a.limit, d.is_code, &idx, &n, err)) {
        zp_tokenizer_free(t);
        return cli_report("prompts", zp_fail(ZP_ERR_FORMAT, "%s", err));
    }
    FILE *out = a.out ? fopen(a.out, "w") : stdout;
    if (!out) s = zp_fail(ZP_ERR_IO, "%s: cannot create", a.out);
    int done = 0;
    for (int i = 0; s == ZP_OK && i < n; i++, done++) s = render_item(t, &a, &d, &d.items[idx[i]], out);
    if (out && out != stdout) fclose(out);
    free(idx);
    ds_free(&d);
    zp_tokenizer_free(t);
    if (s == ZP_OK) fprintf(stderr, "prompts: %d items, chat %s\n", done, zp_chat_family_name(a.co.family));
    return s == ZP_OK ? 0 : cli_report("prompts", s);
}
