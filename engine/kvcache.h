/* kvcache.h - the paged KV block pool: host-only bookkeeping, no device memory.
 *
 * Blocks have an id, a ref count, and (when full and registered) a content hash chained with
 * the hash of the previous block (xxHash64 over the previous hash and the block's token ids as
 * little-endian int64), which is the prefix-cache key. Free blocks wait in a FIFO; a freed
 * block keeps its hash and tokens and can be revived by a later prefix match until it is
 * handed out again. The K/V tensors themselves live in zp_kv_storage (model.h).
 * It does not decide which request gets blocks (scheduler.c) nor evict tokens (compress).
 */
#ifndef ZP_KVCACHE_H
#define ZP_KVCACHE_H

#include <stdint.h>

#include "status.h"

#define ZP_HASH_NONE UINT64_C(0)

typedef struct {
    int num_blocks;
    int block_size;
    int *ref;            /* [num_blocks] owners; 0 = free */
    uint64_t *hash;      /* [num_blocks] chained content hash, ZP_HASH_NONE if unregistered */
    int *tokens;         /* [num_blocks][block_size] token ids of registered blocks */
    int *free_prev, *free_next; /* doubly linked FIFO of free blocks (-1 terminated) */
    int free_head, free_tail, n_free;
    int *bucket;         /* [n_buckets] first block of each hash chain, -1 empty */
    int *chain_next;     /* [num_blocks] next block in the same bucket, -1 end */
    uint8_t *in_map;     /* [num_blocks] block is the registered owner of its hash */
    int n_buckets;       /* power of two */
    int peak_used;
} zp_kv_pool;

zp_status kv_pool_init(zp_kv_pool *p, int num_blocks, int block_size);
void kv_pool_free(zp_kv_pool *p);

/* Hands out the oldest free block, reset (ref 1, no hash); -1 when none is free. */
int kv_pool_alloc_block(zp_kv_pool *p);
/* Adds an owner to a block (a prefix hit). A free block is revived from the free list. */
void kv_pool_ref_block(zp_kv_pool *p, int block);
/* Drops an owner; at 0 the block returns to the tail of the free FIFO, keeping its hash. */
void kv_pool_unref_block(zp_kv_pool *p, int block);
int kv_pool_num_free(const zp_kv_pool *p);

/* Chained hash of one full block: prev_hash (or ZP_HASH_NONE for the first) then tokens. */
uint64_t kv_hash_block(uint64_t prev_hash, const int *tokens, int n);
/* Block registered under hash h holding exactly `tokens`, or -1. */
int kv_pool_lookup(const zp_kv_pool *p, uint64_t h, const int *tokens);
/* Registers a full block under h (replacing a previous owner of h). */
void kv_pool_register(zp_kv_pool *p, int block, uint64_t h, const int *tokens);
/* Removes a block from the prefix index (its content is about to change). */
void kv_pool_unregister(zp_kv_pool *p, int block);

#endif
