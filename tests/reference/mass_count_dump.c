/* mass_count_dump.c - prints the harness's adaptive-budget count (scorers/adaptive_budget.c) for
 * the cases check_topp.py sends on stdin: "H m tau", then for each of the H heads its m attention
 * masses S and its m final scores C -> k* on one line. No checks here: the oracle compares. */
#include <stdio.h>
#include <stdlib.h>

#include "scorers.h"

int main(void) {
    int H, m;
    double tau;
    while (scanf("%d %d %lf", &H, &m, &tau) == 3) {
        if (H <= 0 || H > 4096 || m < 0 || m > 1 << 20) return 2;
        float *S = malloc(sizeof(float) * (size_t)(m > 0 ? m : 1)), *C = malloc(sizeof(float) * (size_t)(m > 0 ? m : 1));
        double *curve = calloc((size_t)m + 1, sizeof(double));
        int *order = malloc(sizeof(int) * (size_t)(m > 0 ? m : 1));
        uint8_t *all = malloc((size_t)(m > 0 ? m : 1));
        if (!S || !C || !curve || !order || !all) return 3;
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < m; t++)
                if (scanf("%f", &S[t]) != 1) return 2;
            for (int t = 0; t < m; t++)
                if (scanf("%f", &C[t]) != 1) return 2;
            if (scorer_mass_curve_add(S, C, m, order, all, curve) != ZP_OK) {
                fprintf(stderr, "mass_count_dump: %s\n", zp_last_error());
                return 1;
            }
        }
        printf("%d\n", scorer_mass_count(curve, m, H, tau));
        free(S), free(C), free(curve), free(order), free(all);
    }
    return 0;
}
