"""Reference oracle: Twilight's top-p selection over attention mass, as its authors wrote it.

Follows (tsinghua-ideal/Twilight @ 843ebcc, csrc/include/sampling.cuh, TopPReturnMaskKernel):
  121-127   one row of d probabilities per thread block; p = top_p_arr[row] or top_p_val
  159       low = 0, high = probs[0] (the attention sink), eps = 1e-5
  164-170   f(x) = sum(probs[probs > x]) is non-increasing; invariant f(low) >= p, f(high) < p
  171-218   bisection: mid = (low + high) / 2; min_gt_low = min{p > low}, max_le_high =
            max{p <= high}, both over the row; f(mid) >= p moves low to mid (sum_low kept),
            else high = min(mid, max_le_high); stop when max_le_high - min_gt_low <= eps
  220-231   mask = probs > low
The kernel's arithmetic is in DType (the harness compares with float32 here); the order of its
block reductions is not reproduced (sums here are float32 numpy sums).

Its one quirk kept: high starts at probs[0], so the threshold never exceeds the first entry's
probability; Twilight calls it with the sink first, where probs[0] is the row's largest. With
the sink largest, the mask holds the smallest top-k set whose mass is at least p (exact_count
gives that k, the rule the harness's adaptive budget applies) and, from the eps stop, any other
entry within eps of that set's smallest: the kernel's tolerance, not reproduced by the harness.
"""
import numpy as np


def twilight_mask(probs, p, eps=1e-5):
    """probs: 1-d float32 (a row); returns the kernel's uint8 mask."""
    probs = np.asarray(probs, dtype=np.float32)
    p = np.float32(p)
    eps = np.float32(eps)
    low, high = np.float32(0.0), np.float32(probs[0])
    while True:
        mid = np.float32((low + high) / np.float32(2))
        gt_low = probs[probs > low]
        le_high = probs[probs <= high]
        min_gt_low = np.float32(min(high, gt_low.min())) if gt_low.size else high
        max_le_high = np.float32(max(low, le_high.max())) if le_high.size else low
        s = np.float32(probs[probs > mid].sum(dtype=np.float32))
        if s >= p:
            low = mid
        else:
            high = np.float32(min(mid, max_le_high))
        if not (max_le_high - min_gt_low > eps):
            break
    return (probs > low).astype(np.uint8)


def exact_count(probs, p):
    """Smallest k such that the k largest entries hold at least p of the row's mass (sum 1)."""
    srt = -np.sort(-np.asarray(probs, dtype=np.float64))
    c = np.cumsum(srt)
    k = int(np.searchsorted(c, float(p) - 1e-12, side="left")) + 1
    return min(k, len(srt))


def request_count(head_scores, tau):
    """The harness's adaptive rule over a request: head_scores is a list of (S, order) per (layer,
    KV head), S the attention mass of the candidates and order their ranking (best first). The
    curve M(k) is the mean over heads of the top-k mass fraction (a head of zero mass counts 1);
    returns the smallest k with M(k) >= tau. Not Twilight's: it selects per query and head."""
    n = len(head_scores[0][0])
    curve = np.zeros(n + 1)
    for S, order in head_scores:
        S = np.asarray(S, dtype=np.float64)
        z = S.sum()
        m = np.concatenate([[0.0], np.cumsum(S[np.asarray(order)])]) / z if z > 0 else np.ones(n + 1)
        curve += m
    curve /= len(head_scores)
    for k in range(n + 1):
        if curve[k] >= tau - 1e-12:
            return k
    return n
