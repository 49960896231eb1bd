/* pyramid_dump.c - prints the harness's PyramidKV schedule (model/layer_budget.c) for the cases
 * check_pyramid.py sends on stdin, one per line: "P w L beta q_len" -> the L capacities, and
 * "cap c w beta" -> zp_pyramid_total_for_cap. No checks here: the oracle compares. */
#include <stdio.h>
#include <stdlib.h>

#include "layer_budget.h"

int main(void) {
    char kind[8];
    while (scanf("%7s", kind) == 1) {
        if (kind[0] == 's') { /* schedule */
            int P, w, L, beta, q;
            if (scanf("%d %d %d %d %d", &P, &w, &L, &beta, &q) != 5 || L < 2 || L > 4096) return 2;
            int *cap = malloc(sizeof(int) * (size_t)L);
            if (!cap) return 3;
            zp_pyramid_caps(P, w, L, beta, q, cap);
            for (int l = 0; l < L; l++) printf("%d%c", cap[l], l + 1 < L ? ' ' : '\n');
            free(cap);
        } else { /* cap */
            int c, w, beta;
            if (scanf("%d %d %d", &c, &w, &beta) != 3) return 2;
            printf("%d\n", zp_pyramid_total_for_cap(c, w, beta));
        }
    }
    return 0;
}
