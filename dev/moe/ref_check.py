# The spec's numpy reading (ref_lib) against transformers 5.25 fp32 logits on three tiny random
# models: Qwen3-MoE with a dense layer and norm_topk_prob, without it and with decoder_sparse_step 2,
# and gpt-oss with a sliding window shorter than the prompt, sinks, YaRN and clamped SwiGLU.
from transformers import GptOssConfig, GptOssForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

from ref_lib import compare, gptoss_ref, qwen_ref

qc = Qwen3MoeConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, moe_intermediate_size=24, num_experts=8, num_experts_per_tok=3, norm_topk_prob=True,
    decoder_sparse_step=1, mlp_only_layers=[2], max_position_embeddings=256, rope_theta=1000000.0, rms_norm_eps=1e-6)
compare("qwen3moe", Qwen3MoeForCausalLM, qc, qwen_ref, 20, 1)
qc2 = Qwen3MoeConfig(**{**qc.to_dict(), "norm_topk_prob": False, "decoder_sparse_step": 2, "mlp_only_layers": []})
compare("qwen3moe_nonorm", Qwen3MoeForCausalLM, qc2, qwen_ref, 20, 2)
gc = GptOssConfig(vocab_size=97, hidden_size=64, intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, num_local_experts=8, num_experts_per_tok=2, sliding_window=5, swiglu_limit=1.5,
    max_position_embeddings=512, rope_parameters={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
    "truncate": False, "original_max_position_embeddings": 16, "rope_theta": 150000.0})
compare("gptoss", GptOssForCausalLM, gc, gptoss_ref, 24, 3)
