/* test_kvcache.c - block pool: FIFO allocation, ref counts, chained hashes, prefix lookup,
 * revival of freed blocks, and stale index entries dropped when a block is reused. */
#include "kvcache.h"
#include "test_util.h"

int main(void) {
    zp_kv_pool p;
    CHECK_FAILS(kv_pool_init(&p, 0, 4), ZP_ERR_INVALID, "num_blocks");
    CHECK_OK(kv_pool_init(&p, 4, 4)); /* once: a second init would leak the first pool */
    int a = kv_pool_alloc_block(&p), b = kv_pool_alloc_block(&p);
    CHECK(a == 0 && b == 1 && kv_pool_num_free(&p) == 2);
    int t1[4] = {1, 2, 3, 4}, t2[4] = {5, 6, 7, 8};
    uint64_t h1 = kv_hash_block(ZP_HASH_NONE, t1, 4), h2 = kv_hash_block(h1, t2, 4);
    CHECK(h1 != ZP_HASH_NONE && h2 != h1);
    CHECK(kv_hash_block(ZP_HASH_NONE, t2, 4) != h2); /* chained: same tokens, other prefix */
    CHECK(kv_hash_block(h1, t2, 4) == h2);
    kv_pool_register(&p, a, h1, t1);
    kv_pool_register(&p, b, h2, t2);
    CHECK(kv_pool_lookup(&p, h1, t1) == a && kv_pool_lookup(&p, h2, t2) == b);
    CHECK(kv_pool_lookup(&p, h1, t2) == -1); /* hash match with other content is a miss */
    kv_pool_ref_block(&p, a);
    CHECK(p.ref[a] == 2);
    kv_pool_unref_block(&p, a);
    kv_pool_unref_block(&p, a);
    CHECK(p.ref[a] == 0 && kv_pool_num_free(&p) == 3);
    CHECK(kv_pool_lookup(&p, h1, t1) == a); /* freed blocks keep their content */
    kv_pool_ref_block(&p, a);               /* revived by a prefix hit */
    CHECK(p.ref[a] == 1 && kv_pool_num_free(&p) == 2);
    kv_pool_unref_block(&p, a);
    /* FIFO: blocks 2 and 3 were never used, then a (freed last) */
    CHECK(kv_pool_alloc_block(&p) == 2);
    CHECK(kv_pool_alloc_block(&p) == 3);
    CHECK(kv_pool_alloc_block(&p) == a);
    CHECK(kv_pool_lookup(&p, h1, t1) == -1); /* reused block left the index */
    CHECK(kv_pool_alloc_block(&p) == -1 && kv_pool_num_free(&p) == 0);
    CHECK(p.peak_used == 4);
    kv_pool_free(&p);
    return zp_test_finish("test_kvcache");
}
