#!/usr/bin/env python3
"""ncu_step.py - per-kernel device times of decode steps, from an Nsight Compute raw CSV.

Reads the output of
  ncu --clock-control none --cache-control none --csv --page raw \
      --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size  <zipage bench ...>
cuts the kernel list into steps at each embedding kernel (the first op of every forward), and
prints each step's kernel count and summed time, the last step's shares by kind (GEMM,
attention, compression, sampling, elementwise: the --profile shares, without its events), then
its kernels grouped by name and launch shape, largest first. ncu runs kernels one at a time, so the sum leaves out the
gaps between kernels of a real (graph-replayed) step.
Not here: running ncu (bench/run_bench.sh kernels does), plots.
Usage: python3 bench/ncu_step.py NCU_CSV
"""
import collections
import csv
import io
import sys


def load(path):
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    start = [k for k, l in enumerate(lines) if l.startswith('"ID"')]
    if not start:
        sys.exit(f"ncu_step: {path}: no kernel table (no line starting with \"ID\"); did ncu run with --csv --page raw?")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start[0]:]))))
    head, data = rows[0], rows[2:]  # rows[1]: units
    try:
        cols = [head.index(c) for c in ("Kernel Name", "gpu__time_duration.sum", "launch__grid_size", "launch__block_size")]
    except ValueError as e:
        sys.exit(f"ncu_step: {path}: missing column ({e}); pass the --metrics above")
    return [(r[cols[0]], float(r[cols[1]].replace(",", "")), r[cols[2]], r[cols[3]]) for r in data if len(r) == len(head)]


KINDS = (("gemm", ("nvjet", "gemm", "splitkreduce", "cutlass", "sm90_xmma")),
         ("attention", ("attn", "attention", "decode_merge", "prefill_tile")),
         ("compression", ("compact", "score", "key_gather", "plan_", "to_f32", "redundan", "topk")),
         ("sampling", ("sample",)))


def kind_of(name):
    """The op kind of a kernel, by its name (elementwise when no pattern matches)."""
    low = name.lower()
    for kind, pats in KINDS:
        if any(p in low for p in pats):
            return kind
    return "elementwise"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    ks = load(sys.argv[1])
    cuts = [i for i, k in enumerate(ks) if "embed_kernel" in k[0]]
    if not cuts:
        sys.exit(f"ncu_step: {sys.argv[1]}: no embed_kernel launch, so no forward step to cut")
    for a, b in zip(cuts, cuts[1:] + [len(ks)]):
        print(f"step at kernel {a}: {b - a} kernels, {sum(k[1] for k in ks[a:b]) / 1e3:.1f} us")
    last = ks[cuts[-1]:]
    total = sum(k[1] for k in last) or 1.0
    shares = collections.Counter()
    for name, ns, _, _ in last:
        shares[kind_of(name)] += ns
    print("last step, shares: " + ", ".join(f"{k} {shares[k] / total:.3f}" for k in
                                             ("gemm", "attention", "elementwise", "sampling", "compression")))
    groups = collections.defaultdict(lambda: [0, 0.0])
    for name, ns, grid, block in last:
        g = groups[(name[:90], grid, block)]
        g[0] += 1
        g[1] += ns
    print("last step, by kernel:  total us | launches | us each | grid | block | name")
    for (name, grid, block), (n, ns) in sorted(groups.items(), key=lambda x: -x[1][1]):
        print(f"{ns / 1e3:9.1f} | {n:3d} | {ns / n / 1e3:7.1f} | {grid:>7} | {block:>5} | {name}")


if __name__ == "__main__":
    main()
