#!/usr/bin/env python3
"""check_fp8_torch.py - the fp8 goldens of tests/data/fp8/ (ml_dtypes' float8_e4m3fn after a clamp
to +-448, tests/reference/make_fp8_goldens.py) against torch's float8_e4m3fn on the GPU machine
(issue 39: the conversion checked against torch on every bf16 pattern and the fp32 cases): the same
clamp, then torch's cast on the CPU and on the GPU, byte for byte (NaN's sign not compared), and
every E4M3 byte decoded by torch. test_fp8 checks our C conversions against the same files, so a
pass here ties them to torch. Run from the repository root: python3 tests/device/check_fp8_torch.py"""
import sys
import numpy as np
import torch

D = "tests/data/fp8"


def cast(x, dev):
    t = torch.from_numpy(np.ascontiguousarray(x)).to(dev).clamp(-448, 448).to(torch.float8_e4m3fn)
    return t.view(torch.uint8).cpu().numpy()


def same(got, want):
    nan = ((got & 0x7F) == 0x7F) & ((want & 0x7F) == 0x7F)
    return int(np.count_nonzero((got != want) & ~nan))


def main():
    bf16 = (np.arange(65536, dtype=np.uint32) << 16).view(np.float32)
    want_bf = np.fromfile(f"{D}/e4m3_from_bf16.bin", dtype=np.uint8)
    rec = np.fromfile(f"{D}/e4m3_from_f32.bin", dtype=[("bits", "<u4"), ("e4m3", "u1")])
    x = np.ascontiguousarray(rec["bits"]).view(np.float32)
    dec = np.fromfile(f"{D}/e4m3_to_f32.bin", dtype=np.uint32).view(np.float32)
    tdec = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float().numpy()
    bad = int(np.count_nonzero(~((tdec == dec) | (np.isnan(tdec) & np.isnan(dec)))))
    devs = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for dev in devs:
        bad += same(cast(bf16, dev), want_bf) + same(cast(x, dev), rec["e4m3"])
    print(f"check_fp8_torch: torch {torch.__version__} on {', '.join(devs)}: 65,536 bf16 patterns, {len(x)} fp32 cases, "
          f"256 decodes: {bad} differ from the goldens")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
