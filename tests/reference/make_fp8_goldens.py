#!/usr/bin/env python3
"""make_fp8_goldens.py - golden fp8 E4M3 conversions for tests/test_fp8.c, from ml_dtypes'
float8_e4m3fn (the JAX project's numpy types: round to nearest even, the same format as torch's
float8_e4m3fn), applied after clamping to +-448 as a KV cache quantizes (vLLM clamps to the type's
range before its cast). Writes tests/data/fp8/:
  e4m3_from_bf16.bin  65,536 bytes: the E4M3 byte of every bf16 bit pattern (as fp32), in order
  e4m3_from_f32.bin   records of (uint32 fp32 bits, uint8 E4M3 byte), little-endian: every
                      halfway point between neighbouring E4M3 values and one fp32 ulp either side,
                      both signs, plus 40,000 seeded random fp32 patterns of magnitude below 2^10
  e4m3_to_f32.bin     256 x uint32: the fp32 bits of every E4M3 byte (NaN as ml_dtypes gives it)
Usage: .venv-grade/bin/python tests/reference/make_fp8_goldens.py   (needs numpy and ml_dtypes)
It does not check our conversions; tests/test_fp8.c does. The same files from torch's
float8_e4m3fn on the GPU machine: tests/device/check_fp8_torch.py."""
import os
import ml_dtypes
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "fp8")
E4M3 = ml_dtypes.float8_e4m3fn


def to_e4m3(x):
    return np.clip(x.astype(np.float32), -448, 448).astype(E4M3).view(np.uint8)


def main():
    os.makedirs(OUT, exist_ok=True)
    bf16 = (np.arange(65536, dtype=np.uint32) << 16).view(np.float32)
    to_e4m3(bf16).tofile(f"{OUT}/e4m3_from_bf16.bin")
    vals = np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float32)
    vals.view(np.uint32).tofile(f"{OUT}/e4m3_to_f32.bin")
    pos = np.sort(np.unique(vals[np.isfinite(vals) & (vals >= 0)]))
    mids = ((pos[:-1].astype(np.float64) + pos[1:]) / 2).astype(np.float32)  # exact: neighbours differ by a power of two
    around = np.concatenate([mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(1e9))])
    rng = np.random.default_rng(20261203)
    rand = rng.integers(0, 0x44800000, 40000, dtype=np.uint32).view(np.float32)  # magnitudes below 2^10
    x = np.concatenate([around, -around, rand, -rand[:20000]]).astype(np.float32)
    rec = np.zeros(len(x), dtype=[("bits", "<u4"), ("e4m3", "u1")])
    rec["bits"], rec["e4m3"] = x.view(np.uint32), to_e4m3(x)
    rec.tofile(f"{OUT}/e4m3_from_f32.bin")
    print(f"make_fp8_goldens: ml_dtypes {ml_dtypes.__version__}: 65,536 bf16 patterns, {len(x)} fp32 cases, 256 decodes")


if __name__ == "__main__":
    main()
