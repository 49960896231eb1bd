/* paths.c - the home folder and the paths under it (paths.h). */
#include "paths.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#ifndef ZIPAGE_SOURCE_DIR
#error "ZIPAGE_SOURCE_DIR (the source tree, the default home) must be defined by the build"
#endif

static const char *const SUFFIX[ZP_PATH_COUNT] = {"/models", "/datasets/data", "/experiments", "/.venv-grade/bin/python",
                                                  "/tools/grading/math_verify_grade.py"};
static char home[4096] = ZIPAGE_SOURCE_DIR;
static char paths[ZP_PATH_COUNT][4096 + 64];
static int built;

static int is_dir(const char *dir, const char *sub) {
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s%s", dir, sub);
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int zp_paths_is_home(const char *dir) { return dir && *dir && is_dir(dir, "/models") && is_dir(dir, "/datasets/data"); }

zp_status zp_paths_set_home(const char *dir) {
    if (!zp_paths_is_home(dir))
        return zp_fail(ZP_ERR_INVALID, "\"%s\" is not a harness folder (it needs models/ and datasets/data/)", dir ? dir : "");
    if (strlen(dir) >= sizeof home) return zp_fail(ZP_ERR_INVALID, "harness folder path too long (%zu bytes)", strlen(dir));
    snprintf(home, sizeof home, "%s", dir);
    built = 0;
    return ZP_OK;
}

const char *zp_paths_home(void) { return home; }

const char *zp_path(zp_path_kind kind) {
    if (!built) {
        for (int k = 0; k < ZP_PATH_COUNT; k++) snprintf(paths[k], sizeof paths[k], "%s%s", home, SUFFIX[k]);
        built = 1;
    }
    return kind >= 0 && kind < ZP_PATH_COUNT ? paths[kind] : "";
}
