import torch, json, os
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM, GptOssConfig, GptOssForCausalLM
from safetensors import safe_open
torch.manual_seed(0)
qc = Qwen3MoeConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16, moe_intermediate_size=32,
    num_experts=8, num_experts_per_tok=3, norm_topk_prob=True, decoder_sparse_step=2, mlp_only_layers=[3],
    max_position_embeddings=256, rope_theta=10000.0, rms_norm_eps=1e-6)
m = Qwen3MoeForCausalLM(qc).float().eval()
print("qwen attn impl", m.config._attn_implementation, "experts impl", m.config._experts_implementation)
m.save_pretrained("qwen3moe_tiny")
gc = GptOssConfig(vocab_size=128, hidden_size=64, intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, num_local_experts=8, num_experts_per_tok=2, sliding_window=6,
    max_position_embeddings=256, rope_parameters={"rope_type":"yarn","factor":8.0,"beta_fast":32.0,"beta_slow":1.0,"truncate":False,"original_max_position_embeddings":32, "rope_theta":150000.0})
g = GptOssForCausalLM(gc).float().eval()
print("gptoss attn impl", g.config._attn_implementation, "experts impl", g.config._experts_implementation)
g.save_pretrained("gptoss_tiny")
for d in ["qwen3moe_tiny","gptoss_tiny"]:
    print("==", d, sorted(os.listdir(d)))
    with safe_open(f"{d}/model.safetensors","pt") as f:
        for k in sorted(f.keys()):
            if ".layers.0." in k or ".layers.1." in k or "layers" not in k:
                t=f.get_tensor(k); print(k, tuple(t.shape), t.dtype)
    print(json.dumps(json.load(open(f"{d}/config.json")), indent=None))
