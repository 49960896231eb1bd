/* geometry.c - resolves and validates the KV geometry (geometry.h): the one place a window is
 * defaulted for an engine and the one place nmax, window and block size are checked. */
#include "geometry.h"

#include <string.h>

#include "policy.h"

zp_status zp_geometry_resolve(const zp_policy_ops *ops, int block_size, int nmax, int window, zp_kv_geometry *out) {
    memset(out, 0, sizeof *out);
    if (block_size <= 0 || block_size > 65536) return zp_fail(ZP_ERR_INVALID, "block_size %d must be in [1, 65536]", block_size);
    out->block_size = block_size;
    if (!ops->evicts) return ZP_OK;
    const int w = policy_window(ops, window);
    if (nmax <= 0 || (long long)nmax * block_size > (1 << 30))
        return zp_fail(ZP_ERR_INVALID, "nmax %d must be at least 1, with nmax x block_size %d at most 2^30", nmax, block_size);
    if (w <= 0 || w > block_size)
        return zp_fail(ZP_ERR_INVALID, "window %d must be in [1, block_size %d]%s", w, block_size,
                       window <= 0 ? " (it is the policy's default window: set a smaller window or a larger block_size)" : "");
    out->evicts = 1;
    out->prompt_only = ops->prompt_only;
    out->nmax = nmax;
    out->budget = nmax * block_size;
    out->cap_blocks = ops->prompt_only ? 0 : nmax + 1;
    out->window = w;
    return ZP_OK;
}
