/* bench_timeline.c - see bench_timeline.h. */
#include "bench_timeline.h"

#include <string.h>
#include <sys/stat.h>

zp_status bench_timeline_open(bench_timeline *tl, const char *path, double interval) {
    memset(tl, 0, sizeof *tl);
    tl->interval = interval;
    if (!path) return ZP_OK;
    struct stat sb;
    const int header = stat(path, &sb) != 0 || sb.st_size == 0;
    tl->f = fopen(path, "a");
    if (!tl->f) return zp_fail(ZP_ERR_IO, "%s: cannot open the timeline for appending", path);
    if (header)
        fprintf(tl->f, "label,pool,t_s,generated_tokens,tps,mean_running,finished,prefill_tokens,preemptions,compressions\n");
    return fflush(tl->f) == 0 ? ZP_OK : zp_fail(ZP_ERR_IO, "%s: cannot write the timeline", path);
}

void bench_timeline_begin(bench_timeline *tl, const char *label, const char *pool, double t0, const zp_engine_stats *st) {
    tl->label = label;
    tl->pool = pool ? pool : "";
    tl->t0 = tl->last = t0;
    tl->prev = *st;
}

int bench_timeline_due(const bench_timeline *tl, double now) { return tl->f && now - tl->last >= tl->interval; }

zp_status bench_timeline_row(bench_timeline *tl, double now, const zp_engine_stats *st, int finished) {
    if (!tl->f) return ZP_OK;
    const zp_engine_stats *p = &tl->prev;
    const double dt = now - tl->last;
    const int64_t steps = st->prefill_steps + st->decode_steps - p->prefill_steps - p->decode_steps;
    if (steps == 0) return ZP_OK; /* nothing ran since the last row (the run ended right after it) */
    fprintf(tl->f, "%s,%s,%.3f,%lld,%.1f,%.2f,%d,%lld,%lld,%lld\n", tl->label, tl->pool, now - tl->t0, (long long)st->generated_tokens,
            dt > 0 ? (double)(st->generated_tokens - p->generated_tokens) / dt : 0.0,
            steps > 0 ? (double)(st->running_sum - p->running_sum) / (double)steps : 0.0, finished, (long long)st->prefill_tokens,
            (long long)st->preemptions, (long long)st->compressions);
    tl->last = now;
    tl->prev = *st;
    return fflush(tl->f) == 0 ? ZP_OK : zp_fail(ZP_ERR_IO, "cannot write the timeline row");
}

zp_status bench_timeline_close(bench_timeline *tl) {
    if (!tl->f) return ZP_OK;
    const int bad = fclose(tl->f) != 0;
    tl->f = NULL;
    return bad ? zp_fail(ZP_ERR_IO, "cannot close the timeline") : ZP_OK;
}
