/* dataset.h - benchmark datasets (datasets/data/NAME.jsonl): open by name or path, iterate items,
 * select subsets (--limit, --ids, stratified by difficulty). Math items carry problem and
 * answer; LiveCodeBench items carry the question, starter code, test type, function name and
 * the public tests as JSON text, and the private tests where a user imported them
 * (tools/lcb/import_lcb.py; the shipped file has none: say so with any code result). Errors name the file and line. No engine headers: functions return 0 on success or
 * -1 with a message in err[ZP_DS_ERR]. */
#ifndef ZP_DATASET_H
#define ZP_DATASET_H

#define ZP_DS_ERR 512

typedef struct {
    char *id;
    char *problem;       /* math: problem; code: question */
    char *answer;        /* math reference answer; NULL for code */
    char *difficulty;    /* code: easy / medium / hard; math: level or NULL */
    char *test_type;     /* code: stdin / functional */
    char *fn_name;       /* code, functional: method of Solution */
    char *starter_code;  /* code */
    char *tests_json;    /* code: the public tests as a JSON array text */
    char *private_tests_json; /* code: LiveCodeBench's private tests (JSON array text), NULL if none */
    double depth;        /* passkey: where the needle sits in the haystack, 0..1 */
    int line;            /* 1-based line in the file (0: generated) */
} ds_item;

typedef struct {
    char name[64];
    int is_code;
    ds_item *items;
    int n;
    int n_private; /* code items with private tests: 0 or n (a mix is refused) */
    int context_tokens; /* passkey (passkey.h): each prompt's length in tokens; 0 for the others */
} ds_dataset;

/* name: aime24, aime25, amc23, math500, gsm8k, livecodebench (from dir), passkey[-N] (generated,
 * passkey.h), or a .jsonl path. */
int ds_open(const char *name_or_path, const char *dir, ds_dataset *d, char *err);
void ds_free(ds_dataset *d);
/* Indices of the selected items: ids (comma-separated, NULL for all), then at most limit
 * (0: no limit); stratified: the limit is split over difficulties in proportion (largest
 * remainder), keeping file order within each. *idx is malloc'ed. */
int ds_select(const ds_dataset *d, const char *ids, int limit, int stratified, int **idx, int *n, char *err);

#endif
