/* test_serve_request.c - the OpenAI request bodies of `zipage serve` (serve_request.c): the
 * forms the official clients send (lm-evaluation-harness' local-completions payload, the openai
 * package's chat call with stream_options) parse to the expected fields and defaults; every
 * refusal is a 400 whose error object names the parameter; the error object's JSON shape; the
 * reasoning parsers (serve_reasoning.c), whole and streamed. */
#include <cjson/cJSON.h>
#include <string.h>

#include "serve_reasoning.h"
#include "serve_request.h"
#include "test_util.h"

static srv_request parse_ok(srv_endpoint ep, const char *body) {
    srv_request r;
    srv_error err;
    zp_status s = srv_request_parse(body, strlen(body), ep, &r, &err);
    if (s != ZP_OK) fprintf(stderr, "refused: %s\n  body: %s\n", err.message, body);
    CHECK(s == ZP_OK);
    return r;
}

/* A refusal: 400, invalid_request_error, the parameter named, the message containing `needle`. */
static void refused(srv_endpoint ep, const char *body, const char *param, const char *needle) {
    srv_request r;
    srv_error err;
    zp_status s = srv_request_parse(body, strlen(body), ep, &r, &err);
    const int ok = s == ZP_ERR_INVALID && err.http_status == 400 && !strcmp(err.type, "invalid_request_error") && !strcmp(err.param, param) &&
                   strstr(err.message, needle) && r.n_prompts == 0 && r.model == NULL;
    if (!ok) fprintf(stderr, "body %s: got status %d param \"%s\" message \"%s\"; wanted param \"%s\" and \"%s\"\n", body, err.http_status,
                     err.param, err.message, param, needle);
    CHECK(ok);
    srv_request_free(&r);
}

static void test_completions(void) {
    /* lm-evaluation-harness local-completions, generate_until */
    srv_request r = parse_ok(SRV_COMPLETIONS, "{\"prompt\": \"Q: 2+2?\\nA:\", \"model\": \"qwen3\", \"max_tokens\": 256, \"temperature\": 0, "
                                              "\"stop\": [\"\\n\\n\", \"Q:\"], \"seed\": 1234}");
    CHECK(r.n_prompts == 1 && r.prompts[0].text && !strcmp(r.prompts[0].text, "Q: 2+2?\nA:") && !r.prompts[0].ids);
    CHECK(!strcmp(r.model, "qwen3") && r.max_tokens == 256 && r.temperature == 0.0f && r.has_seed && r.seed == 1234);
    CHECK(r.n_stop == 2 && !strcmp(r.stop[0], "\n\n") && !strcmp(r.stop[1], "Q:"));
    CHECK(r.n == 1 && r.top_p == 1.0f && r.top_k == -1 && !r.stream && !r.logprobs && !r.ignore_eos);
    srv_request_free(&r);
    /* defaults */
    r = parse_ok(SRV_COMPLETIONS, "{\"model\": \"m\", \"prompt\": \"x\"}");
    CHECK(r.max_tokens == -1 && r.temperature == 1.0f && r.top_p == 1.0f && r.top_k == -1 && r.n == 1 && !r.has_seed && r.n_stop == 0);
    srv_request_free(&r);
    /* token ids; a list of texts; a list of id lists; sampling fields; a single stop string */
    r = parse_ok(SRV_COMPLETIONS, "{\"model\": \"m\", \"prompt\": [1, 2, 151643], \"top_k\": 20, \"top_p\": 0.95, \"n\": 2, \"stop\": \"END\", "
                                  "\"ignore_eos\": true, \"logprobs\": 0, \"stream\": true, \"stream_options\": {\"include_usage\": true}}");
    CHECK(r.n_prompts == 1 && r.prompts[0].n_ids == 3 && r.prompts[0].ids[2] == 151643 && !r.prompts[0].text);
    CHECK(r.top_k == 20 && r.top_p == 0.95f && r.n == 2 && r.n_stop == 1 && !strcmp(r.stop[0], "END"));
    CHECK(r.ignore_eos && r.logprobs && r.stream && r.include_usage);
    srv_request_free(&r);
    r = parse_ok(SRV_COMPLETIONS, "{\"model\": \"m\", \"prompt\": [\"a\", \"b\", \"c\"], \"top_k\": 0}");
    CHECK(r.n_prompts == 3 && !strcmp(r.prompts[2].text, "c") && r.top_k == -1);
    srv_request_free(&r);
    r = parse_ok(SRV_COMPLETIONS, "{\"model\": \"m\", \"prompt\": [[5, 6], [7]], \"echo\": false, \"user\": \"u1\", \"logit_bias\": {}, "
                                  "\"frequency_penalty\": 0, \"best_of\": 1, \"suffix\": null, \"seed\": null, \"max_tokens\": null}");
    CHECK(r.n_prompts == 2 && r.prompts[0].n_ids == 2 && r.prompts[1].n_ids == 1 && r.prompts[1].ids[0] == 7 && !r.has_seed && r.max_tokens == -1);
    srv_request_free(&r);
}

static void test_chat(void) {
    /* the openai package's chat call with streaming usage; Qwen3's thinking switch (vLLM's field) */
    srv_request r = parse_ok(SRV_CHAT, "{\"model\": \"qwen3\", \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
                                       "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Hi \"}, {\"type\": \"text\", \"text\": \"there\"}]}], "
                                       "\"max_completion_tokens\": 64, \"stream\": true, \"stream_options\": {\"include_usage\": true}, "
                                       "\"logprobs\": true, \"top_logprobs\": 0, \"chat_template_kwargs\": {\"enable_thinking\": false}}");
    CHECK(r.n_messages == 2 && !strcmp(r.messages[0].role, "system") && !strcmp(r.messages[1].content, "Hi there"));
    CHECK(r.max_tokens == 64 && r.stream && r.include_usage && r.logprobs && r.enable_thinking == 0);
    srv_request_free(&r);
    r = parse_ok(SRV_CHAT, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\", \"name\": \"bob\"}], \"max_tokens\": 8}");
    CHECK(r.n_messages == 1 && r.max_tokens == 8 && r.enable_thinking == -1);
    srv_request_free(&r);
}

static void test_refusals(void) {
    const srv_endpoint C = SRV_COMPLETIONS, H = SRV_CHAT;
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\"", "", "not valid JSON");
    refused(C, "[1, 2]", "", "must be a JSON object");
    refused(C, "{\"model\": \"m\"}", "prompt", "is required");
    refused(C, "{\"prompt\": \"x\"}", "model", "is required");
    refused(H, "{\"model\": \"m\", \"prompt\": \"x\"}", "prompt", "unrecognized request argument");
    refused(C, "{\"model\": \"m\", \"messages\": []}", "messages", "unrecognized request argument");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"frobnicate\": 1}", "frobnicate", "unrecognized request argument");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"max_tokens\": \"16\"}", "max_tokens", "expected an integer, got a string");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"max_tokens\": 0}", "max_tokens", "out of range");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"max_tokens\": 1.5}", "max_tokens", "got a fraction");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"temperature\": -0.1}", "temperature", "out of range");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"temperature\": true}", "temperature", "expected a number, got a boolean");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"top_p\": 0}", "top_p", "greater than 0");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"top_p\": 1.5}", "top_p", "out of range");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"top_k\": -2}", "top_k", "out of range");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"n\": 0}", "n", "out of range");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"n\": 65}", "n", "out of range");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"stop\": [\"a\", 3]}", "stop", "expected a string, got a number");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"stop\": [\"\"]}", "stop", "must not be empty");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"stop\": {\"a\": 1}}", "stop", "expected a string or an array");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"stream\": \"yes\"}", "stream", "expected a boolean");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"stream_options\": {\"include_usage\": true}}", "stream_options", "only allowed with");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"stream\": true, \"stream_options\": {\"chunk\": 1}}", "stream_options", "unsupported field");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"logprobs\": 21}", "logprobs", "logprobs");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"echo\": true}", "echo", "not supported");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"best_of\": 2}", "best_of", "not supported");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"presence_penalty\": 0.5}", "presence_penalty", "not supported");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"logit_bias\": {\"50256\": -100}}", "logit_bias", "not supported");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"seed\": 1, \"seed\": 2}", "seed", "given twice");
    refused(C, "{\"model\": 7, \"prompt\": \"x\"}", "model", "expected a string, got a number");
    refused(C, "{\"model\": \"m\", \"prompt\": []}", "prompt", "must not be empty");
    refused(C, "{\"model\": \"m\", \"prompt\": [1, -2]}", "prompt", "out of range");
    refused(C, "{\"model\": \"m\", \"prompt\": [1, \"a\"]}", "prompt", "expected an integer");
    refused(C, "{\"model\": \"m\", \"prompt\": [[1], []]}", "prompt", "must not be empty");
    refused(C, "{\"model\": \"m\", \"prompt\": [\"a\", {}]}", "prompt", "item 1");
    refused(C, "{\"model\": \"m\", \"prompt\": {\"text\": \"x\"}}", "prompt", "expected a string, an array");
    refused(H, "{\"model\": \"m\", \"messages\": []}", "messages", "between 1 and");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"tool\", \"content\": \"x\"}]}", "messages", "role must be");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\"}]}", "messages", "no content");
    refused(H, "{\"model\": \"m\", \"messages\": [\"hi\"]}", "messages", "expected an object");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}", "messages", "only text parts");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\", \"tool_calls\": []}]}", "messages", "unsupported field");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logprobs\": 1}", "logprobs", "expected a boolean");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"top_logprobs\": 3}", "top_logprobs", "needs \"logprobs\": true");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logprobs\": true, \"top_logprobs\": 21}", "top_logprobs", "top_logprobs");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"chat_template_kwargs\": {\"tools\": 1}}",
            "chat_template_kwargs", "enable_thinking only");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": [{\"type\": \"function\"}]}", "tools", "not supported");
    /* the values a hostile or careless client sends (issue 50): an empty bare stop string, a NUL in
     * any string (cJSON would cut the string there), bytes after the JSON value */
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"stop\": \"\"}", "stop", "must not be empty");
    refused(C, "{\"model\": \"m\", \"prompt\": \"ab\\u0000cd\"}", "prompt", "NUL character");
    refused(C, "{\"model\": \"m\", \"prompt\": [\"ok\", \"a\\u0000\"]}", "prompt", "NUL character");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\", \"stop\": [\"s\\u0000\"]}", "stop", "NUL character");
    refused(C, "{\"model\": \"m\\u0000x\", \"prompt\": \"x\"}", "model", "NUL character");
    refused(H, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\\u0000there\"}]}", "messages", "NUL character");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\"} {\"a\": 1}", "", "bytes after its JSON value");
    refused(C, "{\"model\": \"m\", \"prompt\": \"x\"}garbage", "", "bytes after its JSON value");
    {   /* a raw NUL byte in a string (not valid JSON; cJSON would end the string there) */
        static const char raw[] = "{\"model\": \"m\", \"prompt\": \"a\0b\"}";
        srv_request r;
        srv_error err;
        CHECK(srv_request_parse(raw, sizeof raw - 1, C, &r, &err) == ZP_ERR_INVALID && err.http_status == 400);
        srv_request_free(&r);
    }
    /* what is not a NUL: an escaped backslash before u0000, and trailing white space */
    srv_request ok = parse_ok(C, "{\"model\": \"m\", \"prompt\": \"a\\\\u0000\"} \r\n");
    CHECK(ok.n_prompts == 1 && !strcmp(ok.prompts[0].text, "a\\u0000"));
    srv_request_free(&ok);
    char many[4096] = "{";
    for (int i = 0; i <= SRV_MAX_FIELDS; i++) snprintf(many + strlen(many), sizeof many - strlen(many), "\"f%d\": 1, ", i);
    strcat(many, "\"model\": \"m\"}");
    refused(C, many, "", "at most");
}

/* The error object: {"error": {"message", "type", "param" (null when none), "code": null}}. */
static void test_error_json(void) {
    srv_error err;
    srv_error_set(&err, 400, "invalid_request_error", "top_p", "top_p: %s", "must be greater than 0");
    char *s = srv_error_json(&err);
    cJSON *j = cJSON_Parse(s), *e = cJSON_GetObjectItem(j, "error");
    CHECK(e && !strcmp(cJSON_GetObjectItem(e, "message")->valuestring, "top_p: must be greater than 0"));
    CHECK(!strcmp(cJSON_GetObjectItem(e, "type")->valuestring, "invalid_request_error") && !strcmp(cJSON_GetObjectItem(e, "param")->valuestring, "top_p"));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(e, "code")));
    cJSON_Delete(j);
    free(s);
    /* a message quoting invalid UTF-8 (a client's bytes, or a cut character) is still valid UTF-8 JSON */
    srv_error_set(&err, 400, "invalid_request_error", "mod\xff", "model `%s` (cut: \xe2\x82)", "\xc3\x28ok");
    s = srv_error_json(&err);
    j = cJSON_Parse(s);
    e = cJSON_GetObjectItem(j, "error");
    CHECK(e && !strcmp(cJSON_GetObjectItem(e, "message")->valuestring, "model `?(ok` (cut: ?" "?)") && !strcmp(cJSON_GetObjectItem(e, "param")->valuestring, "mod?"));
    cJSON_Delete(j);
    free(s);
    srv_error_set(&err, 503, "server_error", NULL, "the waiting queue is full");
    s = srv_error_json(&err);
    j = cJSON_Parse(s);
    CHECK(err.http_status == 503 && cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")));
    cJSON_Delete(j);
    free(s);
}

/* One split, whole: the reasoning and the content as strings. */
static void expect_split(srv_reasoning_parser p, const char *text, int has, const char *reasoning, const char *content) {
    const srv_reasoning_split sp = srv_reasoning_split_text(p, text, strlen(text), 1);
    const int ok = sp.has_reasoning == has && sp.r1 - sp.r0 == strlen(reasoning) && !strncmp(text + sp.r0, reasoning, sp.r1 - sp.r0) &&
                   sp.c1 - sp.c0 == strlen(content) && !strncmp(text + sp.c0, content, sp.c1 - sp.c0) && sp.c1 <= strlen(text);
    if (!ok) fprintf(stderr, "split [%s]: has %d, reasoning [%.*s], content [%.*s]\n", text, sp.has_reasoning, (int)(sp.r1 - sp.r0), text + sp.r0,
                     (int)(sp.c1 - sp.c0), text + sp.c0);
    CHECK(ok);
}

/* The parsers' rules, and streaming: at every prefix of a text, what the spans add to what was
 * sent (as serve.c sends it) ends, at the whole text, as the whole split, never taking back. */
static void test_reasoning(void) {
    srv_reasoning_parser p;
    CHECK(srv_reasoning_parse_name("deepseek_r1", &p) && p == SRV_REASONING_R1);
    CHECK(srv_reasoning_parse_name("qwen3", &p) && p == SRV_REASONING_QWEN3);
    CHECK(!srv_reasoning_parse_name("r1", &p));
    expect_split(SRV_REASONING_R1, "abc</think>\n\nans", 1, "abc", "\n\nans");
    expect_split(SRV_REASONING_R1, "<think>\nabc</think>x</think>y", 1, "\nabc", "x</think>y");
    expect_split(SRV_REASONING_R1, "cut short", 1, "cut short", "");
    expect_split(SRV_REASONING_R1, "</think>", 1, "", "");
    expect_split(SRV_REASONING_QWEN3, "<think>\nr\n</think>\n\nA", 1, "\nr\n", "\n\nA");
    expect_split(SRV_REASONING_QWEN3, "plain answer</think>", 0, "", "plain answer</think>");
    expect_split(SRV_REASONING_QWEN3, "<think>unfinished", 1, "unfinished", "");
    expect_split(SRV_REASONING_NONE, "<think>a</think>b", 0, "", "<think>a</think>b");
    const srv_reasoning_split a = srv_reasoning_split_text(SRV_REASONING_R1, "abc</th", 7, 0);
    CHECK(a.r1 == 3 && a.c1 == a.c0); /* a beginning of </think> waits */
    const srv_reasoning_split b = srv_reasoning_split_text(SRV_REASONING_QWEN3, "<thi", 4, 0);
    CHECK(b.c1 == 0 && !b.has_reasoning); /* it may yet open */
    static const char *pieces[] = {"<think>", "</think>", "a", "\n", "<", "</th", "ink>", "<thi", "x y"};
    uint64_t rng = 12345;
    for (int t = 0; t < 400; t++) {
        char text[256] = "";
        for (int k = 0, np = 1 + t % 12; k < np; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            strcat(text, pieces[(rng >> 33) % 9]);
        }
        const size_t n = strlen(text);
        for (int pi = 0; pi < 2; pi++) {
            const srv_reasoning_parser q = pi ? SRV_REASONING_QWEN3 : SRV_REASONING_R1;
            char got_r[256] = "", got_c[256] = "";
            size_t rsent = 0, csent = 0;
            for (size_t k = 0; k <= n; k++) { /* the text as it grows, then whole */
                const srv_reasoning_split sp = srv_reasoning_split_text(q, text, k, k == n);
                const size_t r0 = rsent > sp.r0 ? rsent : sp.r0, c0 = csent > sp.c0 ? csent : sp.c0;
                if (sp.has_reasoning && sp.r1 > r0) strncat(got_r, text + r0, sp.r1 - r0), rsent = sp.r1;
                if (sp.c1 > c0) strncat(got_c, text + c0, sp.c1 - c0), csent = sp.c1;
            }
            const srv_reasoning_split w = srv_reasoning_split_text(q, text, n, 1);
            const int ok = strlen(got_r) == w.r1 - w.r0 && !strncmp(got_r, text + w.r0, w.r1 - w.r0) && strlen(got_c) == w.c1 - w.c0 &&
                           !strncmp(got_c, text + w.c0, w.c1 - w.c0);
            if (!ok) fprintf(stderr, "streamed split of [%s] (%s): [%s] [%s]\n", text, pi ? "qwen3" : "r1", got_r, got_c);
            CHECK(ok);
        }
    }
}

/* The API key: the scheme in any case; the key exactly (no prefix, no extension, no other case). */
static void test_key(void) {
    CHECK(srv_key_matches("Bearer sk-abc", "sk-abc") && srv_key_matches("bearer sk-abc", "sk-abc") && srv_key_matches("BEARER sk-abc", "sk-abc"));
    CHECK(!srv_key_matches(NULL, "sk-abc") && !srv_key_matches("", "sk-abc") && !srv_key_matches("Bearer ", "sk-abc"));
    CHECK(!srv_key_matches("Bearer sk-ab", "sk-abc") && !srv_key_matches("Bearer sk-abcd", "sk-abc") && !srv_key_matches("Bearer SK-abc", "sk-abc"));
    CHECK(!srv_key_matches("Basic sk-abc", "sk-abc") && !srv_key_matches("Bearersk-abc", "sk-abc") && !srv_key_matches("sk-abc", "sk-abc"));
    CHECK(!srv_key_matches("Bearer sk-abd", "sk-abc") && !srv_key_matches("Bearer tk-abc", "sk-abc"));
}

int main(void) {
    test_key();
    test_reasoning();
    test_completions();
    test_chat();
    test_refusals();
    test_error_json();
    return zp_test_finish("test_serve_request");
}
