import torch, numpy as np, json, os, shutil
from safetensors.numpy import load_file, save_file
from transformers import AutoModelForCausalLM, Mxfp4Config
import ref_lib as R
FP4 = np.array([0,.5,1,1.5,2,3,4,6,-0.,-.5,-1,-1.5,-2,-3,-4,-6], dtype=np.float32)
rng = np.random.default_rng(0)
def rand_mx(E, rows, cols):
    G = cols // 32
    blocks = rng.integers(0, 256, size=(E, rows, G, 16), dtype=np.uint8)
    scales = rng.integers(118, 123, size=(E, rows, G), dtype=np.uint8)
    return blocks, scales
def my_dequant(blocks, scales):
    # blocks [E, R, G, 16] -> W [E, R, G*32]; element 2j = low nibble of byte j, 2j+1 = high nibble
    lo = FP4[blocks & 0x0F]; hi = FP4[blocks >> 4]
    vals = np.stack([lo, hi], -1).reshape(*blocks.shape[:-1], 32)       # [E,R,G,32]
    vals = vals * np.exp2(scales.astype(np.int32) - 127)[..., None]
    return vals.reshape(blocks.shape[0], blocks.shape[1], -1)           # [E, R, cols]
src = "gptoss_rand"; dst = "gptoss_mxfp4"
shutil.rmtree(dst, ignore_errors=True); os.makedirs(dst)
W = load_file(f"{src}/model.safetensors"); cfg = json.load(open(f"{src}/config.json"))
E, H, I = cfg["num_local_experts"], cfg["hidden_size"], cfg["intermediate_size"]
mine = {}
for L in range(cfg["num_hidden_layers"]):
    p = f"model.layers.{L}.mlp.experts."
    del W[p+"gate_up_proj"], W[p+"down_proj"]
    b, s = rand_mx(E, 2*I, H); W[p+"gate_up_proj_blocks"], W[p+"gate_up_proj_scales"] = b, s
    mine[p+"gate_up_proj"] = my_dequant(b, s).transpose(0, 2, 1)       # -> [E, H, 2I]
    b, s = rand_mx(E, H, I); W[p+"down_proj_blocks"], W[p+"down_proj_scales"] = b, s
    mine[p+"down_proj"] = my_dequant(b, s).transpose(0, 2, 1)           # -> [E, I, H]
    # scale the random FP4 weights down so activations stay sane: fold into down/gate biases? keep as-is
save_file(W, f"{dst}/model.safetensors", metadata={"format": "pt"})
cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
json.dump(cfg, open(f"{dst}/config.json", "w"))
m = AutoModelForCausalLM.from_pretrained(dst, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager",
                                         quantization_config=Mxfp4Config(dequantize=True)).eval()
sd = m.state_dict()
for k, v in mine.items():
    hf = sd[k].numpy(); print(k, hf.shape, "exact match:", np.array_equal(hf, v.astype(np.float32)))
    break
print("all exact:", all(np.array_equal(sd[k].numpy(), v.astype(np.float32)) for k, v in mine.items()))

os.makedirs("gptoss_mxfp4_deq", exist_ok=True)
W2 = {k: v for k, v in load_file(f"{src}/model.safetensors").items()}
for k, v in mine.items(): W2[k] = np.ascontiguousarray(v.astype(np.float32))
save_file(W2, "gptoss_mxfp4_deq/model.safetensors"); shutil.copy(f"{src}/config.json", "gptoss_mxfp4_deq/config.json")
ids = torch.randint(0, 97, (1, 24), generator=torch.Generator().manual_seed(4))
with torch.no_grad(): lg = m(ids).logits[0].double().numpy()
ref = R.gptoss_ref("gptoss_mxfp4_deq", ids[0].numpy())
print("HF(mxfp4 dequantized) vs numpy ref on my dequant:", np.abs(lg-ref).max()/np.abs(ref).max())
