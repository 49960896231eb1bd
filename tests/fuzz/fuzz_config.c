/* fuzz_config.c - config.json and generation_config.json parsing (zp_config_parse*), and the
 * strict JSON reader every JSON file goes through. */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "config.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *s = fuzz_text(data, n);
    if (!s) return 0;
    zp_model_config c;
    if (zp_config_parse(s, "fuzz", &c) == ZP_OK) {
        float inv[512], att;
        if (c.head_dim <= 1024) zp_rope_frequencies(&c.rope, c.head_dim, inv, &att);
    }
    zp_config_parse_generation(s, "fuzz", &c);
    cJSON *o = NULL;
    if (zp_json_parse_strict(s, "fuzz", &o) == ZP_OK) cJSON_Delete(o);
    free(s);
    return 0;
}
