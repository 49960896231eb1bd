#!/usr/bin/env bash
# bench/log/s16/call1.sh: call 1 of session 16: the GPU suites (now with test_tp_cuda: TP 2 and 4 ranks as threads with CUDA
# backends of the one GPU, fp32, against TP 1), a cuda tiny sweep run plainly and with --gpus 0 (same rows and samples), --gpus 0,1
# on this one-GPU machine (the worker of GPU 1 must fail, named), and a probe of the NCCL that PyTorch brings
set -uo pipefail
timeout 360 bash tests/device/run_gpu_tests.sh --suites > $OUT/suites.log 2>&1; echo "suites rc=$?"
grep -E "test_tp|test_cuda_.*(Passed|Failed)|tests passed|failed|ERROR SUMMARY|CHECK failed" $OUT/suites.log | head -40
python3 - <<'PY'
import json
e = json.load(open("tests/data/experiments/tiny_sweep.json")); e["device"] = "cuda"
json.dump(e, open("/tmp/cuda_sweep.json", "w"))
PY
Z=build-gpu/zipage
$Z run /tmp/cuda_sweep.json --results /tmp/plain > $OUT/plain.log 2>&1; echo "plain rc=$?"
$Z run /tmp/cuda_sweep.json --results /tmp/gpus --gpus 0 > $OUT/gpus.log 2>&1; echo "gpus 0 rc=$?"; cat $OUT/gpus.log; tail -3 /tmp/gpus/cuda_sweep/logs/gpu0.log
python3 - <<'PY'
import csv
timing = {"time", "wall_seconds", "tps", "requests_per_s", "compression_seconds"}
rows = lambda p: sorted(tuple((k, v) for k, v in r.items() if k not in timing) for r in csv.DictReader(open(p)))
a, b = rows("/tmp/plain/cuda_sweep/runs.csv"), rows("/tmp/gpus/cuda_sweep/runs.csv")
sa, sb = sorted(open("/tmp/plain/cuda_sweep/samples.jsonl")), sorted(open("/tmp/gpus/cuda_sweep/samples.jsonl"))
print("runs", len(a), "rows equal:", a == b, "| samples", len(sa), "equal:", sa == sb, "| device column:", {dict(r)["device"] for r in a})
PY
$Z run /tmp/cuda_sweep.json --results /tmp/gpus2 --gpus 0,1 > $OUT/gpus01.log 2>&1; echo "gpus 0,1 rc=$? (expected non-zero on one GPU)"; tail -4 $OUT/gpus01.log
echo "== NCCL here"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())" 2>&1 | tail -1
find / -xdev \( -name 'libnccl.so*' -o -name 'nccl.h' \) 2>/dev/null | head; pip list 2>/dev/null | grep -i nccl
