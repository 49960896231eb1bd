/* fuzz_experiment.c - an experiment definition of the input's bytes loaded and expanded, run
 * ids assigned. */
#include "experiment.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file("exp.json", data, n);
    experiment x;
    if (!path || exp_load(path, NULL, &x) != ZP_OK) return 0;
    exp_assign_ids(&x, "abc123", 42);
    exp_free(&x);
    return 0;
}
