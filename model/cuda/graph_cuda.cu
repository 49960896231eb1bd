/* graph_cuda.cu - CUDA graphs of decode forwards: a small table of recorded graphs keyed by
 * the batch shape and every buffer address the recorded kernels read (the model's key plus
 * the backend's packed batch arrays and scratch buffers), least recently used out. A key is
 * recorded the second time it is seen, so every buffer has grown to its size in an eager run
 * first and nothing is allocated while recording. Replaying a graph is valid because every
 * kernel of a decode forward takes its per-step data (tokens, positions, slots, block tables,
 * lengths) from the device copies set_batch has just uploaded to the same addresses, and its
 * launch geometry from the shape alone (decode attention splits by shape, not by lengths).
 * The async compression thread records an event on the model stream and grows its buffers
 * (a device-wide wait and cudaFree, which would invalidate a capture); record_lock keeps both
 * out of a recording. Not here: prefill steps (ragged shapes, run eagerly), sampling (after
 * the graph), and profiling (ZIPAGE_PROFILE turns graphs off: its events would be recorded).
 */
#include <stdlib.h>

#include "cuda_common.cuh"

#define CUDA_GRAPH_MAX 64

struct cuda_graph_entry {
    uint64_t key, used; /* used: LRU clock of the last use; 0 = empty */
    int seen;           /* times the key was seen */
    cudaGraphExec_t exec;
};

static __thread int recording_here; /* this thread is recording a graph */
int cuda_graph_recording_here(void) { return recording_here; }

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* The backend's part of the key: the addresses and sizes of its own buffers that its kernels
 * read (the batch shape is in the model's part). */
static uint64_t backend_key(const cuda_ctx *c, uint64_t key) {
    const uint64_t parts[] = {(uint64_t)(uintptr_t)c->packed, c->packed_cap, (uint64_t)(uintptr_t)c->dec_part, c->dec_part_cap};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) key = mix(key, parts[i]);
    return key ? key : 1;
}

zp_status cuda_graph_begin(zp_backend *be, uint64_t model_key, int *hit, int *recording) {
    cuda_ctx *c = CUDA_CTX(be);
    *hit = *recording = 0;
    if (c->prof || !be->use_graphs) return ZP_OK;
    if (!c->graphs) {
        c->graphs = (cuda_graph_entry *)calloc(CUDA_GRAPH_MAX, sizeof *c->graphs);
        if (!c->graphs) return zp_fail(ZP_ERR_OOM, "cuda graphs: no host memory for the table");
    }
    const uint64_t key = backend_key(c, model_key);
    int slot = -1, lru = 0;
    for (int i = 0; i < CUDA_GRAPH_MAX; i++) {
        if (c->graphs[i].used && c->graphs[i].key == key) { slot = i; break; }
        if (c->graphs[i].used < c->graphs[lru].used) lru = i;
    }
    cuda_graph_entry *g;
    if (slot < 0) { /* first sighting: remember it, run eagerly */
        g = &c->graphs[lru];
        if (g->exec) cudaGraphExecDestroy(g->exec);
        g->exec = NULL;
        g->key = key;
        g->seen = 0;
        slot = lru;
    }
    g = &c->graphs[slot];
    g->used = ++c->graph_clock;
    g->seen++;
    if (g->exec) {
        ZP_CUDA_CHECK(cudaGraphLaunch(g->exec, c->stream));
        be->graph_replays++;
        *hit = 1;
    } else if (g->seen >= 2) {
        pthread_mutex_lock(&c->record_lock);
        cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
        if (e != cudaSuccess) {
            pthread_mutex_unlock(&c->record_lock);
            return zp_fail(ZP_ERR_BACKEND, "cuda graphs: cudaStreamBeginCapture: %s", cudaGetErrorString(e));
        }
        c->graph_slot = slot;
        recording_here = 1;
        *recording = 1;
    }
    return ZP_OK;
}

zp_status cuda_graph_end(zp_backend *be, int ok) {
    cuda_ctx *c = CUDA_CTX(be);
    if (c->graph_slot < 0) return ZP_OK;
    cuda_graph_entry *g = &c->graphs[c->graph_slot];
    c->graph_slot = -1;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    recording_here = 0;
    pthread_mutex_unlock(&c->record_lock);
    if (ok && e == cudaSuccess) e = cudaGraphInstantiate(&g->exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (!ok || e != cudaSuccess) { /* forget the key; a failed op reports its own error */
        g->exec = NULL;
        g->used = 0;
        cudaGetLastError(); /* clear a sticky capture error */
        return ok ? zp_fail(ZP_ERR_BACKEND, "cuda graphs: recording a decode forward failed: %s", cudaGetErrorString(e)) : ZP_OK;
    }
    ZP_CUDA_CHECK(cudaGraphLaunch(g->exec, c->stream)); /* recording ran nothing: run it now */
    be->graph_records++;
    return ZP_OK;
}

void cuda_graph_free(cuda_ctx *c) {
    for (int i = 0; c->graphs && i < CUDA_GRAPH_MAX; i++)
        if (c->graphs[i].exec) cudaGraphExecDestroy(c->graphs[i].exec);
    free(c->graphs);
    c->graphs = NULL;
}
