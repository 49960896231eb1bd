/* files.h - the ground floor's file reading: a whole file, a strict JSON object (no key twice,
 * nothing after it), and the check that a folder is a model folder before anything is read from
 * it. Every failure is one zp_fail line naming the file. Deliberately not here: parsing what a
 * file means (model/config.h for config.json, text/ for the tokenizer). */
#ifndef ZP_FILES_H
#define ZP_FILES_H

#include <stddef.h>

#include "status.h"

struct cJSON;
/* Reads a whole file into a NUL-terminated malloc'ed buffer. */
zp_status zp_read_file(const char *path, char **out, size_t *len);
/* Parses JSON text whose top level must be an object, with nothing after it and no key twice
 * in any object (error names src). */
zp_status zp_json_parse_strict(const char *txt, const char *src, struct cJSON **out);
/* Reads and parses a JSON file the same way; error names the file. */
zp_status zp_read_json_object(const char *path, struct cJSON **out);
/* That dir is a model folder before anything is read from it: it exists, is a folder, is not
 * empty and (need_config) has config.json; the error says which, and what a model folder holds. */
zp_status zp_model_dir_check(const char *dir, int need_config);

#endif
