#!/usr/bin/env python3
"""peer_hf.py - the Hugging Face transformers peer of `zipage bench --workload fixed`.

Same shape (a preset's config.json from models/, random bf16 weights made on the GPU), same
fixed workload (batch B, P random prompt tokens, exactly T new tokens: EOS ignored), greedy,
by one of two transformers engines: `--engine generate` (default), generate() with the static
KV cache (compiled by torch.compile when the cache is static, unless --no-compile); `--engine
continuous`, generate_batch(): continuous batching over a paged KV cache (blocks of
--block-size tokens, attention "paged|sdpa" unless --attn), CUDA graphs captured by a warm-up
run whose manager is kept for the timed runs. Writes the CSV columns of
`zipage bench` (those transformers cannot report are 0), so the two rows sit side by side in
one file. Run on the GPU machine (torch + transformers there), in the same call as zipage
bench, and compare ratios only:

    python3 bench/peer_hf.py --preset Qwen3-8B --batch 256 --prompt 256 --gen 256 --csv bench.csv
"""
import argparse
import csv
import os
import sys
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

COLUMNS = ("label,device,model,workload,requests,prompt_mean,gen_mean,policy,nmax,window,block_size,kv_blocks,async,prefix_cache,"
           "wall_s,tokens,tps,prefill_tok_s,decode_tok_s,req_per_s,mean_running,peak_running,decode_steps,decode_step_ms,share_gemm,share_attention,"
           "share_elementwise,share_sampling,share_compression,share_host,device_mem_gib,peak_rss_mib,copy_gbps,"
           "step_gbytes_mean,roofline_ratio,compressions,tps_saturated,pool,kv_state_gib,finished,tps_steady,tp,admission_reserve,"
           "length_scale,preemptions,completion_s,latency_p50_s,latency_p90_s,latency_p99_s,kv_dtype,matmul_tflops,roofline_compute_ratio,"
           "gemm_roof_share,attention_roof_share,graph_replay_share").split(",")


def copy_bandwidth():
    """Bytes read + written per second of a 1 GiB device copy, median of 9 (as zipage bench)."""
    a = torch.ones(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    b.copy_(a)
    times = []
    for i in range(9):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        (a if i % 2 else b).copy_(b if i % 2 else a)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e-3)
    return 2.0 * a.numel() / sorted(times)[4]


def compiled_graphs():
    """Graphs torch.compile has produced so far (0: generate ran eagerly), or -1 if unknown."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"])
    except Exception:  # the counters are internal; their absence must not stop the benchmark
        return -1


def model_folder(preset):
    """A folder of models/ by name, or any folder holding a config.json."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
    folder = preset if os.path.isdir(preset) else os.path.join(root, preset)
    if not os.path.isfile(os.path.join(folder, "config.json")):
        sys.exit(f"peer_hf: {folder}/config.json not found")
    return folder


def kv_token_bytes(cfg, elem_bytes):
    """Bytes of one token's K and V over all layers (as zipage bench's kv_token_bytes)."""
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * elem_bytes


def write_row(row, path):
    """Prints the row under its header, and appends it to path (header when new) if given."""
    w = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerow(row)
    if path:
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        with open(path, "a", newline="") as f:
            cw = csv.DictWriter(f, COLUMNS, lineterminator="\n")
            if new:
                cw.writeheader()
            cw.writerow(row)


def timed_generate(model, ids, mask, new_tokens, compile_):
    kw = dict(attention_mask=mask, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
              cache_implementation="static", pad_token_id=0)
    if not compile_:
        kw["disable_compile"] = True
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(ids, **kw)
    torch.cuda.synchronize()
    return time.perf_counter() - t0, out


def timed_batch(model, ids, new_tokens, block_size, warm):
    """generate_batch on the rows of ids (a [B, P] tensor), exactly new_tokens each (no EOS).
    warm: the first call, which captures the CUDA graphs and keeps its manager for the next."""
    from transformers.generation import ContinuousBatchingConfig, GenerationConfig
    gc = GenerationConfig(max_new_tokens=new_tokens, do_sample=False, eos_token_id=None, pad_token_id=0)
    cbc = ContinuousBatchingConfig(block_size=block_size, max_batch_tokens=max(ids.shape[0] * ids.shape[1], 8192),
                                   max_requests_per_batch=ids.shape[0])
    rows = ids.tolist()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate_batch(inputs=rows, generation_config=gc, continuous_batching_config=cbc, warmup=warm,
                               persistent_manager=True, max_new_tokens=new_tokens)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    got = [len(r.generated_tokens) for r in out.values()]
    if len(got) != len(rows) or any(n != new_tokens for n in got):
        sys.exit(f"peer_hf: generate_batch returned {len(got)} of {len(rows)} requests, lengths {sorted(set(got))} "
                 f"(wanted {new_tokens} each)")
    return wall, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", required=True, help="a folder of models/ (or any folder with config.json)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--engine", choices=("generate", "continuous"), default="generate",
                    help="generate(): static cache, compiled; continuous: generate_batch() over a paged cache")
    ap.add_argument("--block-size", type=int, default=256, help="continuous: tokens per KV block")
    ap.add_argument("--attn", default="paged|sdpa", help="continuous: attention implementation")
    ap.add_argument("--csv", help="append the row to this file (header when new)")
    ap.add_argument("--label", default="hf-static")
    a = ap.parse_args()
    folder = model_folder(a.preset)
    torch.manual_seed(a.seed)
    cfg = AutoConfig.from_pretrained(folder)
    cont = a.engine == "continuous"
    with torch.device("cuda"):
        kw = dict(attn_implementation=a.attn) if cont else {}
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, **kw).eval()
    params = sum(p.numel() for p in model.parameters())
    ids = torch.randint(3, cfg.vocab_size, (a.batch, a.prompt), device="cuda")
    mask = torch.ones_like(ids)
    bw = copy_bandwidth()
    compile_ = not a.no_compile
    if cont:  # not under inference_mode: the manager's thread resets tensors made here
        timed_batch(model, ids, a.gen, a.block_size, True)                 # warm-up: graphs captured, manager kept
        prefill, _ = timed_batch(model, ids, 1, a.block_size, False)
        torch.cuda.reset_peak_memory_stats()
        wall, _ = timed_batch(model, ids, a.gen, a.block_size, False)
    else:
        with torch.inference_mode():
            timed_generate(model, ids, mask, min(8, a.gen), compile_)      # warm-up (and compilation)
            timed_generate(model, ids, mask, a.gen, compile_)              # warm-up of the full length
            prefill, _ = timed_generate(model, ids, mask, 1, compile_)
            torch.cuda.reset_peak_memory_stats()
            wall, out = timed_generate(model, ids, mask, a.gen, compile_)
        assert out.shape[1] == a.prompt + a.gen, out.shape
    decode = max(wall - prefill, 1e-9)
    steps = max(a.gen - 1, 1)
    kv_token = kv_token_bytes(cfg, 2)
    kv_attended = sum(a.batch * (a.prompt + t + 1) for t in range(1, a.gen))
    # bytes a decode step must read, as zipage bench counts them: the weights, an untied
    # embedding table only at the batch's rows, and the K/V attended
    table = 0 if getattr(cfg, "tie_word_embeddings", False) else cfg.vocab_size * cfg.hidden_size
    step_bytes = (2 * (params - table + a.batch * cfg.hidden_size) * steps + kv_token * kv_attended) / steps
    row = dict.fromkeys(COLUMNS, 0)
    row.update(label=a.label, device="cuda", model=os.path.basename(os.path.normpath(folder)), workload="fixed", requests=a.batch,
               prompt_mean=f"{a.prompt:.1f}", gen_mean=f"{a.gen:.1f}", policy="full", wall_s=f"{wall:.3f}",
               tokens=a.batch * (a.prompt + a.gen), tps=f"{a.batch * a.gen / wall:.1f}",
               prefill_tok_s=f"{a.batch * a.prompt / prefill:.1f}", decode_tok_s=f"{a.batch * (a.gen - 1) / decode:.1f}", req_per_s=f"{a.batch / wall:.3f}",
               mean_running=a.batch, peak_running=a.batch, decode_steps=steps, decode_step_ms=f"{1e3 * decode / steps:.3f}",
               device_mem_gib=f"{torch.cuda.max_memory_allocated() / 2**30:.2f}", copy_gbps=f"{bw / 1e9:.1f}",
               step_gbytes_mean=f"{step_bytes / 1e9:.3f}", roofline_ratio=f"{step_bytes * steps / bw / decode:.3f}",
               block_size=a.block_size if cont else 0,
               pool="", kv_state_gib=0 if cont else f"{a.batch * (a.prompt + a.gen) * kv_token / 2**30:.6f}",  # the static cache
               finished=a.batch, tps_steady=f"{a.batch * a.gen / wall:.1f}", tp=1, kv_dtype="auto")
    graphs = compiled_graphs()
    how = (f"generate_batch, paged cache (blocks of {a.block_size}, attention {a.attn}), CUDA graphs" if cont else
           f"generate, static cache, {'compile requested' if compile_ else 'eager'} ({graphs} torch.compile graphs were built)")
    print(f"# peer_hf: transformers {how}, bf16, {params / 1e9:.2f} B parameters (torch {torch.__version__}, "
          f"transformers {transformers.__version__})")
    write_row(row, a.csv)


if __name__ == "__main__":
    main()
