/* kvcache.c - block pool with FIFO free list and a chained-hash prefix index. */
#include "kvcache.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h> /* XXH64 */

zp_status kv_pool_init(zp_kv_pool *p, int num_blocks, int block_size) {
    memset(p, 0, sizeof *p);
    if (num_blocks <= 0 || block_size <= 0)
        return zp_fail(ZP_ERR_INVALID, "kv pool: num_blocks %d and block_size %d must be positive", num_blocks, block_size);
    p->num_blocks = num_blocks;
    p->block_size = block_size;
    p->n_buckets = 1;
    while (p->n_buckets < 2 * num_blocks) p->n_buckets <<= 1;
    p->ref = calloc((size_t)num_blocks, sizeof *p->ref);
    p->hash = calloc((size_t)num_blocks, sizeof *p->hash);
    p->tokens = malloc(sizeof *p->tokens * (size_t)num_blocks * (size_t)block_size);
    p->free_prev = malloc(sizeof(int) * (size_t)num_blocks);
    p->free_next = malloc(sizeof(int) * (size_t)num_blocks);
    p->bucket = malloc(sizeof(int) * (size_t)p->n_buckets);
    p->chain_next = malloc(sizeof(int) * (size_t)num_blocks);
    p->in_map = calloc((size_t)num_blocks, 1);
    if (!p->ref || !p->hash || !p->tokens || !p->free_prev || !p->free_next || !p->bucket || !p->chain_next || !p->in_map) {
        kv_pool_free(p);
        return zp_fail(ZP_ERR_OOM, "kv pool: no host memory for %d blocks", num_blocks);
    }
    for (int i = 0; i < p->n_buckets; i++) p->bucket[i] = -1;
    for (int i = 0; i < num_blocks; i++) {
        p->free_prev[i] = i - 1;
        p->free_next[i] = i + 1 < num_blocks ? i + 1 : -1;
        p->chain_next[i] = -1;
    }
    p->free_head = 0;
    p->free_tail = num_blocks - 1;
    p->n_free = num_blocks;
    return ZP_OK;
}

void kv_pool_free(zp_kv_pool *p) {
    free(p->ref); free(p->hash); free(p->tokens); free(p->free_prev); free(p->free_next);
    free(p->bucket); free(p->chain_next); free(p->in_map);
    memset(p, 0, sizeof *p);
}

static void free_list_remove(zp_kv_pool *p, int b) {
    int pr = p->free_prev[b], nx = p->free_next[b];
    if (pr >= 0) p->free_next[pr] = nx; else p->free_head = nx;
    if (nx >= 0) p->free_prev[nx] = pr; else p->free_tail = pr;
    p->n_free--;
}

static void free_list_push_tail(zp_kv_pool *p, int b) {
    p->free_prev[b] = p->free_tail;
    p->free_next[b] = -1;
    if (p->free_tail >= 0) p->free_next[p->free_tail] = b; else p->free_head = b;
    p->free_tail = b;
    p->n_free++;
}

static void map_remove(zp_kv_pool *p, int b) {
    if (!p->in_map[b]) return;
    int *link = &p->bucket[p->hash[b] & (uint64_t)(p->n_buckets - 1)];
    while (*link != -1 && *link != b) link = &p->chain_next[*link];
    if (*link == b) *link = p->chain_next[b];
    p->chain_next[b] = -1;
    p->in_map[b] = 0;
}

int kv_pool_alloc_block(zp_kv_pool *p) {
    int b = p->free_head;
    if (b < 0) return -1;
    free_list_remove(p, b);
    map_remove(p, b);
    p->ref[b] = 1;
    p->hash[b] = ZP_HASH_NONE;
    int used = p->num_blocks - p->n_free;
    if (used > p->peak_used) p->peak_used = used;
    return b;
}

void kv_pool_ref_block(zp_kv_pool *p, int b) {
    if (p->ref[b] == 0) {
        free_list_remove(p, b);
        int used = p->num_blocks - p->n_free;
        if (used > p->peak_used) p->peak_used = used;
    }
    p->ref[b]++;
}

void kv_pool_unref_block(zp_kv_pool *p, int b) {
    if (p->ref[b] <= 0) return; /* double free is a caller bug; tolerated, never corrupts the list */
    if (--p->ref[b] == 0) free_list_push_tail(p, b);
}

int kv_pool_num_free(const zp_kv_pool *p) { return p->n_free; }

uint64_t kv_hash_block(uint64_t prev_hash, const int *tokens, int n) {
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    if (prev_hash != ZP_HASH_NONE) {
        uint8_t le[8];
        for (int i = 0; i < 8; i++) le[i] = (uint8_t)(prev_hash >> (8 * i));
        XXH64_update(st, le, 8);
    }
    for (int i = 0; i < n; i++) {
        int64_t v = tokens[i];
        uint8_t le[8];
        for (int k = 0; k < 8; k++) le[k] = (uint8_t)((uint64_t)v >> (8 * k));
        XXH64_update(st, le, 8);
    }
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h == ZP_HASH_NONE ? 1 : h;
}

int kv_pool_lookup(const zp_kv_pool *p, uint64_t h, const int *tokens) {
    for (int b = p->bucket[h & (uint64_t)(p->n_buckets - 1)]; b != -1; b = p->chain_next[b])
        if (p->hash[b] == h && memcmp(p->tokens + (size_t)b * p->block_size, tokens, sizeof(int) * (size_t)p->block_size) == 0)
            return b;
    return -1;
}

void kv_pool_register(zp_kv_pool *p, int b, uint64_t h, const int *tokens) {
    int old = kv_pool_lookup(p, h, tokens);
    if (old >= 0 && old != b) map_remove(p, old);
    map_remove(p, b);
    p->hash[b] = h;
    memcpy(p->tokens + (size_t)b * p->block_size, tokens, sizeof(int) * (size_t)p->block_size);
    int *head = &p->bucket[h & (uint64_t)(p->n_buckets - 1)];
    p->chain_next[b] = *head;
    *head = b;
    p->in_map[b] = 1;
}

void kv_pool_unregister(zp_kv_pool *p, int b) {
    map_remove(p, b);
    p->hash[b] = ZP_HASH_NONE;
}
