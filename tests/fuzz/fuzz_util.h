/* fuzz_util.h - what the libFuzzer targets share: the input as a NUL-terminated string, or as
 * a file (the readers under test open paths). Deliberately not here: any target's checks. */
#ifndef ZP_FUZZ_UTIL_H
#define ZP_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* data[0..n) with a NUL appended (malloc'ed). */
char *fuzz_text(const uint8_t *data, size_t n);
/* Writes data to DIR/name in a per-process scratch folder under /tmp; returns the path
 * (static storage) or NULL. */
const char *fuzz_file(const char *name, const uint8_t *data, size_t n);
/* The scratch folder of fuzz_file. */
const char *fuzz_dir(void);

#endif
