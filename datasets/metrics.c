/* metrics.c - see metrics.h. The bootstrap draws problem indices from a splitmix64 stream. */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>

double metrics_pass_at_k_problem(int n, int c, int k) {
    if (n - c < k) return 1.0;
    double prod = 1.0; /* C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i) */
    for (int i = n - c + 1; i <= n; i++) prod *= 1.0 - (double)k / (double)i;
    return 1.0 - prod;
}

double metrics_pass_at_k(const metrics_counts *m, int k) {
    if (m->n_problems == 0) return 0.0;
    double s = 0;
    for (int p = 0; p < m->n_problems; p++) s += metrics_pass_at_k_problem(m->n_samples[p], m->n_correct[p], k);
    return s / m->n_problems;
}

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Bootstrap of the mean over problems of f(p) = per-problem score difference or score. */
static void bootstrap(const double *f, int n, int n_boot, double level, uint64_t seed, double *lo, double *hi) {
    double *means = calloc((size_t)(n_boot > 0 ? n_boot : 1), sizeof(double));
    if (!means || n == 0 || n_boot <= 0) { *lo = *hi = NAN; free(means); return; }
    uint64_t state = seed;
    for (int b = 0; b < n_boot; b++) {
        double s = 0;
        for (int i = 0; i < n; i++) s += f[splitmix(&state) % (uint64_t)n];
        means[b] = s / n;
    }
    qsort(means, (size_t)n_boot, sizeof(double), cmp_double);
    double a = (1.0 - level) / 2.0;
    int il = (int)floor(a * (n_boot - 1)), ih = (int)ceil((1.0 - a) * (n_boot - 1));
    *lo = means[il];
    *hi = means[ih];
    free(means);
}

void metrics_bootstrap_ci(const metrics_counts *m, int n_boot, double level, uint64_t seed, double *lo, double *hi) {
    double *f = calloc((size_t)(m->n_problems ? m->n_problems : 1), sizeof(double));
    if (!f) { *lo = *hi = NAN; return; }
    for (int p = 0; p < m->n_problems; p++) f[p] = m->n_samples[p] ? (double)m->n_correct[p] / m->n_samples[p] : 0.0;
    bootstrap(f, m->n_problems, n_boot, level, seed, lo, hi);
    free(f);
}

double metrics_paired_diff(const metrics_counts *a, const metrics_counts *b, int n_boot, double level, uint64_t seed, double *lo,
                           double *hi) {
    int n = a->n_problems < b->n_problems ? a->n_problems : b->n_problems;
    double mean = 0;
    double *f = calloc((size_t)(n ? n : 1), sizeof(double));
    if (!f) { *lo = *hi = NAN; return NAN; }
    for (int p = 0; p < n; p++) {
        double fa = a->n_samples[p] ? (double)a->n_correct[p] / a->n_samples[p] : 0.0;
        double fb = b->n_samples[p] ? (double)b->n_correct[p] / b->n_samples[p] : 0.0;
        f[p] = fb - fa;
        mean += f[p];
    }
    bootstrap(f, n, n_boot, level, seed, lo, hi);
    free(f);
    return n ? mean / n : NAN;
}
