/* cmd_calibrate.c - `zipage calibrate --model DIR (--text FILE | --prompt-ids LIST) --out FILE`:
 * TriAttention's statistics of a model (compress/trig_calibrate.h) from one forward pass on the
 * CPU over calibration text (tokenized with the model's tokenizer, no special tokens parsed) or
 * token ids, written as the statistics file the policy's `stats` parameter names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli_common.h" /* cli_value, cli_ids, cli_int, cli_report */
#include "files.h"      /* zp_read_file */
#include "tokenizer.h"
#include "trig_calibrate.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: zipage calibrate --model DIR (--text FILE | --prompt-ids LIST) --out FILE [--max-tokens N] "
            "[--chunk N] [--threads N]\n"
            "  --model DIR        a checkpoint folder (config.json, safetensors or GGUF, tokenizer files for --text)\n"
            "  --text FILE        calibration text, tokenized with the model's tokenizer\n"
            "  --prompt-ids LIST  calibration token ids, comma separated\n"
            "  --out FILE         the statistics file to write (safetensors; the triattention policy's \"stats\")\n"
            "  --max-tokens N     use the first N tokens (default: all, up to the model's positions)\n"
            "  --chunk N          prefill chunk (default 512)\n"
            "  --threads N        CPU threads (default 0: all)\n"
            "The queries are taken as attention consumes them before RoPE (after Qwen3's q_norm), on the CPU.\n");
}

typedef struct {
    const char *model, *text, *out;
    int *ids, n, max_tokens, chunk, threads;
} calib_args;

static zp_status parse(int argc, char **argv, calib_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!(v = cli_value(argc, argv, &i))) return zp_fail(ZP_ERR_INVALID, "%s needs a value", f);
        if (!strcmp(f, "--model"))
            a->model = v;
        else if (!strcmp(f, "--text"))
            a->text = v;
        else if (!strcmp(f, "--out"))
            a->out = v;
        else if (!strcmp(f, "--prompt-ids"))
            ZP_TRY(cli_ids(f, v, &a->ids, &a->n));
        else if (!strcmp(f, "--max-tokens"))
            ZP_TRY(cli_int(f, v, 1, 1 << 24, &a->max_tokens));
        else if (!strcmp(f, "--chunk"))
            ZP_TRY(cli_int(f, v, 1, 1 << 16, &a->chunk));
        else if (!strcmp(f, "--threads"))
            ZP_TRY(cli_int(f, v, 0, 4096, &a->threads));
        else
            return zp_fail(ZP_ERR_INVALID, "unknown flag %s", f);
    }
    if (!a->model || !a->out) return zp_fail(ZP_ERR_INVALID, "--model and --out are required");
    if (!a->text == !a->ids) return zp_fail(ZP_ERR_INVALID, "give one of --text FILE or --prompt-ids LIST");
    return ZP_OK;
}

static zp_status tokenize(calib_args *a) {
    char *txt;
    size_t len;
    zp_tokenizer *tok;
    ZP_TRY(zp_read_file(a->text, &txt, &len));
    zp_status s = zp_tokenizer_load(a->model, &tok);
    if (s == ZP_OK) {
        s = zp_tokenizer_encode(tok, txt, len, 0, &a->ids, &a->n);
        zp_tokenizer_free(tok);
    }
    free(txt);
    if (s == ZP_OK && a->n < 1) s = zp_fail(ZP_ERR_INVALID, "%s: no tokens", a->text);
    return s;
}

static zp_status calibrate(calib_args *a) {
    if (a->text) ZP_TRY(tokenize(a));
    zp_backend *be;
    ZP_TRY(zp_backend_cpu_create(a->threads, &be));
    zp_model *m = NULL;
    zp_status s = zp_model_load(a->model, be, &m);
    zp_trig_stats st = {0};
    int n = a->max_tokens > 0 && a->max_tokens < a->n ? a->max_tokens : a->n;
    if (s == ZP_OK && n > m->cfg.max_pos) n = m->cfg.max_pos;
    if (s == ZP_OK) s = zp_trig_calibrate(m, a->ids, n, a->chunk, &st);
    if (s == ZP_OK) s = zp_trig_stats_write(a->out, &st);
    if (s == ZP_OK)
        printf("wrote %s: %d layers x %d query heads x %d RoPE pairs from %d tokens\n", a->out, st.n_layers, st.n_heads,
               st.half, n);
    zp_trig_stats_free(&st);
    if (m) zp_model_free(m);
    be->destroy(be);
    return s;
}

int cmd_calibrate(int argc, char **argv) {
    calib_args a = {.chunk = 512};
    zp_status s = parse(argc, argv, &a);
    if (s != ZP_OK) {
        usage(stderr);
        return cli_report("calibrate", s);
    }
    s = calibrate(&a);
    free(a.ids);
    return s == ZP_OK ? 0 : cli_report("calibrate", s);
}
