#!/usr/bin/env bash
# test_moe_hf.sh - the CPU engine on mixture-of-experts checkpoints that transformers wrote itself
# against transformers' own fp32 outputs on them (expected.json: the prompts, the last position's
# logits and the greedy tokens, made with eager attention and eager experts). For every case of
# DATA_DIR/*/: the last position's logits within 1e-5 of the largest |logit| (`zipage logits`) and
# every greedy token identical (`zipage generate --greedy --ignore-eos`, KV block 16, so long
# prompts' attention crosses pages). tests/data/moe (make_moe_goldens.py): Qwen3-MoE, prompts of 7
# and 129 tokens, 32 tokens; 8 experts, top 3, renormalised, a dense layer by mlp_only_layers; 6
# experts, top 2, not renormalised, decoder_sparse_step 2, tied embeddings. tests/data/gptoss
# (make_gptoss_goldens.py): gpt-oss, prompts of 7, 129 and 300 tokens, 48 tokens, so prefill and
# decode cross the sliding windows (16 and 8); attention sinks and every bias random; yarn with and
# without truncation; a SwiGLU clamp that binds; float experts and MXFP4 experts.
# Usage: test_moe_hf.sh ZIPAGE_BINARY DATA_DIR SCRATCH_DIR
set -u
Z=${1:?zipage binary}; DATA=${2:?tests/data/moe}; T=${3:?scratch}/hf_$(basename "$DATA")
rm -rf "$T"; mkdir -p "$T"
fail=0
for d in "$DATA"/*/; do
  name=$(basename "$d")
  n_cases=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['cases']))" "$d/expected.json") || exit 1
  for i in $(seq 0 $((n_cases - 1))); do
    n_greedy=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['cases'][int(sys.argv[2])]['greedy']))" "$d/expected.json" "$i") || exit 1
    ids=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['cases'][int(sys.argv[2])]['prompt_ids'])))" "$d/expected.json" "$i")
    "$Z" logits --model "$d/model" --prompt-ids "$ids" --out "$T/${name}_logits_$i.json" >/dev/null || { echo "test_moe_hf: $name case $i: zipage logits failed"; fail=1; continue; }
    "$Z" generate --model "$d/model" --prompt-ids "$ids" --greedy --ignore-eos --max-tokens "$n_greedy" --block-size 16 \
      --out "$T/${name}_greedy_$i.json" >/dev/null || { echo "test_moe_hf: $name case $i: zipage generate failed"; fail=1; continue; }
    python3 - "$d/expected.json" "$i" "$T/${name}_logits_$i.json" "$T/${name}_greedy_$i.json" "$name" <<'PY' || fail=1
import json, sys
exp = json.load(open(sys.argv[1]))["cases"][int(sys.argv[2])]
ours = json.load(open(sys.argv[3]))
mine = ours["logits"][-1]
ref = exp["logits"]
assert len(mine) == len(ref), f"{len(mine)} logits against {len(ref)}"
scale = max(abs(x) for x in ref)
diff = max(abs(a - b) for a, b in zip(mine, ref))
g_ours = json.load(open(sys.argv[4]))["samples"][0]["tokens"]
g_ref = exp["greedy"]
agree = 0
while agree < min(len(g_ours), len(g_ref)) and g_ours[agree] == g_ref[agree]:
    agree += 1
ok = diff <= 1e-5 * scale and agree == len(g_ref) == len(g_ours)
print(f"  {sys.argv[5]:15s} prompt {len(exp['prompt_ids']):4d}: max|dlogit| {diff:.3e} (max|logit| {scale:.3f}, rel {diff / scale:.2e}); "
      f"greedy {agree}/{len(g_ref)} identical  {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
  done
done
[ $fail -eq 0 ] && echo "test_moe_hf: all checks passed" || echo "test_moe_hf: FAILED"
exit $fail
