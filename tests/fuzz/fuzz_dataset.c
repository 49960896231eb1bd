/* fuzz_dataset.c - a dataset JSONL of the input's bytes opened (math, then as LiveCodeBench),
 * selected with and without an ids filter and a limit. */
#include <stdlib.h>

#include "dataset.h"
#include "fuzz_util.h"

static void one(const char *name, const uint8_t *data, size_t n) {
    const char *path = fuzz_file(name, data, n);
    ds_dataset d;
    char err[ZP_DS_ERR];
    if (!path || ds_open(path, NULL, &d, err)) return;
    int *idx, m;
    if (!ds_select(&d, NULL, 3, d.is_code, &idx, &m, err)) free(idx);
    if (!ds_select(&d, d.items[0].id, 0, 0, &idx, &m, err)) free(idx);
    ds_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    one("math.jsonl", data, n);
    one("livecodebench_fuzz.jsonl", data, n);
    return 0;
}
