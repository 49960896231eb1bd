/* tokenizer_internal.h - the tokenizer's tables, shared by tokenizer.c (encode/decode) and
 * tokenizer_load.c (file formats). Not a public header. */
#ifndef ZP_TOKENIZER_INTERNAL_H
#define ZP_TOKENIZER_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>

#include "tokenizer.h"

typedef enum { ZP_BPE_MERGES, ZP_BPE_TIKTOKEN } zp_bpe_mode;
typedef enum { ZP_PRE_REGEX, ZP_PRE_DIGITS } zp_pretok_kind;

typedef struct {
    zp_pretok_kind kind;
    pcre2_code *re;
    pcre2_match_data *md;
} zp_pretok_step;

typedef struct {
    char *text;
    int len, id, special;
} zp_added_token;

typedef struct {
    uint64_t key; /* (left << 32) | right, 0 = empty (ids are offset by 1) */
    int rank, result;
} zp_pair_slot;

#define ZP_CACHE_SLOTS 65536
#define ZP_TOK_MAX_ID ((1 << 20) - 1) /* largest token id a file may claim (real vocabularies: < 300k) */
#define ZP_TOK_MAX_MERGES (1 << 22)   /* merges a file may list */
#define ZP_CACHE_MAX_PIECE 48

typedef struct {
    uint64_t hash;
    unsigned char piece[ZP_CACHE_MAX_PIECE];
    int len, n_ids;
    int ids[ZP_CACHE_MAX_PIECE];
} zp_cache_slot;

struct zp_tokenizer {
    zp_bpe_mode mode;
    int n_vocab;              /* max id + 1 */
    int cap_vocab;            /* allocated entries of tok/tok_len/rank */
    unsigned char **tok;      /* [n_vocab] raw bytes of each token (NULL for unused ids) */
    int *tok_len;             /* [n_vocab] */
    int *rank;                /* [n_vocab] tiktoken merge rank (ZP_BPE_TIKTOKEN) */
    int *bytes_map;           /* open addressing: token id or -1, keyed by token bytes */
    uint32_t bytes_mask;
    int byte_id[256];         /* token of each single byte */
    zp_pair_slot *pairs;      /* merge table (ZP_BPE_MERGES), at most half full (grown by doubling) */
    uint32_t pairs_mask;
    int n_pairs;
    int whole_piece_first;    /* use a piece's own token when it exists (Llama-3, ignore_merges) */
    int nfc;                  /* NFC-normalise input (Qwen2) */
    zp_pretok_step steps[4];
    int n_steps;
    const char *pretok_name;
    zp_added_token *added;    /* sorted by length, longest first */
    int n_added;
    zp_cache_slot *cache;     /* direct-mapped piece -> ids cache [ZP_CACHE_SLOTS], made by the first encode */
};

uint64_t tok_hash(const unsigned char *s, int n);
/* Token id of exact bytes, or -1. */
int tok_lookup(const zp_tokenizer *t, const unsigned char *s, int n);
/* Adds token id with bytes s (copied); grows tables. */
zp_status tok_add(zp_tokenizer *t, int id, const unsigned char *s, int n);
zp_status tok_build_index(zp_tokenizer *t);
zp_status tok_add_merge(zp_tokenizer *t, int left, int right, int rank, int result);
zp_status tok_set_pretok(zp_tokenizer *t, const char *name);
zp_status tok_add_regex_step(zp_tokenizer *t, const char *pattern, const char *src);
zp_status tok_add_added(zp_tokenizer *t, const char *text, int id, int special);
void tok_finish_added(zp_tokenizer *t);
/* GPT-2 byte-level alphabet: the byte a code point stands for, or -1. */
int tok_unicode_to_byte(uint32_t cp);

#endif
