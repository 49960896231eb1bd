/* fuzz_gguf.c - the GGUF reader on a file of the input's bytes, every tensor of up to 2^20
 * values dequantised. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file("model.gguf", data, n);
    zp_gguf g;
    if (!path || zp_gguf_open(path, &g) != ZP_OK) return 0;
    for (int i = 0; i < g.n_tensors; i++) {
        int64_t values = 1;
        for (int d = 0; d < g.tensors[i].ndim; d++) values *= g.tensors[i].ne[d];
        if (values > (1 << 20)) continue;
        float *x = malloc(sizeof(float) * (size_t)values);
        if (x) zp_gguf_dequantize(&g, &g.tensors[i], x);
        free(x);
    }
    zp_gguf_close(&g);
    return 0;
}
