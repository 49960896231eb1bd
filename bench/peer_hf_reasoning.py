#!/usr/bin/env python3
"""peer_hf_reasoning.py - a transformers peer of `zipage bench --workload reasoning`.

Runs the very requests of a zipage reasoning run (`zipage bench ... --workload reasoning
--dump-workload F` writes them: prompt token ids through the chat template, tokens to generate)
on transformers' continuous batching (ContinuousBatchingManager: a paged KV cache of
--kv-gib of K/V blocks, the same bytes `zipage bench --pools 9GiB` gives its full-KV engine;
CUDA graphs captured before the clock starts), full KV, EOS ignored, sampling as zipage's
reasoning workload (T 0.6, top-p 0.95, top-k 20). A run can be cut at --max-seconds, as
zipage's: the tokens of unfinished requests count up to the cut. Writes `zipage bench`'s CSV
columns (those transformers cannot report are 0; `tokens` counts generated tokens only),
label hf-continuous by default, the pool as
zipage writes it (9GiB), so bench/plot_pool.sh draws it next to Zipage and full KV. Run on the
GPU machine:

    zipage bench --preset Qwen3-8B --workload reasoning --requests 256 --max-tokens 32768 --dump-workload wl.jsonl
    python3 bench/peer_hf_reasoning.py --preset Qwen3-8B --workload-file wl.jsonl --kv-gib 9 --max-seconds 200 \\
        --warmup-seconds 60 --csv bench.csv

Not here: the fixed workload (peer_hf.py), compression (transformers has none).
"""
import argparse
import json
import sys
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

from peer_hf import COLUMNS, kv_token_bytes, model_folder, write_row


def load_workload(path):
    """[(prompt ids, tokens to generate)] from the JSON lines of --dump-workload; exits naming a bad line."""
    reqs = []
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"peer_hf_reasoning: cannot open {path}: {e.strerror}")
    with f:
        for i, line in enumerate(f, 1):
            try:
                r = json.loads(line)
                p, g = r["prompt"], r["gen"]
                if not isinstance(p, list) or not p or not all(isinstance(t, int) and t >= 0 for t in p):
                    raise ValueError("prompt is not a non-empty list of token ids")
                if not isinstance(g, int) or g < 1:
                    raise ValueError("gen is not a positive integer")
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"peer_hf_reasoning: {path}:{i}: not a workload line ({e})")
            reqs.append((p, g))
    if not reqs:
        sys.exit(f"peer_hf_reasoning: {path} holds no requests")
    return reqs


def in_flight_tokens(manager):
    """Tokens generated so far by the requests the manager holds unfinished (its scheduler's
    active and waiting ones; read while its thread runs, so a changing dict is read again)."""
    sched = manager.batch_processor.scheduler
    for _ in range(100):
        try:
            return sum(len(s.generated_tokens) for d in (sched.active_requests, sched.waiting_requests) for s in list(d.values()))
        except RuntimeError:
            continue
    sys.exit("peer_hf_reasoning: could not read the scheduler's requests")


def run(model, reqs, gc, cbc, max_seconds, warmup_seconds):
    """Adds every request, collects results until all finish or max_seconds pass. Returns
    (wall, generated tokens, finished requests, tokens/s after warmup_seconds or 0). Generated
    tokens count up to the cut, unfinished requests included."""
    from transformers.generation.continuous_batching.utils import WorkloadHints
    hints = WorkloadHints(max_prompt_length=max(len(p) for p, _ in reqs), max_generated_length=max(g for _, g in reqs),
                          num_requests=len(reqs))
    want = {f"r{i}": g for i, (_, g) in enumerate(reqs)}
    with model.continuous_batching_context_manager(generation_config=gc, continuous_batching_config=cbc, block=True, timeout=60,
                                                   warmup=True, workload_hints=hints) as m:
        t0 = time.perf_counter()
        for i, (p, g) in enumerate(reqs):
            if m.add_request(p, request_id=f"r{i}", max_new_tokens=g) is None:
                sys.exit(f"peer_hf_reasoning: the manager refused request r{i}")
        done, steady = {}, None
        while len(done) < len(reqs):
            now = time.perf_counter() - t0
            if steady is None and warmup_seconds > 0 and now >= warmup_seconds:
                steady = (now, sum(done.values()) + in_flight_tokens(m))
            if max_seconds and now >= max_seconds:
                break
            r = m.get_result(timeout=0.2)
            if r is None:
                if not m.is_running():
                    sys.exit("peer_hf_reasoning: the generation thread stopped before every request finished")
                continue
            if r.error is not None:
                sys.exit(f"peer_hf_reasoning: request {r.request_id} failed: {r.error}")
            if r.is_finished():
                if len(r.generated_tokens) != want[r.request_id]:
                    sys.exit(f"peer_hf_reasoning: request {r.request_id} generated {len(r.generated_tokens)} tokens, "
                             f"not {want[r.request_id]} (EOS must be ignored)")
                done[r.request_id] = len(r.generated_tokens)
        wall = time.perf_counter() - t0
        tokens = sum(done.values()) + (in_flight_tokens(m) if len(done) < len(reqs) else 0)
        if len(done) < len(reqs):
            m.stop(block=True, hard_stop=True)  # cut: the unfinished requests are dropped
    tps_steady = (tokens - steady[1]) / (wall - steady[0]) if steady and wall > steady[0] else 0.0
    return wall, tokens, len(done), tps_steady


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", required=True, help="a folder of models/ (or any folder with config.json)")
    ap.add_argument("--workload-file", required=True, help="JSON lines of `zipage bench --dump-workload`")
    ap.add_argument("--kv-gib", type=float, required=True, help="GiB of K/V blocks (zipage's --pools 9GiB: 9)")
    ap.add_argument("--block-size", type=int, default=256)
    ap.add_argument("--max-batch-tokens", type=int, default=8192, help="tokens per step (prefill chunks)")
    ap.add_argument("--max-seconds", type=float, default=0, help="cut the run there (0: run every request to its end)")
    ap.add_argument("--warmup-seconds", type=float, default=0, help="tps_steady counts the tokens after this")
    ap.add_argument("--temperature", type=float, default=0.6)
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--attn", default="paged|sdpa")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", help="append the row to this file (header when new)")
    ap.add_argument("--label", default="hf-continuous")
    a = ap.parse_args()
    if a.kv_gib <= 0 or a.block_size < 1 or a.max_batch_tokens < 1 or a.max_seconds < 0 or a.warmup_seconds < 0:
        sys.exit("peer_hf_reasoning: --kv-gib, --block-size and --max-batch-tokens must be positive, the seconds not negative")
    folder = model_folder(a.preset)
    reqs = load_workload(a.workload_file)
    torch.manual_seed(a.seed)
    cfg = AutoConfig.from_pretrained(folder)
    if max(t for p, _ in reqs for t in p) >= cfg.vocab_size:
        sys.exit(f"peer_hf_reasoning: {a.workload_file} has token ids beyond the vocabulary of {folder} ({cfg.vocab_size})")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16 if device == "cuda" else torch.float32,
                                                 attn_implementation=a.attn).eval()
    kv_token = kv_token_bytes(cfg, 2 if device == "cuda" else 4)
    num_blocks = int(a.kv_gib * 2**30 // (a.block_size * kv_token))
    if num_blocks < 1:
        sys.exit(f"peer_hf_reasoning: {a.kv_gib} GiB holds no block of {a.block_size} tokens")
    from transformers.generation import ContinuousBatchingConfig, GenerationConfig
    sampling = dict(do_sample=True, temperature=a.temperature, top_p=a.top_p, top_k=a.top_k) if a.temperature > 0 else {}
    gc = GenerationConfig(eos_token_id=None, pad_token_id=0, max_new_tokens=max(g for _, g in reqs), **sampling)
    cbc = ContinuousBatchingConfig(block_size=a.block_size, num_blocks=num_blocks, max_batch_tokens=a.max_batch_tokens, seed=a.seed)
    wall, tokens, finished, tps_steady = run(model, reqs, gc, cbc, a.max_seconds, a.warmup_seconds)
    n = len(reqs)
    row = dict.fromkeys(COLUMNS, 0)
    row.update(label=a.label, device=device, model=folder.rstrip("/").split("/")[-1], workload="reasoning", requests=n,
               prompt_mean=f"{sum(len(p) for p, _ in reqs) / n:.1f}", gen_mean=f"{sum(g for _, g in reqs) / n:.1f}", policy="full",
               block_size=a.block_size, kv_blocks=num_blocks, wall_s=f"{wall:.3f}", tokens=tokens, tps=f"{tokens / wall:.1f}",
               req_per_s=f"{finished / wall:.3f}", pool=f"{a.kv_gib:g}GiB",
               kv_state_gib=f"{num_blocks * a.block_size * kv_token / 2**30:.6f}", finished=finished, tps_steady=f"{tps_steady:.1f}", tp=1,
               kv_dtype="auto")
    if a.max_seconds and finished < n:
        print(f"# stopped after {wall:.1f} s (--max-seconds): {finished} of {n} requests finished")
    print(f"# peer_hf_reasoning: transformers {transformers.__version__} continuous batching, paged cache of {num_blocks} blocks "
          f"of {a.block_size} ({a.kv_gib:g} GiB of K/V), attention {a.attn}, {device} (torch {torch.__version__})")
    write_row(row, a.csv)


if __name__ == "__main__":
    main()
