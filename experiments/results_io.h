/* results_io.h - the file operations of the results folder, in C with every result checked
 * (no shell): mkdir -p, durable appends of whole lines, line filtering by rewrite-and-rename,
 * whole-file replacement by rename, and the git commit read from .git without running git.
 *
 * Durability model: an append writes whole lines at the end of a file opened O_APPEND and
 * fsyncs it; a file whose last line is unterminated (a kill in the middle of an append) is
 * first cut back to its last newline, since a run's row is appended only after its samples
 * are durable. Replacements go to NAME.tmp.PID, are fsynced, then renamed over NAME. Every error
 * names the file. Deliberately not here: what a row or a sample contains (runner.c).
 *
 * Concurrency model (several `zipage run` processes on one results folder, as `--gpus` starts
 * them): appends and line drops hold an exclusive flock(2) on the folder's `.lock` file for the
 * whole read-modify-write, so one process never cuts or renames away another's lines; a run is
 * claimed by an flock on `.claims/RUN_ID`, held while it runs and released by the kernel when
 * its process ends, however it ends (a killed worker leaves nothing to clean up).
 */
#ifndef ZP_RESULTS_IO_H
#define ZP_RESULTS_IO_H

#include <stddef.h>

#include "status.h"

/* mkdir -p: every missing component with mode 0755; an existing non-directory is an error. */
zp_status rio_mkdir_p(const char *path);
/* Appends text (whole lines, ending in '\n') to path, creating it; when the file is empty
 * (new, or left empty by a kill) header is written first. fsyncs before returning. */
zp_status rio_append_lines(const char *path, const char *header, const char *text, size_t len);
/* Rewrites path without the lines containing needle (no-op when none does, or no file). */
zp_status rio_drop_lines(const char *path, const char *needle);
/* Under one hold of the folder's lock: drops the lines that begin with prefix (a run's row),
 * then appends text as rio_append_lines does (a forced rerun replaces its row in place). */
zp_status rio_replace_lines(const char *path, const char *header, const char *prefix, const char *text, size_t len);
/* Holds the exclusive lock of the folder containing path (its `.lock`, created) until
 * rio_unlock(*fd); the appends and drops above take it themselves. */
zp_status rio_lock(const char *path, int *fd);
void rio_unlock(int fd);
/* Claims run id in folder dir without waiting: *fd >= 0 when this process now holds it
 * (release with rio_unlock), -1 when another process does. */
zp_status rio_claim(const char *dir, const char *id, int *fd);
/* Replaces path with text (via path.tmp, fsync, rename). */
zp_status rio_replace(const char *path, const char *text, size_t len);
/* The commit checked out in the repository containing the working directory (12 hex
 * digits), or "unknown". */
void rio_git_commit(char *out, size_t n);

#endif
