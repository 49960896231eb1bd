"""Key-redundancy terms of R-KV, G-KV and Zipage, written from reading their code (own numpy).

Two formulations that agree except for one quirk:

rowsum_last_rule (G-KV gkv/utils/compression_score.py:74-199 similarity_score_kernel, Zipage
zipage/kernel/lightning_redudancy_score.py:10-169 and raw_redudancy_score.py:60-155):
    c(x, y) = cosine of keys x and y, c(x, x) = 0
    last(y) = the largest x with c(x, y) > threshold (the kernels scan row tiles from the end and
              claim each column once, through the `zo` flags)
    r[x]    = sum_y c(x, y) - sum_{y : last(y) = x} c(x, y)

rkv_colmean (R-KV rkv/utils.py:42-94 cal_similarity, also G-KV compression_score.py:7-63
cal_similarity_raw): for each ROW i, zero sim[i, last(i)] where last(i) = max index j with
sim[i, j] > threshold, or 0 when the row has none (torch.max over the where(..., arange, 0)
tensor, utils.py:63-71) -- the quirk: such a row zeroes its column-0 entry. Then the mean over
rows (dim=1), i.e. m[j] = (1/n) * column sum. Since sim is symmetric this is r / n of the rule
above plus the quirk.
"""
import numpy as np


def normalise(keys, mode):
    k = np.asarray(keys, dtype=np.float64)
    nrm = np.linalg.norm(k, axis=-1, keepdims=True)
    if mode == "rkv":        # k / (||k|| + 1e-8)          rkv/utils.py:51
        return k / (nrm + 1e-8)
    if mode == "gkv":        # k / (||k|| + 1e-6)          compression_score.py:129,161
        return k / (nrm + 1e-6)
    if mode == "zipage":     # k / max(||k||, 1e-6)        zipage/kernel/key_norm.py:75,112
        return k / np.maximum(nrm, 1e-6)
    raise ValueError(mode)


def cosine_matrix(keys, mode):
    kn = normalise(keys, mode)
    C = np.einsum("hnd,hmd->hnm", kn, kn)
    n = C.shape[-1]
    C[:, np.arange(n), np.arange(n)] = 0.0
    return C


def rowsum_last_rule(keys, threshold=0.5, mode="gkv", C=None):
    """r [H, n] (float64) with the 'last above threshold is protected' rule, no quirk."""
    if C is None:
        C = cosine_matrix(keys, mode)
    H, n, _ = C.shape
    r = C.sum(axis=2)
    above = C > threshold                                   # [H, x, y]
    xs = np.arange(n)[None, :, None]
    last = np.where(above, xs, -1).max(axis=1)              # [H, y]: latest x per column y
    for h in range(H):
        ys = np.nonzero(last[h] >= 0)[0]
        xl = last[h, ys]
        np.add.at(r[h], xl, -C[h, xl, ys])
    return r


def rkv_colmean(keys, threshold=0.5, mode="rkv"):
    """m [H, n] = column mean after R-KV's row-wise zeroing, including the column-0 quirk."""
    C = cosine_matrix(keys, mode)
    H, n, _ = C.shape
    above = C > threshold
    js = np.arange(n)[None, None, :]
    last = np.where(above, js, 0).max(axis=2)               # [H, i]; 0 when the row has none
    for h in range(H):
        C[h, np.arange(n), last[h]] = 0.0
    return C.mean(axis=1)


def blockwise_rowsum(keys, block, threshold=0.5, mode="zipage"):
    """Zipage lightning: the rule inside each physical block of `block` tokens."""
    keys = np.asarray(keys)
    H, n, _ = keys.shape
    r = np.zeros((H, n))
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        r[:, lo:hi] = rowsum_last_rule(keys[:, lo:hi], threshold, mode)
    return r
