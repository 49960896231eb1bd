/* test_chat.c - chat templates against golden strings (the same strings the families' Jinja
 * templates render; all dataset prompts were compared with them on the device machine, see
 * tests/device/README.md), golden strings of every family's Jinja template
 * (tests/data/chat/golden_chat.jsonl), and family detection from each preset folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "chat.h"
#include "test_util.h"

static void expect(zp_chat_family f, int thinking, const char *sys, const char *user, const char *want) {
    zp_chat_opts o = {f, thinking, sys};
    char *s = NULL;
    CHECK_OK(zp_chat_render(&o, user, &s));
    if (s && strcmp(s, want)) fprintf(stderr, "family %s:\n got [%s]\nwant [%s]\n", zp_chat_family_name(f), s, want);
    CHECK(s && !strcmp(s, want));
    free(s);
}

/* tests/data/chat/golden_chat.jsonl: each family's published Jinja template rendered with
 * apply_chat_template's settings (tests/device/make_chat_goldens.py) for 17 texts x {math
 * system prompt, none} + 3 whitespace edge cases; 37 cases x 5 (family, thinking) pairs. */
static void test_goldens(void) {
    char path[512], *txt = NULL;
    snprintf(path, sizeof path, "%s/chat/golden_chat.jsonl", ZP_TEST_DATA);
    CHECK_OK(zp_read_file(path, &txt, NULL));
    int cases = 0, ok = 0, per[ZP_CHAT_COUNT] = {0};
    for (char *line = txt ? strtok(txt, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(o, "family"), *sys = cJSON_GetObjectItemCaseSensitive(o, "system");
        const char *user = cJSON_GetObjectItemCaseSensitive(o, "user")->valuestring;
        const char *want = cJSON_GetObjectItemCaseSensitive(o, "text")->valuestring;
        zp_chat_opts opt = {ZP_CHAT_COUNT, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "thinking")),
                            cJSON_IsString(sys) ? sys->valuestring : NULL};
        char *got = NULL;
        CHECK(zp_chat_family_parse(fam->valuestring, &opt.family));
        CHECK_OK(zp_chat_render(&opt, user, &got));
        int same = got && !strcmp(got, want);
        if (!same) fprintf(stderr, "golden %s case %d:\n got [%s]\nwant [%s]\n", fam->valuestring, cases, got, want);
        ok += same;
        per[opt.family]++;
        cases++;
        free(got);
        cJSON_Delete(o);
    }
    printf("chat goldens: %d/%d\n", ok, cases);
    CHECK(cases == 185 && ok == cases);
    for (int f = 0; f < ZP_CHAT_COUNT; f++) CHECK(per[f] >= 37); /* every family is covered */
    free(txt);
}

/* tests/data/chat/golden_conversations.jsonl: the same templates rendering 12 conversations
 * (make_chat_goldens.py --conversations) x 5 (family, thinking) pairs, through
 * zp_chat_render_messages. */
static void test_conversations(void) {
    char path[512], *txt = NULL;
    snprintf(path, sizeof path, "%s/chat/golden_conversations.jsonl", ZP_TEST_DATA);
    CHECK_OK(zp_read_file(path, &txt, NULL));
    int cases = 0, ok = 0;
    for (char *line = txt ? strtok(txt, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(o, "messages");
        const char *want = cJSON_GetObjectItemCaseSensitive(o, "text")->valuestring;
        zp_chat_opts opt = {ZP_CHAT_COUNT, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "thinking")), NULL};
        CHECK(zp_chat_family_parse(cJSON_GetObjectItemCaseSensitive(o, "family")->valuestring, &opt.family));
        zp_chat_msg m[16];
        int n = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, msgs) {
            const char *role = cJSON_GetObjectItemCaseSensitive(x, "role")->valuestring;
            m[n].role = !strcmp(role, "system") ? ZP_CHAT_SYSTEM : !strcmp(role, "user") ? ZP_CHAT_USER : ZP_CHAT_ASSISTANT;
            m[n++].content = cJSON_GetObjectItemCaseSensitive(x, "content")->valuestring;
        }
        char *got = NULL;
        CHECK_OK(zp_chat_render_messages(&opt, m, n, &got));
        int same = got && !strcmp(got, want);
        if (!same) fprintf(stderr, "conversation %d (%s):\n got [%s]\nwant [%s]\n", cases, zp_chat_family_name(opt.family), got, want);
        ok += same;
        cases++;
        free(got);
        cJSON_Delete(o);
    }
    printf("chat conversations: %d/%d\n", ok, cases);
    CHECK(cases == 60 && ok == cases);
    free(txt);
    zp_chat_opts q = {ZP_CHAT_QWEN3, 1, NULL};
    char *out = NULL;
    CHECK(zp_chat_render_messages(&q, NULL, 0, &out) == ZP_ERR_INVALID); /* nothing to render */
    zp_chat_msg bad = {ZP_CHAT_ROLE_COUNT, "x"};
    CHECK(zp_chat_render_messages(&q, &bad, 1, &out) == ZP_ERR_INVALID);
}

int main(void) {
    test_goldens();
    test_conversations();
    expect(ZP_CHAT_QWEN3, 1, ZP_MATH_SYSTEM_PROMPT, "1+1?",
           "<|im_start|>system\nPlease reason step by step, and put your final answer within \\boxed{}.<|im_end|>\n"
           "<|im_start|>user\n1+1?<|im_end|>\n<|im_start|>assistant\n");
    expect(ZP_CHAT_QWEN3, 0, NULL, "1+1?", "<|im_start|>user\n1+1?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    expect(ZP_CHAT_R1, 1, NULL, "1+1?", "<｜begin▁of▁sentence｜><｜User｜>1+1?<｜Assistant｜><think>\n");
    expect(ZP_CHAT_R1, 1, "SYS", "1+1?", "<｜begin▁of▁sentence｜>SYS<｜User｜>1+1?<｜Assistant｜><think>\n");
    expect(ZP_CHAT_LLAMA3, 1, "S", "U",
           "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU"
           "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    expect(ZP_CHAT_SMOLLM2, 1, NULL, "U",
           "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
           "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
    const struct { const char *preset; zp_chat_family f; } det[] = {
        {"Qwen3-8B", ZP_CHAT_QWEN3}, {"Qwen3-0.6B", ZP_CHAT_QWEN3}, {"DeepSeek-R1-Distill-Qwen-1.5B", ZP_CHAT_R1},
        {"DeepSeek-R1-Distill-Llama-8B", ZP_CHAT_R1}, {"SmolLM2-135M-Instruct", ZP_CHAT_SMOLLM2}};
    for (size_t i = 0; i < sizeof det / sizeof *det; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", ZIPAGE_SOURCE_DIR "/models", det[i].preset);
        zp_chat_family f = ZP_CHAT_COUNT;
        CHECK_OK(zp_chat_detect(dir, &f));
        CHECK(f == det[i].f);
    }
    zp_chat_family f;
    CHECK(zp_chat_family_parse("llama3", &f) && f == ZP_CHAT_LLAMA3 && !zp_chat_family_parse("mistral", &f));
    return zp_test_finish("test_chat");
}
