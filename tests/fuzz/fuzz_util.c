/* fuzz_util.c - see fuzz_util.h. */
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *fuzz_text(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, data, n);
    s[n] = 0;
    return s;
}

const char *fuzz_dir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/zipage-fuzz-%d", (int)getpid());
        mkdir(dir, 0700);
    }
    return dir;
}

const char *fuzz_file(const char *name, const uint8_t *data, size_t n) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n ? path : NULL;
}
