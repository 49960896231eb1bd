#!/usr/bin/env bash
# submit.sh - queues an experiment on a Slurm cluster: a job array of N tasks (sweep.sbatch,
# SHARD=k/N each) and, after it, the merge into RESULTS/EXP (merge.sbatch).
#   bash experiments/slurm/submit.sh EXP N [sbatch flags for the array ...]
#   e.g. bash experiments/slurm/submit.sh aime_nmax_sweep 16 --gpus-per-task=1 --time=24:00:00 -p gpu
# RESULTS (default results) and ZIPAGE (default build/zipage) pass through to the jobs.
# Prints the two job ids. Deliberately not here: choosing N or resources for the user.
set -euo pipefail
exp=${1:?usage: submit.sh EXP N [sbatch flags ...]}
n=${2:?usage: submit.sh EXP N [sbatch flags ...]}
shift 2
case "$n" in '' | *[!0-9]* | 0) echo "submit.sh: N=\"$n\" is not a positive number of tasks" >&2; exit 2 ;; esac
here=$(dirname "$0")
results=${RESULTS:-results}
array=$(sbatch --parsable --array="0-$((n - 1))" "$@" "$here/sweep.sbatch" "$exp" "$results")
array=${array%%;*} # "id;cluster" on federated clusters
merge=$(sbatch --parsable --dependency="afterok:$array" "$here/merge.sbatch" "$exp" "$results")
echo "array job $array ($n tasks), merge job ${merge%%;*} after it; results in $results/$(basename "$exp" .json)"
