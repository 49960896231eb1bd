#!/usr/bin/env python3
"""triattention_stats.py - TriAttention's calibrated query statistics from the authors' `.pt` file
(WeianMao/triattention: scripts/calibrate.py:251-271 writes it, methods/pruning_utils.py:336-359
reads it) to the harness's safetensors layout (docs/triattention.md), without torch.

The `.pt` is torch's zip format: a pickle (`<name>/data.pkl`) of {"metadata": {...}, "stats":
{"layerLL_headHH": {"q_mean_real", "q_mean_imag", "q_abs_mean": float32 [F]}}} whose tensors point
at raw storages (`<name>/data/<key>`). It is read with a restricted unpickler: only torch's tensor
rebuild, its typed storages and OrderedDict are accepted, nothing is executed.

Out: tensors `layer.<l>.q_mean_real`, `layer.<l>.q_mean_imag`, `layer.<l>.q_abs_mean`, float32
[num_heads, head_dim / 2] for every layer, and metadata format, num_layers, num_heads, head_dim,
source. Refused, each by name: a rope style other than "half", a head_dim that is not twice the
vectors' length, a layer missing a query head, a vector of another length, a non-float32 tensor.

Usage: triattention_stats.py STATS.pt OUT.safetensors [--layers L --heads H] (check against a model)
"""
import argparse
import json
import pickle
import struct
import sys
import zipfile

import numpy as np

STORAGES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16, "BFloat16Storage": None,
            "LongStorage": np.int64, "IntStorage": np.int32}


class Refused(Exception):
    pass


def _rebuild_tensor(storage, offset, size, stride, *_):
    if not size:
        return storage[offset:offset + 1].reshape(())
    need = offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1
    if need > storage.size:
        raise Refused(f"a tensor of shape {tuple(size)} reaches past its storage of {storage.size} elements")
    item = storage.itemsize
    return np.lib.stride_tricks.as_strided(storage[offset:], shape=tuple(size), strides=tuple(s * item for s in stride)).copy()


class _Storage:
    def __init__(self, name):
        self.name = name


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, archive, root):
        super().__init__(data)
        self.archive, self.root = archive, root

    def find_class(self, module, name):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in STORAGES:
            return _Storage(name)
        if module == "collections" and name == "OrderedDict":
            import collections
            return collections.OrderedDict
        raise Refused(f"the pickle asks for {module}.{name}, which a statistics file has no use for")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage" and isinstance(pid[1], _Storage)):
            raise Refused(f"an unknown persistent id {pid!r:.80}")
        dtype = STORAGES[pid[1].name]
        if dtype is None:
            raise Refused(f"a {pid[1].name}: the statistics must be float32")
        raw = self.archive.read(f"{self.root}/data/{pid[2]}")
        return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))


def load_pt(path):
    """The authors' {"metadata", "stats"} dict with numpy arrays for its tensors."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise Refused(f"{path}: not a torch zip file ({e})")
    pkl = [n for n in archive.namelist() if n.endswith("/data.pkl")]
    if len(pkl) != 1:
        raise Refused(f"{path}: {len(pkl)} data.pkl entries (a torch.save file has one)")
    root = pkl[0][: -len("/data.pkl")]
    import io
    return _Unpickler(io.BytesIO(archive.read(pkl[0])), archive, root).load()


def convert(obj, layers=None, heads=None):
    """Per layer, [heads, F] float32 arrays of the three vectors, and the metadata to write."""
    if not isinstance(obj, dict) or "stats" not in obj:
        raise Refused("no \"stats\" dict at the top level")
    meta, stats = obj.get("metadata") or {}, obj["stats"]
    if meta.get("rope_style", "half") != "half":
        raise Refused(f"rope_style {meta['rope_style']!r}: only \"half\" (the harness's RoPE pairing) is supported")
    by = {}
    for key, v in stats.items():
        try:
            l, h = int(key[5:7]), int(key[12:14])
            assert key == f"layer{l:02d}_head{h:02d}"
        except (ValueError, AssertionError):
            raise Refused(f"stats key {key!r} is not layerLL_headHH")
        for name in ("q_mean_real", "q_mean_imag", "q_abs_mean"):
            a = v.get(name) if isinstance(v, dict) else None
            if not isinstance(a, np.ndarray) or a.dtype != np.float32 or a.ndim != 1:
                raise Refused(f"{key}.{name}: not a float32 vector")
        by[(l, h)] = v
    if not by:
        raise Refused("no statistics")
    L = max(l for l, _ in by) + 1 if layers is None else layers
    H = max(h for _, h in by) + 1 if heads is None else heads
    F = next(iter(by.values()))["q_mean_real"].size
    if "head_dim" in meta and int(meta["head_dim"]) != 2 * F:
        raise Refused(f"head_dim {meta['head_dim']} but vectors of {F} pairs (head_dim {2 * F})")
    out = {}
    for l in range(L):
        for name in ("q_mean_real", "q_mean_imag", "q_abs_mean"):
            rows = []
            for h in range(H):
                if (l, h) not in by:
                    raise Refused(f"layer {l} has no statistics for query head {h} (layer{l:02d}_head{h:02d})")
                a = by[(l, h)][name]
                if a.size != F:
                    raise Refused(f"layer{l:02d}_head{h:02d}.{name}: {a.size} values, the others {F}")
                rows.append(a)
            out[f"layer.{l}.{name}"] = np.stack(rows).astype("<f4")
    extra = sorted(k for k in by if k[0] >= L or k[1] >= H)
    if extra:
        l, h = extra[0]
        raise Refused(f"statistics for layer {l} head {h}, beyond the model's {L} layers of {H} query heads")
    info = {"format": "triattention-stats", "num_layers": str(L), "num_heads": str(H), "head_dim": str(2 * F),
            "source": str(meta.get("model_name", ""))}
    return out, info


def write_safetensors(path, tensors, metadata):
    header, offset = {"__metadata__": metadata}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for a in tensors.values():
            f.write(a.tobytes())


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pt")
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, help="the model's num_hidden_layers (checked)")
    ap.add_argument("--heads", type=int, help="the model's num_attention_heads (checked)")
    a = ap.parse_args(argv)
    try:
        tensors, info = convert(load_pt(a.pt), a.layers, a.heads)
    except Refused as e:
        print(f"triattention_stats: {a.pt}: {e}", file=sys.stderr)
        return 2
    write_safetensors(a.out, tensors, info)
    print(f"triattention_stats: {a.out}: {info['num_layers']} layers x {info['num_heads']} query heads, head_dim {info['head_dim']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
