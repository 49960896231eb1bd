/* metrics.h - pass@k and confidence intervals over graded samples. correct[p][s] is 1 when
 * sample s of problem p is correct; problems may have different sample counts.
 * pass@1 = mean over problems of (correct / samples); pass@k uses the unbiased estimator
 * 1 - C(n-c, k) / C(n, k); the bootstrap resamples problems (seeded, percentile interval);
 * the paired difference compares two runs on the same problems. No engine headers. */
#ifndef ZP_METRICS_H
#define ZP_METRICS_H

#include <stdint.h>

typedef struct {
    int n_problems;
    const int *n_samples; /* [n_problems] */
    const int *n_correct; /* [n_problems] */
} metrics_counts;

double metrics_pass_at_k_problem(int n, int c, int k);
/* Mean of the per-problem unbiased pass@k (k <= every problem's sample count). */
double metrics_pass_at_k(const metrics_counts *m, int k);
/* Percentile bootstrap CI of pass@1 over problems: n_boot resamples, level e.g. 0.95. */
void metrics_bootstrap_ci(const metrics_counts *m, int n_boot, double level, uint64_t seed, double *lo, double *hi);
/* Paired difference of pass@1 (b - a) over the same problems, with its bootstrap CI. */
double metrics_paired_diff(const metrics_counts *a, const metrics_counts *b, int n_boot, double level, uint64_t seed, double *lo,
                           double *hi);

#endif
