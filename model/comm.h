/* comm.h - the collective a tensor-parallel rank needs: a sum over the group's ranks of one
 * activation buffer (after the row-parallel O and down projections), every rank receiving the
 * same values. One implementation per transport:
 *   - zp_comm_local_create (comm_local.c): ranks that are threads of one process, each with
 *     its own backend; for CPU tensor parallelism and one-process simulations of a group (the
 *     tests). It copies through host memory and sums in rank order.
 *   - zp_comm_nccl_create (cuda/comm_nccl.cu): ranks on GPUs, one thread of this process per
 *     GPU, ncclAllReduce on each backend's stream (libnccl.so.2 opened at run time).
 * Deliberately not here: broadcasts of the scheduler's batch and the MIN of block counts over
 * ranks (the engine's, engine_tp.c). A rank that fails between two collectives would leave the
 * others waiting in the next one: its caller aborts the group (abort). */
#ifndef ZP_COMM_H
#define ZP_COMM_H

#include <stddef.h>

#include "backend.h" /* zp_backend, zp_act_type */
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zp_comm zp_comm;
struct zp_comm {
    int size, rank;
    /* buf (n elements of type, on be) := the elementwise sum of every rank's buf */
    zp_status (*all_reduce)(zp_comm *c, zp_backend *be, void *buf, zp_act_type type, size_t n);
    /* stops the group after an error on a rank: every rank waiting in a collective, or entering
     * one later, gets an error instead of waiting for the failed rank (local: a flag of the
     * group; NCCL: ncclCommAbort of this rank's communicator, which ends its kernels). Called
     * for every rank's communicator, from any thread; the group is not usable after. */
    void (*abort)(zp_comm *c);
    void (*destroy)(zp_comm *c);
};

/* size communicators of one group, ranks[r] for the thread that runs rank r. */
zp_status zp_comm_local_create(int size, zp_comm **ranks);
/* size NCCL communicators, rank r on GPU devices[r] (its CUDA backend must be on that GPU);
 * ZP_ERR_UNSUPPORTED in a build without CUDA and nccl.h, or without libnccl.so.2 at run time. */
zp_status zp_comm_nccl_create(int size, const int *devices, zp_comm **ranks);

#ifdef __cplusplus
}
#endif

#endif
