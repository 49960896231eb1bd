/* cli_engine.h - the engine flags shared by `zipage generate` and `zipage bench` (device,
 * precision, KV pool, scheduler, policy and compression settings): one parser, one usage
 * text. Flags of a single command stay in its file. */
#ifndef ZP_CLI_ENGINE_H
#define ZP_CLI_ENGINE_H

#include "engine.h"

#include <stdio.h>

/* Prints the usage lines of the shared flags (the policy names from the registry). */
void cli_engine_usage(FILE *f);
/* 1 for a shared flag that takes no value (--no-prefix-cache, --async). */
int cli_engine_switch(const char *flag);
/* Applies flag a (value v, NULL for a switch) to ec; *matched = 0 when a is not a shared flag. */
zp_status cli_engine_flag(const char *a, const char *v, zp_engine_config *ec, int *matched);

#endif
