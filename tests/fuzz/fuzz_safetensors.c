/* fuzz_safetensors.c - the safetensors reader on a file of the input's bytes, every tensor's
 * bytes touched. */
#include <string.h>

#include "fuzz_util.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file("model.safetensors", data, n);
    zp_safetensors st;
    memset(&st, 0, sizeof st);
    if (!path || zp_st_open_file(&st, path) != ZP_OK) { zp_st_close(&st); return 0; } /* closing after a failure is the caller's */
    volatile uint8_t sum = 0;
    for (int i = 0; i < st.n_tensors; i++)
        for (size_t k = 0; k < st.tensors[i].nbytes; k++) sum += ((const uint8_t *)st.tensors[i].data)[k];
    zp_st_close(&st);
    return sum == 1 ? 0 : 0; /* read, so the loop is not optimised away */
}
