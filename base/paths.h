/* paths.h - where the harness's data lives: one home folder holding models/ (presets),
 * datasets/data/, experiments/, tools/grading/ and .venv-grade/. The default home is the
 * source tree the library was built from (ZIPAGE_SOURCE_DIR); a program sets another at
 * startup (the command line: ZIPAGE_HOME, or the tree its binary sits in), so a copied or
 * installed binary finds its data. It does not read the environment itself, and the home is
 * not meant to change while other threads read it.
 */
#ifndef ZP_PATHS_H
#define ZP_PATHS_H

#include <stddef.h>

#include "status.h"

typedef enum {
    ZP_PATH_MODELS,       /* home/models */
    ZP_PATH_DATASETS,     /* home/datasets/data */
    ZP_PATH_EXPERIMENTS,  /* home/experiments */
    ZP_PATH_GRADE_PYTHON, /* home/.venv-grade/bin/python */
    ZP_PATH_GRADE_SCRIPT, /* home/tools/grading/math_verify_grade.py */
    ZP_PATH_COUNT
} zp_path_kind;

/* 1 when dir looks like a home (it has models/ and datasets/data/). */
int zp_paths_is_home(const char *dir);
/* Sets the home folder (copied); refused when it is not one (zp_paths_is_home). */
zp_status zp_paths_set_home(const char *dir);
const char *zp_paths_home(void);
/* The path of one kind under the current home (a buffer of this module, valid until the
 * home changes). */
const char *zp_path(zp_path_kind kind);

#endif
