/* fuzz_tokenizer.c - a tokenizer.json of the input's bytes loaded, then texts encoded (with
 * and without special tokens) and ids decoded, in range and not. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (!fuzz_file("tokenizer.json", data, n)) return 0;
    zp_tokenizer *t;
    if (zp_tokenizer_load(fuzz_dir(), &t) != ZP_OK) return 0;
    static const char *texts[] = {"Hello world! 123", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "<|im_start|>x\n\xc3\xa9\xe6\x95\xb0", ""};
    for (int k = 0; k < 4; k++) {
        int *ids, m;
        for (int sp = 0; sp < 2; sp++)
            if (zp_tokenizer_encode(t, texts[k], strlen(texts[k]), sp, &ids, &m) == ZP_OK) {
                char *txt;
                size_t len;
                if (zp_tokenizer_decode(t, ids, m, &txt, &len) == ZP_OK) free(txt);
                free(ids);
            }
    }
    int bad[3] = {-1, 0, 1 << 30};
    char *txt;
    size_t len;
    if (zp_tokenizer_decode(t, bad, 3, &txt, &len) == ZP_OK) free(txt);
    zp_tokenizer_free(t);
    return 0;
}
