/* scheduler.h - requests (zp_seq) and the full-KV continuous-batching scheduler.
 *
 * vLLM-like baseline: waiting requests are admitted FIFO while the token budget
 * (max_num_batched_tokens), the batch cap (max_num_seqs) and free blocks allow, with
 * prefix-cache lookup of their full blocks; a step is either a prefill batch (priority) or a
 * decode batch. When decode needs a block and none is free, the newest running request is
 * preempted by recompute (blocks freed, pushed to the front of waiting); a request that is
 * alone preempts itself. Logical length (n_tokens, positions) and physical length (n_kv,
 * slots holding K/V) are separate fields: compression makes them differ.
 * With a block cap (nmax > 0, an evicting policy) a request holds at most nmax + 1 blocks;
 * when its growth block is full it is marked for compression and given a target table
 * (docs/algorithm.md §2.3-2.4: in place, or fresh blocks in front of shared prefix blocks).
 * Variants: `strict` runs at most M requests, each with a query slot; `hybrid` (Zipage) also
 * runs slot-less requests while they need no window queries (§4.4). Compressed or compressing
 * requests are never preempted (they are suspended instead). A model with sliding layers
 * (gpt-oss) gives them a ring: blocks of their own by logical position, freed once out of the
 * window, outside the cap. Host-only bookkeeping.
 */
#ifndef ZP_SCHEDULER_H
#define ZP_SCHEDULER_H

#include <stdint.h>

#include "geometry.h"
#include "kvcache.h"
#include "sampler.h"

typedef enum { ZP_SEQ_WAITING, ZP_SEQ_RUNNING, ZP_SEQ_FINISHED } zp_seq_status;
/* Where a request stands with its next compression: none pending; planned by the scheduler
 * (target and release tables set, not yet started); handed to the compression worker. */
typedef enum { ZP_COMPRESS_NONE, ZP_COMPRESS_PLANNED, ZP_COMPRESS_IN_FLIGHT } zp_compress_phase;

typedef struct {
    int64_t request_id;   /* caller's id (e.g. problem index): keys the RNG */
    int sample_index;     /* which of the n samples: keys the RNG */
    uint64_t seed;
    zp_sampling_params sp;
    int *tokens;          /* [cap] prompt + generated; the last one is "pending" (no K/V yet) */
    int n_tokens, cap;    /* logical length */
    int n_prompt;
    int n_kv;             /* physical length: tokens whose K/V is in the cache */
    int *blocks;          /* [blocks_cap] block table (physical block ids) */
    int n_blocks, blocks_cap;
    uint64_t last_hash;   /* chained hash of the last registered full block */
    int n_hashed;         /* leading blocks registered in the prefix index */
    zp_seq_status status;
    zp_finish_reason finish;
    int n_preemptions;
    int64_t order;        /* arrival order */
    int n_done;           /* logical tokens whose K/V has been computed */
    int qid;              /* query slot, -1 when none */
    int compressed;       /* compressed at least once (never preempted, never hashed again) */
    int views;            /* its layers read their block-table views (layer_budget.h), the dead blocks left
                             out: set when a compression installs its target (a prompt's too), cleared when
                             its blocks are released */
    zp_compress_phase compressing; /* not NONE: selected for compression; target/release below are planned */
    int *target;          /* [nmax+1] target block table of the pending compression */
    int *release;         /* blocks dropped after it */
    int n_release, release_cap;
    int n_compressions;
    /* The sliding layers' blocks (KV group 1, when the scheduler has a ring_window): a table by
     * logical block, entries before ring_first freed once out of every window (-1) */
    int *ring;
    int n_ring, ring_cap, ring_first;
    /* Head-wise budgets (the engine's head_budget adakv; NULL otherwise): how many of its first
     * run_base tokens each (layer, KV head) holds as a run of cells (zp_head_runs), [L][Hkv],
     * and where an in-flight compression writes the next ones; run_base 0 until a compression
     * installs its target, again 0 once its blocks are released */
    int *runs, *new_runs;
    int run_base;
    /* Adaptive budget (the engine's budget adaptive): the blocks its last compression kept (0:
     * N_max, the fixed budget; it grows back to the cap before the next), and what an in-flight
     * compression keeps */
    int keep_blocks, new_keep_blocks;
} zp_seq;

typedef struct {
    zp_seq **v;
    int n, cap;
} zp_seq_list;

typedef enum { ZP_SCHED_FULL, ZP_SCHED_STRICT, ZP_SCHED_HYBRID, ZP_SCHED_COUNT } zp_sched_kind;

typedef struct {
    zp_kv_pool *pool;
    int block_size;
    int max_num_seqs;
    int max_num_batched_tokens;
    int enable_prefix_cache;
    zp_sched_kind kind;
    float admission_reserve; /* share of each request's most blocks held back at admission (0: none) */
    int nmax;             /* block cap N_max (0: no cap, full KV) */
    int cap_blocks;       /* nmax + 1: most blocks a request holds (0: no cap) */
    int prompt_budget;    /* C > 0: a prompt-only policy (SnapKV), no cap; a prompt longer than C gets a
                             query slot for its prefill and is compressed to C right after it */
    int window;           /* w: query-window length */
    int ring_window;      /* W > 0: the model's sliding layers hold their own blocks (KV group 1), those of
                             logical tokens within W of the next query, outside the cap; 0: none */
    int n_qslots;         /* M */
    int *free_q, n_free_q;
    zp_seq_list waiting, running;
    int64_t n_preemptions;
    int64_t n_suspensions; /* request-steps skipped for lack of a block or a slot */
    int64_t prefix_hit_tokens;
    int peak_running_slotless;
} zp_scheduler;

typedef struct {
    zp_seq **seqs; /* scheduled requests, in batch order */
    int n;
    int is_prefill;
    int n_tokens;  /* rows the model computes */
} zp_sched_batch;

zp_status sched_init(zp_scheduler *s, zp_kv_pool *pool, int max_num_seqs, int max_num_batched_tokens, int prefix_cache);
/* Turns on the block cap of geo (nmax + 1 blocks) and query slots (strict or hybrid). */
zp_status sched_enable_compression(zp_scheduler *s, zp_sched_kind kind, const zp_kv_geometry *geo, int n_qslots);
/* After a compression ran: drops the released blocks, installs the target table. */
void sched_compress_done(zp_scheduler *s, zp_seq *seq);
/* Full-KV scheduling with one compression of long prompts (a prompt-only policy): prompts
 * longer than geo's budget take one of n_qslots query slots for their first prefill. */
zp_status sched_enable_prompt_compression(zp_scheduler *s, const zp_kv_geometry *geo, int n_qslots);
/* Plans the compression of a request that just finished the prefill of a prompt longer than
 * the budget (it holds a slot): target table in place. 0 when out of host memory. */
int sched_plan_prompt_compression(zp_scheduler *s, zp_seq *seq);
/* After it ran: the request holds budget tokens (and an empty growth block), gives its slot
 * back, and decodes like full KV from there; it stays preemptible (recomputed uncompressed). */
void sched_prompt_compress_done(zp_scheduler *s, zp_seq *seq);
/* Last resort when a step found nothing to run: preempts the newest preemptible request.
 * Returns 1 if one was preempted. */
int sched_break_stall(zp_scheduler *s);
/* Most blocks a request of this length may hold at once under the current cap (its ring's too). */
int sched_blocks_needed(const zp_scheduler *s, int n_prompt, int max_tokens);
/* Gives the model's sliding layers their own blocks (a window of W > 0 logical tokens); call
 * before any request is added. A prefix hit then also needs the ring's cached blocks of its
 * first computed query's window. */
zp_status sched_enable_ring(zp_scheduler *s, int window);
int sched_kind_parse(const char *name, zp_sched_kind *out);
const char *sched_kind_name(zp_sched_kind k);
void sched_free(zp_scheduler *s);
zp_status sched_add(zp_scheduler *s, zp_seq *seq);
/* Picks the next batch into out (out->seqs must hold max_num_seqs). n == 0: nothing runnable. */
zp_status sched_schedule(zp_scheduler *s, zp_sched_batch *out);
/* After a forward: all scheduled tokens now have K/V; registers newly full blocks. */
void sched_mark_computed(zp_scheduler *s, zp_seq *seq);
/* Removes a finished request from running and frees its blocks. */
void sched_finish(zp_scheduler *s, zp_seq *seq);
/* Ends a request the caller stops, waiting or running, not in a compression in flight: a planned
 * compression is cancelled (its fresh target blocks return to the pool), then its blocks and
 * query slot go back as in sched_finish. */
void sched_drop(zp_scheduler *s, zp_seq *seq);
int sched_blocks_for(const zp_scheduler *s, int n_tokens);

zp_status seq_list_push_back(zp_seq_list *l, zp_seq *x);
zp_status seq_list_push_front(zp_seq_list *l, zp_seq *x);
zp_seq *seq_list_pop_front(zp_seq_list *l);
zp_seq *seq_list_pop_back(zp_seq_list *l);
void seq_list_remove(zp_seq_list *l, zp_seq *x);

#endif
