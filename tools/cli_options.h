/* cli_options.h - the backends' tuning options (zp_backend_options, backend.h) from the command
 * line: `--backend-option NAME=VALUE` and, for the benchmark scripts, the ZIPAGE_<NAME>
 * environment variables, through one table of names and accepted values. */
#ifndef ZP_CLI_OPTIONS_H
#define ZP_CLI_OPTIONS_H

#include "backend_options.h"
#include "status.h"

/* One NAME=VALUE into o. An unknown name or a value outside its set fails naming both and
 * the accepted values, so that a mistyped A/B switch never runs the default under its label. */
zp_status cli_backend_option(const char *spec, zp_backend_options *o);
/* Every ZIPAGE_<NAME> variable that is set and not empty into o (same checks). */
zp_status cli_backend_options_env(zp_backend_options *o);

#endif
