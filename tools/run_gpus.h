/* run_gpus.h - `zipage run --gpus LIST`: the runs of one experiment spread over the GPUs of a
 * node, one worker process per GPU (or per tensor-parallel group) on one results folder (run_gpus.c). */
#ifndef ZP_RUN_GPUS_H
#define ZP_RUN_GPUS_H

#include "experiment.h"
#include "runner.h"

/* Runs experiment x with a worker per GPU of list ("0,1,2,3"), or per tp GPUs of it for runs
 * of tp > 1; fails naming the first failed worker and its log when any worker failed
 * (finished runs stay in the folder). */
zp_status run_gpus(experiment *x, const runner_opts *o, const char *list);

#endif
