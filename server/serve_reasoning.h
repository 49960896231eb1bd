/* serve_reasoning.h - `--reasoning-parser`: a chat answer's text split into its reasoning (the
 * thinking block, returned as `reasoning_content`) and its content, whole or while it streams.
 *
 * deepseek_r1: R1's template opens the thinking block in the prompt, so the output is reasoning
 *   up to the first </think> (a leading <think> dropped), then content; an answer cut before
 *   </think> is all reasoning. As vLLM's deepseek_r1 parser.
 * qwen3: Qwen3 opens the block itself; an output that begins with <think> splits as above, any
 *   other (thinking off: the template put the empty block in the prompt) is all content.
 * The text after </think> is content as it is (its newlines kept). Deliberately not here: tool
 * calls, and the JSON (serve.c). */
#ifndef ZP_SERVE_REASONING_H
#define ZP_SERVE_REASONING_H

#include <stddef.h>

typedef enum { SRV_REASONING_NONE, SRV_REASONING_R1, SRV_REASONING_QWEN3 } srv_reasoning_parser;

/* "deepseek_r1" / "qwen3" (1), anything else (0). */
int srv_reasoning_parse_name(const char *name, srv_reasoning_parser *out);

typedef struct {
    size_t r0, r1;  /* reasoning: text[r0, r1) */
    size_t c0, c1;  /* content: text[c0, c1) */
    int has_reasoning; /* 0: no thinking block (reasoning_content is null) */
} srv_reasoning_split;

/* Splits text[0, n). final = 0 (still streaming): what a later byte could change waits (a
 * beginning of <think> or of </think> at the end), so the spans only grow as the text grows. */
srv_reasoning_split srv_reasoning_split_text(srv_reasoning_parser p, const char *text, size_t n, int final);

#endif
