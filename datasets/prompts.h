/* prompts.h - the user-turn text of a benchmark item (before the chat template). Math items:
 * the problem as given (the paper puts its instruction in the system prompt). LiveCodeBench:
 * its generic question template (### Question / ### Format with the starter code or the stdin
 * instructions / ### Answer), with LCB_SYSTEM_PROMPT as the system message. No engine headers. */
#ifndef ZP_PROMPTS_H
#define ZP_PROMPTS_H

#include "dataset.h"

#define LCB_SYSTEM_PROMPT                                                                                               \
    "You are an expert Python programmer. You will be given a question (problem specification) and will generate a " \
    "correct Python program that matches the specification and passes all tests."

/* malloc'ed user text for the item. */
char *ds_user_prompt(const ds_dataset *d, const ds_item *it);

#endif
