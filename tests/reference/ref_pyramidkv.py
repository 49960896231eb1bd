"""Reference oracle: PyramidKV's per-layer budget schedule (harness setting `layer_budget`
"pyramid"; the score of each layer is SnapKV's, ref_snapkv.py).

Follows (Zefan-Cai/KVCache-Factory @ c97f9d7, pyramidkv/pyramidkv_utils.py):
  :449-450  min_num = (P - w) // beta;  max_num = (P - w) * 2 - min_num
            (P: max_capacity_prompt, the window included; w: window_size; beta 20 by default, :324)
  :452-454  a prompt shorter than layer 0's capacity: max_num = q_len - w, min_num = (P - w) * 2 - max_num
  :456-457  steps = (max_num - min_num) // (L - 1);  layer l keeps max_num - l * steps
            non-window tokens, plus the w window tokens (_select_topk_kv, :305-322)
  :461-466  q_len < P: no compression; q_len < 2 (P - w): every layer keeps P - w (not ported:
            the harness compresses only past its cap, see NOTES.md)
Python's // floors toward minus infinity; so does this port.

cap_total is the harness's own choice, not the authors' (they take P as given): the largest P
whose layer 0 (max_num + w) fits a cap of c tokens. It is checked by its definition.
"""


def caps(P, w, L, beta, q_len):
    min_num = (P - w) // beta
    max_num = (P - w) * 2 - min_num
    if max_num >= q_len - w:
        max_num = q_len - w
        min_num = (P - w) * 2 - max_num
    steps = (max_num - min_num) // (L - 1)
    return [max_num - l * steps for l in range(L)]


def layer0(P, w, beta):
    x = P - w
    return 2 * x - x // beta + w


def cap_total(c, w, beta):
    """The largest P with layer0(P) <= c, by search; 0 when none (P - w >= 1 is required)."""
    best = 0
    for x in range(1, c + 1):
        if layer0(x + w, w, beta) <= c:
            best = x + w
    return best
