/* cli_common.h - argument parsing helpers shared by the zipage subcommands.
 * Every parse error names the flag and the bad value; callers print zp_last_error and exit 2.
 */
#ifndef ZP_CLI_COMMON_H
#define ZP_CLI_COMMON_H

#include <stdint.h>

#include "status.h"

/* Value of flag argv[*i] (advances *i); NULL and an error when the value is missing. */
const char *cli_value(int argc, char **argv, int *i);
zp_status cli_int(const char *flag, const char *v, long lo, long hi, int *out);
zp_status cli_i64(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out);
zp_status cli_float(const char *flag, const char *v, double lo, double hi, float *out);
/* Comma-separated non-negative integers ("1,2,3": token ids, GPUs) into a malloc'ed array. */
zp_status cli_ids(const char *flag, const char *v, int **ids, int *n);
/* A comma-separated list of names or sizes: fails naming flag when v is empty or has an empty
 * entry ("a,,b", a leading or trailing comma), which strtok would skip silently. */
zp_status cli_list(const char *flag, const char *v);
/* Prints "zipage <cmd>: error: <last error>" and returns exit code 1 (2 for usage errors). */
int cli_report(const char *cmd, zp_status s);

#endif
