/* item_prompt.c - the one prompt builder (item_prompt.h). */
#include "item_prompt.h"

#include <stdlib.h>
#include <string.h>

#include "prompts.h"   /* ds_user_prompt, LCB_SYSTEM_PROMPT */
#include "tokenizer.h" /* zp_tokenizer_encode */

const char *item_system(const ds_dataset *d, int math_system) {
    return d->is_code ? LCB_SYSTEM_PROMPT : math_system ? ZP_MATH_SYSTEM_PROMPT : NULL;
}

zp_status item_prompt(zp_tokenizer *t, zp_chat_opts co, const ds_dataset *d, const ds_item *it, int math_system, char **text,
                      int **ids, int *n) {
    co.system = item_system(d, math_system);
    char *user = ds_user_prompt(d, it), *prompt = NULL;
    if (!user) return zp_fail(ZP_ERR_OOM, "prompt of %s: no memory", it->id);
    zp_status s = zp_chat_render(&co, user, &prompt);
    free(user);
    if (s == ZP_OK && ids) s = zp_tokenizer_encode(t, prompt, strlen(prompt), 1, ids, n);
    if (s == ZP_OK && text) *text = prompt;
    else free(prompt);
    return s;
}
