#!/usr/bin/env python3
"""same_rows.py A.csv B.csv N: exit 0 when two runs.csv files hold the same N rows (every column
but the timing ones, in any order): a sweep split over processes, GPUs or shards against the
same sweep run in one process. Used by test_experiment.sh and test_slurm.sh."""
import csv
import sys

TIMING = {"time", "wall_seconds", "tps", "requests_per_s", "compression_seconds"}


def rows(path):
    return sorted(tuple((k, v) for k, v in r.items() if k not in TIMING) for r in csv.DictReader(open(path)))


a, b = rows(sys.argv[1]), rows(sys.argv[2])
if len(a) != int(sys.argv[3]) or a != b:
    print(f"same_rows: {sys.argv[1]} ({len(a)} rows) and {sys.argv[2]} ({len(b)} rows) differ", file=sys.stderr)
    sys.exit(1)
