/* passkey.h - a synthetic long-context retrieval task in the style of RULER's passkey /
 * needle-in-a-haystack (Hsieh et al. 2024, "RULER"; Mohtashami & Jaggi 2023): a 5-digit pass
 * key hidden at a depth of a repetitive haystack, asked for at the end. The harness generates
 * it: dataset "passkey" (prompts of 512 tokens) or "passkey-N" (N tokens, 64..1048576), 64
 * items, item i with a key from a fixed hash of i and the needle at depth vdc(i) (van der
 * Corput base 2: 0, 1/2, 1/4, 3/4, ... so that any first k items spread over the context).
 * This file makes the items and grades answers; the prompt, cut to exactly N tokens of the
 * model's tokenizer, is made where the tokenizer is (experiments/item_prompt.c) from the texts
 * below. Its wording is ours, not RULER's. Graded as RULER's string_match_all: correct when the
 * key appears in the output. No engine headers.
 */
#ifndef ZP_PASSKEY_H
#define ZP_PASSKEY_H

#include "dataset.h"

#define PASSKEY_ITEMS 64
#define PASSKEY_DEFAULT_TOKENS 512

/* The prompt's parts, in order: intro, haystack up to the depth, needle, haystack, question. */
#define PASSKEY_INTRO "A pass key is hidden somewhere in the long text below. Find it and remember it: you will be asked for it at the end.\n\n"
#define PASSKEY_FILLER "The river bends past the old mill. The fields are quiet in the morning. The road goes on and on. "
#define PASSKEY_NEEDLE_FMT " Note this down: the pass key is %s. "
#define PASSKEY_QUESTION "\n\nQuestion: what is the pass key? Answer: the pass key is"

#define PASSKEY_GRADER "string_match_all" /* the grader column's value: RULER's metric */

/* 1 if name is a passkey dataset ("passkey" or "passkey-N"). */
int passkey_is_name(const char *name);
/* Makes the items of a passkey dataset (d->name "passkey-N", d->context_tokens N); 0, or -1
 * with err naming the name and what is wrong with it. */
int passkey_open(const char *name, ds_dataset *d, char *err);
/* RULER's string_match_all for one reference: correct when answer occurs in output
 * (case-insensitive); *extracted: the output's first run of digits (malloc'ed), or NULL. */
void passkey_grade(const char *output, const char *answer, int *correct, char **extracted);

#endif
