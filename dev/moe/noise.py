import torch, numpy as np
from transformers import AutoModelForCausalLM
for d, T, seed in [("qwen3moe_rand", 20, 1), ("gptoss_rand", 24, 3)]:
    ids = torch.randint(0, 97, (1, T), generator=torch.Generator().manual_seed(seed + 1))
    out = {}
    for dt in [torch.float32, torch.float64]:
        m = AutoModelForCausalLM.from_pretrained(d, dtype=dt, attn_implementation="eager", experts_implementation="eager").eval()
        with torch.no_grad(): out[dt] = m(ids, output_hidden_states=True)
    a, b = out[torch.float32].logits[0].double(), out[torch.float64].logits[0]
    err = (a-b).abs()
    print(d, "HF fp32 vs HF fp64 rel", (err.max()/b.abs().max()).item(), "per-pos max", [f"{x:.1e}" for x in (err.max(-1).values/b.abs().max()).tolist()])
    for i,(h32,h64) in enumerate(zip(out[torch.float32].hidden_states, out[torch.float64].hidden_states)):
        print("   hidden", i, f"{((h32.double()-h64).abs().max()/h64.abs().max()).item():.2e}", f"max|h|={h64.abs().max().item():.1f}")
