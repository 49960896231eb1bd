/* head_budget_dump.c - prints the harness's AdaKV head budgets (scorers/head_budget.c) for the
 * cases check_adakv.py sends on stdin, one per line: "H B alpha n_0 .. n_{H-1}" then the
 * scores of head 0's n_0 candidates, head 1's, ... -> the H counts on one line. No checks here:
 * the oracle compares. */
#include <stdio.h>
#include <stdlib.h>

#include "scorers.h"

int main(void) {
    int H, B;
    double alpha;
    while (scanf("%d %d %lf", &H, &B, &alpha) == 3) {
        if (H <= 0 || H > 1024) return 2;
        int *n = malloc(sizeof(int) * (size_t)H), *counts = malloc(sizeof(int) * (size_t)H), stride = 0;
        if (!n || !counts) return 3;
        for (int h = 0; h < H; h++) {
            if (scanf("%d", &n[h]) != 1 || n[h] < 0 || n[h] > 1 << 20) return 2;
            stride = n[h] > stride ? n[h] : stride;
        }
        float *s = malloc(sizeof(float) * (size_t)H * (size_t)(stride > 0 ? stride : 1));
        if (!s) return 3;
        for (int h = 0; h < H; h++)
            for (int t = 0; t < n[h]; t++)
                if (scanf("%f", &s[(size_t)h * stride + t]) != 1) return 2;
        if (scorer_head_budgets(s, n, stride, H, B, alpha, counts) != ZP_OK) {
            fprintf(stderr, "head_budget_dump: %s\n", zp_last_error());
            return 1;
        }
        for (int h = 0; h < H; h++) printf("%d%c", counts[h], h + 1 < H ? ' ' : '\n');
        free(n), free(counts), free(s);
    }
    return 0;
}
