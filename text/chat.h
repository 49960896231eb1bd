/* chat.h - chat templates of the model families we run, written in C (no Jinja engine).
 *
 * Renders [system (optional), user] with the generation prompt, exactly as the family's
 * Hugging Face template does with add_generation_prompt=True: Qwen3 (thinking on by default;
 * enable_thinking=false appends the empty think block), DeepSeek-R1-Distill (BOS, system text
 * bare, <｜User｜>, <｜Assistant｜><think>\n), Llama-3 headers, SmolLM2 ChatML with its default
 * system line. The family is detected from the checkpoint's tokenizer_config.json chat
 * template, chat_template.jinja, or config.json. Conversations (system, user and assistant
 * messages, several turns) render as the family's template renders them, assistant reasoning
 * dropped or kept by its rules; tool calls and tool messages are not rendered.
 */
#ifndef ZP_CHAT_H
#define ZP_CHAT_H

#include "status.h"

typedef enum { ZP_CHAT_QWEN3, ZP_CHAT_R1, ZP_CHAT_LLAMA3, ZP_CHAT_SMOLLM2, ZP_CHAT_COUNT } zp_chat_family;

/* The system prompt of the paper's math runs. */
#define ZP_MATH_SYSTEM_PROMPT "Please reason step by step, and put your final answer within \\boxed{}."

typedef struct {
    zp_chat_family family;
    int enable_thinking; /* Qwen3 only; default 1 */
    const char *system;  /* NULL: none (SmolLM2 then uses its default system line) */
} zp_chat_opts;

zp_status zp_chat_detect(const char *model_dir, zp_chat_family *out);
int zp_chat_family_parse(const char *name, zp_chat_family *out);
const char *zp_chat_family_name(zp_chat_family f);
/* Renders one user turn (+ optional system) with the generation prompt; *out is malloc'ed. */
zp_status zp_chat_render(const zp_chat_opts *o, const char *user, char **out);

typedef enum { ZP_CHAT_SYSTEM, ZP_CHAT_USER, ZP_CHAT_ASSISTANT, ZP_CHAT_ROLE_COUNT } zp_chat_role;
typedef struct {
    zp_chat_role role;
    const char *content;
} zp_chat_msg;
/* Renders a conversation with the generation prompt, as the family's Hugging Face template does
 * with add_generation_prompt=True (o->system is not used: a system message is one of m);
 * *out is malloc'ed. */
zp_status zp_chat_render_messages(const zp_chat_opts *o, const zp_chat_msg *m, int n, char **out);
/* The rendered turn through tokenizer t (special tokens parsed): *ids malloc'ed, *n ids. */
typedef struct zp_tokenizer zp_tokenizer;
zp_status zp_chat_encode(zp_tokenizer *t, const zp_chat_opts *o, const char *user, int **ids, int *n);

#endif
