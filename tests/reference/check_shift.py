#!/usr/bin/env python3
"""check_shift.py - the harness's StreamingLLM, with and without its position shift, against
ref_streaming_shift.py (the authors' attention and cache, ported): on fp32 tiny-qwen3 and
tiny-llama checkpoints, one request of 40 + 200 tokens at block 16, N_max 4 (ten compressions),
the oracle replays the harness's tokens in the same mode and must give the same logits (max
difference <= 2e-5 of the largest logit) and the same greedy token at every step, after as many
trims as the harness made compressions. The other mode's oracle must differ (max difference
>= 0.05 of the largest logit): the comparison sees the positions. Exit 1 on a failure.

    python3 tests/reference/check_shift.py build/tests/shift_dump
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_streaming_shift as ref  # noqa: E402

BLOCK, NMAX, SINK = 16, 4, 4


def read_run(prefix, vocab):
    with open(prefix + ".tokens") as f:
        lines = f.read().split("\n")
    prompt, gen, comps = [int(t) for t in lines[0].split()], [int(t) for t in lines[1].split()], int(lines[2])
    logits = np.fromfile(prefix + ".logits", dtype="<f4").reshape(-1, vocab).astype(np.float64)
    return prompt, gen, comps, logits


def main():
    dump, bad = sys.argv[1], 0
    with tempfile.TemporaryDirectory() as tmp:
        for preset in ["tiny-qwen3", "tiny-llama"]:
            folder = os.path.join(tmp, preset)
            subprocess.run([dump, "mkmodel", preset, folder], check=True)
            model = ref.Model(folder)
            vocab = model.lm_head.shape[0]
            for shift in [1, 0]:
                prefix = os.path.join(tmp, f"{preset}.{shift}")
                subprocess.run([dump, "run", folder, str(shift), prefix], check=True)
                prompt, gen, comps, got = read_run(prefix, vocab)
                want, trims = ref.replay(model, prompt, gen, shift, BLOCK, NMAX, SINK)
                other, _ = ref.replay(model, prompt, gen, 1 - shift, BLOCK, NMAX, SINK)
                scale = np.abs(want).max()
                diff, apart = np.abs(got - want).max() / scale, np.abs(got - other).max() / scale
                same_argmax = int((got.argmax(-1) == want.argmax(-1)).sum())
                greedy = bool((np.array(gen) == got.argmax(-1)).all())
                ok = (got.shape == want.shape and diff <= 2e-5 and same_argmax == len(gen) and greedy and comps == trims and
                      comps >= 10 and apart >= 0.05)
                bad += not ok
                print(f"check_shift: {preset} position_shift {bool(shift)}: {len(gen)} steps, {comps} compressions "
                      f"(oracle {trims} trims), max |logit diff| {diff:.2e} of the largest, argmax equal {same_argmax}/{len(gen)}; "
                      f"the other mode's oracle {apart:.2e} away{'' if ok else '  <-- FAIL'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
