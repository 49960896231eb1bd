/* adaptive_budget.c - the count of an adaptive budget: how many of a request's candidates to keep
 * so that, averaged over KV heads, the kept ones hold a share tau of the policy's attention mass.
 * The rule is Twilight's top-p (tests/reference/ref_topp.py cites the authors' kernel) taken over
 * a request instead of per query and head: each head's candidates ranked by the policy's final
 * score C (scorer_rank_order's order), the curve m_h(k) = top-k mass of S / total mass (1 for a
 * head of no mass), M(k) = the mean over heads, and k* = the smallest k with M(k) >= tau.
 * It selects no token and turns no count into blocks (the compressor's measuring pass,
 * compress_host.c zp_compress_measure, does: the engine's `budget adaptive`).
 * Complexity O(m log m) per head (the order); no allocation (the caller's scratch). */
#include "scorers.h"

zp_status scorer_mass_curve_add(const float *S, const float *C, int m, int *order, uint8_t *all, double *curve) {
    if (m <= 0) return ZP_OK;
    for (int t = 0; t < m; t++) all[t] = 1;
    ZP_TRY(scorer_rank_order(C, all, m, m, order));
    double z = 0.0, run = 0.0;
    for (int t = 0; t < m; t++) z += S[t] > 0.f ? S[t] : 0.0;
    curve[0] += z > 0.0 ? 0.0 : 1.0;
    for (int k = 1; k <= m; k++) {
        const float s = S[order[k - 1]];
        run += s > 0.f ? s : 0.0;
        curve[k] += z > 0.0 ? run / z : 1.0;
    }
    return ZP_OK;
}

int scorer_mass_count(const double *curve, int m, int heads, double tau) {
    if (heads <= 0) return m;
    for (int k = 0; k <= m; k++)
        if (curve[k] / heads >= tau - 1e-12) return k;
    return m;
}
