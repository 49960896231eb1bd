/* item_prompt.h - a benchmark item as the model sees it, built in one place for the runner,
 * the fidelity probes (experiments and `zipage fidelity`), the benchmark workloads and
 * `zipage prompts`: the system message of the protocol (LiveCodeBench's for code items; for
 * math items the paper's math instruction when asked, else none), the user turn
 * (ds_user_prompt), the model family's chat template, and the token ids. It samples nothing
 * and reads no files (the caller has opened the tokenizer and the dataset).
 */
#ifndef ZP_ITEM_PROMPT_H
#define ZP_ITEM_PROMPT_H

#include "chat.h"
#include "dataset.h"

/* The system message for items of d: LCB_SYSTEM_PROMPT for code, ZP_MATH_SYSTEM_PROMPT for math
 * when math_system, else NULL. */
const char *item_system(const ds_dataset *d, int math_system);
/* The rendered prompt (*text, malloc'ed; NULL not wanted) and its ids (*ids malloc'ed, *n; ids
 * NULL not wanted) of item it under chat options co (family and thinking; its system is
 * replaced by item_system's). */
zp_status item_prompt(zp_tokenizer *t, zp_chat_opts co, const ds_dataset *d, const ds_item *it, int math_system, char **text,
                      int **ids, int *n);

#endif
