/* fidelity_set.h - the fidelity probe over a dataset's selected items, shared by both front
 * ends (experiments of kind "fidelity", runner_fidelity.c, and `zipage fidelity`): the full-KV
 * side of every item once (its prompt as the runner builds it, item_prompt.h), then any
 * compressed configuration teacher-forced along each and averaged. It writes no files. */
#ifndef ZP_FIDELITY_SET_H
#define ZP_FIDELITY_SET_H

#include "fidelity.h"

typedef struct {
    fidelity_ref *refs; /* [n] */
    char (*ids)[128];   /* [n] item ids */
    int n;
} fidelity_set;

/* Means over a set of one configuration's results (first_disagreement: steps when none). */
typedef struct {
    double mean_kl, worst_window_kl, agreement, first_disagreement, retained_share;
} fidelity_mean;

/* The items of `dataset` chosen by ids (comma list, or NULL) and limit, prompted with the
 * model's chat template (thinking, the math instruction when math_system), each a gen-token
 * greedy trajectory of the full-KV engine `full` (its model_dir gives the tokenizer). */
zp_status fidelity_set_build(const zp_engine_config *full, const char *dataset, const char *ids, int limit, int gen, int thinking,
                             int math_system, fidelity_set *set);
void fidelity_set_free(fidelity_set *set);
/* cmp along every trajectory of the set: per[i] (NULL: not wanted) and their means. */
zp_status fidelity_set_compare(const fidelity_set *set, const zp_engine_config *cmp, int kl_window, fidelity_result *per,
                               fidelity_mean *mean);

#endif
