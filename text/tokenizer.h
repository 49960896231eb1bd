/* tokenizer.h - byte-level BPE tokenizer, the engine's text boundary.
 *
 * Loads the three forms our models ship: Hugging Face tokenizer.json (BPE model, merges,
 * added tokens, pre-tokenizer sequence: Split regex / ByteLevel / Digits, NFC normalizer),
 * the vocab.json + merges.txt pair with added tokens from tokenizer_config.json (Qwen3,
 * DeepSeek-R1-Distill-Qwen), and the tiktoken-style tokenizer.model of Llama-3 (base64 token
 * and rank per line; R1-Distill-Llama) with special tokens from tokenizer_config.json.
 * Added/special tokens are matched before BPE; pieces come from the family's split regex
 * (PCRE2, UTF-8 + Unicode properties); merges go by rank with a per-piece cache. Decoding
 * streams: bytes of an incomplete UTF-8 character are held back until complete.
 * It does not apply chat templates (chat.h) and adds no BOS by itself.
 */
#ifndef ZP_TOKENIZER_H
#define ZP_TOKENIZER_H

#include <stddef.h>

#include "status.h"

typedef struct zp_tokenizer zp_tokenizer;

/* Loads DIR/tokenizer.json, or DIR/vocab.json + merges.txt, or DIR/tokenizer.model. */
zp_status zp_tokenizer_load(const char *dir, zp_tokenizer **out);
void zp_tokenizer_free(zp_tokenizer *t);

/* Encodes UTF-8 text; special tokens in the text are recognised when parse_special.
 * *ids is malloc'ed (caller frees). */
zp_status zp_tokenizer_encode(zp_tokenizer *t, const char *text, size_t len, int parse_special, int **ids, int *n);
/* Whole decode into a malloc'ed NUL-terminated string. Ids the tokenizer does not have (rows
 * of a model's padded embedding, e.g. 151669..151935 for Qwen3) decode to nothing. */
zp_status zp_tokenizer_decode(const zp_tokenizer *t, const int *ids, int n, char **out, size_t *len);

/* Streaming decode: the bytes of one token at a time; only well-formed UTF-8 comes out. A
 * character cut across tokens waits for its next bytes; a sequence that breaks becomes U+FFFD,
 * as Python's decode(errors="replace") (and so Hugging Face's decode) replaces it, so the
 * concatenated output equals zp_tokenizer_decode of the same ids. */
typedef struct {
    unsigned char pending[8];
    int n_pending;
} zp_detok_state;
/* Writes the text the token completes into out (cap >= 3 x the token's bytes + 3: a byte can
 * become a 3-byte U+FFFD) and returns its length. */
size_t zp_tokenizer_decode_stream(const zp_tokenizer *t, int id, zp_detok_state *st, char *out, size_t cap);
/* At the end of a stream: a character still cut becomes U+FFFD (cap >= 3); returns 0 or 3. */
size_t zp_tokenizer_decode_flush(zp_detok_state *st, char *out, size_t cap);

int zp_tokenizer_vocab_size(const zp_tokenizer *t);
/* The raw bytes of token id (NULL and *len 0 for an id without a token). */
const char *zp_tokenizer_token_bytes(const zp_tokenizer *t, int id, int *len);
/* Bytes of the longest token (what a streaming decoder's buffer must hold, x 3, + 3). */
int zp_tokenizer_max_token_bytes(const zp_tokenizer *t);
/* 1 when id is an added token its files mark special ("special": true in tokenizer.json's
 * added_tokens or tokenizer_config.json's added_tokens_decoder: Qwen3's <|im_end|>, not its
 * <think>): the tokens Hugging Face's decode(skip_special_tokens=True) leaves out. */
int zp_tokenizer_is_special(const zp_tokenizer *t, int id);
/* Id of a token given as text (e.g. "<think>"), or -1. */
int zp_tokenizer_find(const zp_tokenizer *t, const char *token);
/* "qwen2", "llama3" or "gpt2" (the split regex in use). */
const char *zp_tokenizer_pretok_name(const zp_tokenizer *t);

#endif
