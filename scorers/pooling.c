/* pooling.c - 1-D max pooling along the token axis, stride 1, window clipped at the ends
 * (PyTorch max_pool1d with padding k/2 pads with -inf). Zipage uses k 5 on a request's first
 * compression; SnapKV-D and R-KV use k 7. Complexity O(n k). */
#include <math.h>

#include "scorers.h"

void scorer_max_pool(const float *x, int n, int k, float *out) {
    const int h = k / 2;
    for (int t = 0; t < n; t++) {
        float m = -INFINITY;
        int lo = t - h < 0 ? 0 : t - h, hi = t + h >= n ? n - 1 : t + h;
        for (int u = lo; u <= hi; u++) m = x[u] > m ? x[u] : m;
        out[t] = m;
    }
}
