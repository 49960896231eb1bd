/* tp.h - tensor-parallel sharding arithmetic: which query heads, key-value heads and MLP
 * intermediate rows each rank of a tensor-parallel group owns (Megatron-style: QKV and
 * gate/up column-parallel, O and down row-parallel with a sum over the ranks after each), and
 * the decoder shape a rank computes. A rank holds whole KV heads, so its query heads are the
 * ones that read them (GQA group g = n_heads / n_kv_heads: rank r's query heads
 * [r*Hq/P, (r+1)*Hq/P) read KV heads [r*Hkv/P, (r+1)*Hkv/P)); scoring and compaction select
 * per KV head and need no communication (every policy's plan reads one KV head's keys, its
 * group's queries and its own scores; budgets do not depend on the head count). Two things the
 * engine's group (engine_tp.c) carries over: `random` hashes the model's head index kv0 + g
 * into its draw (zp_attn_dims.kv_head0, scorers/key_hash.h), and the compression statistics
 * (tokens evicted) count local heads, summed over the ranks.
 *
 * Deliberately not here: replicating KV heads when the group is larger than n_kv_heads (vLLM
 * does; such sizes are refused), sharding the vocabulary (embedding and LM head are
 * replicated), the communication itself (comm.h), slicing the tensors (model.c's loader). */
#ifndef ZP_TP_H
#define ZP_TP_H

#include "config.h" /* zp_model_config */
#include "status.h"

typedef struct {
    int size, rank;      /* group size P, this rank in [0, P) */
    int q0, nq;          /* query heads [q0, q0 + nq) */
    int kv0, nkv;        /* key-value heads [kv0, kv0 + nkv) */
    int i0, ni;          /* intermediate rows [i0, i0 + ni) of gate, up (and columns of down) */
} zp_tp_shard;

/* Rank `rank`'s share of model c in a group of `size`; refuses sizes that do not split the
 * KV heads, the query heads and the intermediate size evenly, naming the count that does not
 * divide and the sizes that would. */
zp_status zp_tp_shard_of(const zp_model_config *c, int size, int rank, zp_tp_shard *out);
/* The shape one rank computes: c with its heads and intermediate rows. */
zp_model_config zp_tp_shard_config(const zp_model_config *c, const zp_tp_shard *s);

#endif
