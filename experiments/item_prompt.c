/* item_prompt.c - the one prompt builder (item_prompt.h). */
#include "item_prompt.h"

#include <stdlib.h>
#include <string.h>

#include "passkey.h"   /* the passkey prompt's parts */
#include "prompts.h"   /* ds_user_prompt, LCB_SYSTEM_PROMPT */
#include "tokenizer.h" /* zp_tokenizer_encode */

const char *item_system(const ds_dataset *d, int math_system) {
    return d->is_code ? LCB_SYSTEM_PROMPT : math_system ? ZP_MATH_SYSTEM_PROMPT : NULL;
}

/* Appends the ids of text to ids at *n (ids holds cap). */
static zp_status append_text(zp_tokenizer *t, const char *text, int *ids, int *n, int cap) {
    int *part, m;
    ZP_TRY(zp_tokenizer_encode(t, text, strlen(text), 0, &part, &m));
    if (*n + m <= cap) memcpy(ids + *n, part, sizeof *ids * (size_t)m);
    *n += m;
    free(part);
    return ZP_OK;
}

/* A passkey prompt of exactly d->context_tokens ids, no chat template and no BOS: the intro, the
 * haystack cut at the item's depth, the needle, the rest of the haystack, the question. The
 * haystack is one stream of filler ids cut where the length says (mid-sentence, as RULER's). */
static zp_status passkey_prompt(zp_tokenizer *t, const ds_dataset *d, const ds_item *it, int **out, int *n_out) {
    const int len = d->context_tokens;
    const int cap = len + 4096;
    int *fill = NULL, n_fill = 0, n_intro = 0, n_needle = 0, n_question = 0, one = 0, none[1];
    ZP_TRY(append_text(t, PASSKEY_FILLER, none, &one, 0)); /* counts only */
    int *ids = malloc(sizeof *ids * (size_t)cap);
    ZP_CHECK_ALLOC(ids);
    const int reps = len / (one > 0 ? one : 1) + 2; /* enough filler for the whole length */
    char *text = malloc(strlen(PASSKEY_FILLER) * (size_t)reps + 1);
    if (!text) { free(ids); return zp_fail(ZP_ERR_OOM, "%s: no memory for the haystack", d->name); }
    const size_t one_len = strlen(PASSKEY_FILLER);
    for (int r = 0; r < reps; r++) memcpy(text + one_len * (size_t)r, PASSKEY_FILLER, one_len);
    text[one_len * (size_t)reps] = 0;
    zp_status s = zp_tokenizer_encode(t, text, strlen(text), 0, &fill, &n_fill);
    free(text);
    if (s == ZP_OK) s = append_text(t, PASSKEY_INTRO, ids, &n_intro, cap);
    if (s == ZP_OK) s = append_text(t, it->problem, none, &n_needle, 0);
    if (s == ZP_OK) s = append_text(t, PASSKEY_QUESTION, none, &n_question, 0);
    const int hay = len - n_intro - n_needle - n_question;
    if (s == ZP_OK && hay < 0)
        s = zp_fail(ZP_ERR_INVALID, "%s: %d tokens leave no room for a haystack (the intro, pass key and question take %d)", d->name, len,
                    len - hay);
    if (s == ZP_OK && hay > n_fill) s = zp_fail(ZP_ERR_INVALID, "%s: the filler made %d tokens, %d needed", d->name, n_fill, hay);
    if (s == ZP_OK) {
        const int before = (int)(it->depth * hay + 0.5);
        int n = n_intro;
        memcpy(ids + n, fill, sizeof *ids * (size_t)before), n += before;
        s = append_text(t, it->problem, ids, &n, cap);
        memcpy(ids + n, fill + before, sizeof *ids * (size_t)(hay - before)), n += hay - before;
        if (s == ZP_OK) s = append_text(t, PASSKEY_QUESTION, ids, &n, cap);
        if (s == ZP_OK && n != len) s = zp_fail(ZP_ERR_BACKEND, "%s: prompt of %d tokens, not %d", d->name, n, len);
    }
    free(fill);
    if (s != ZP_OK) { free(ids); return s; }
    *out = ids;
    *n_out = len;
    return ZP_OK;
}

zp_status item_prompt(zp_tokenizer *t, zp_chat_opts co, const ds_dataset *d, const ds_item *it, int math_system, char **text,
                      int **ids, int *n) {
    if (d->context_tokens > 0) { /* passkey: the exact-length prompt, raw */
        int *v = NULL, m = 0;
        ZP_TRY(passkey_prompt(t, d, it, &v, &m));
        zp_status s = ZP_OK;
        size_t len;
        if (text) s = zp_tokenizer_decode(t, v, m, text, &len);
        if (s == ZP_OK && ids) { *ids = v; *n = m; }
        else free(v);
        return s;
    }
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
