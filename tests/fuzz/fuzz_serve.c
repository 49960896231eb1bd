/* fuzz_serve.c - the request bodies of `zipage serve` (srv_request_parse) for both endpoints:
 * a refusal must fill a 400-class error object whose JSON parses; an accepted request must hold
 * in-range fields. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "serve_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    for (int ep = SRV_COMPLETIONS; ep <= SRV_CHAT; ep++) {
        srv_request r;
        srv_error err;
        if (srv_request_parse((const char *)data, n, (srv_endpoint)ep, &r, &err) == ZP_OK) {
            if (r.n < 1 || r.n > SRV_MAX_N || r.n_stop > SRV_MAX_STOP || !r.model || (ep == SRV_CHAT ? r.n_messages : r.n_prompts) < 1) abort();
            for (int i = 0; i < r.n_prompts; i++)
                if (!r.prompts[i].text && r.prompts[i].n_ids < 1) abort();
        } else {
            char *j = srv_error_json(&err);
            cJSON *p = j ? cJSON_Parse(j) : NULL;
            if (err.http_status < 400 || !err.message[0] || (j && !p)) abort();
            cJSON_Delete(p);
            free(j);
        }
        srv_request_free(&r);
    }
    return 0;
}
