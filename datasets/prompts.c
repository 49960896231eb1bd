/* prompts.c - see prompts.h. */
#include "prompts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *WITH_STARTER = "You will use the following starter code to write the solution to the problem and enclose your code "
                                  "within delimiters.";
static const char *WITHOUT_STARTER = "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test "
                                     "on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the "
                                     "python program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.";

char *ds_user_prompt(const ds_dataset *d, const ds_item *it) {
    if (!d->is_code) return strdup(it->problem);
    const int starter = it->starter_code && *it->starter_code;
    size_t n = strlen(it->problem) + (starter ? strlen(it->starter_code) : 0) + 1024;
    char *s = malloc(n);
    if (!s) return NULL;
    if (starter)
        snprintf(s, n, "### Question:\n%s\n\n### Format: %s\n```python\n%s\n```\n\n### Answer: (use the provided format with backticks)\n\n",
                 it->problem, WITH_STARTER, it->starter_code);
    else
        snprintf(s, n, "### Question:\n%s\n\n### Format: %s\n```python\n# YOUR CODE HERE\n```\n\n### Answer: (use the provided format with backticks)\n\n",
                 it->problem, WITHOUT_STARTER);
    return s;
}
