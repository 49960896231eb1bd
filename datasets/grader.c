/* grader.c - see grader.h. */
#define _GNU_SOURCE
#include "grader.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "math_grade.h"

extern char **environ;

int grader_parse(const char *name, grader_kind *k) {
    if (!strcmp(name, "builtin")) { *k = GRADER_BUILTIN; return 0; }
    if (!strcmp(name, "math-verify")) { *k = GRADER_MATH_VERIFY; return 0; }
    return -1;
}

const char *grader_name(grader_kind k) { return k == GRADER_MATH_VERIFY ? "math-verify" : "builtin"; }

/* One line from the helper, parsed (NULL when it closed or wrote something else). */
static cJSON *read_reply(grader *g) {
    char *line = NULL;
    size_t cap = 0;
    cJSON *o = getline(&line, &cap, g->from) > 0 ? cJSON_Parse(line) : NULL;
    free(line);
    if (o && !cJSON_IsObject(o)) { cJSON_Delete(o); o = NULL; }
    return o;
}

static int spawn_helper(grader *g, const char *python, const char *script, char *err) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) { snprintf(err, GRADER_ERR, "math-verify grader: pipe: %s", strerror(errno)); return -1; }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    char *argv[] = {(char *)python, (char *)"-u", (char *)script, NULL};
    int rc = posix_spawn(&g->pid, python, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]), close(out[1]);
    if (rc != 0) {
        close(in[1]), close(out[0]);
        snprintf(err, GRADER_ERR, "math-verify grader: cannot start %s: %s (run `make deps`)", python, strerror(rc));
        return -1;
    }
    g->to = fdopen(in[1], "w");
    g->from = fdopen(out[0], "r");
    return g->to && g->from ? 0 : -1;
}

int grader_open(grader *g, grader_kind k, const char *python, const char *script, char *err) {
    memset(g, 0, sizeof *g);
    g->kind = k;
    g->pid = -1;
    snprintf(g->version, sizeof g->version, "builtin");
    if (k == GRADER_BUILTIN) return 0;
    if (!python || !script) {
        snprintf(err, GRADER_ERR, "math-verify grader: no interpreter or helper script given");
        return -1;
    }
    if (access(python, X_OK) != 0) {
        snprintf(err, GRADER_ERR, "math-verify grader: %s is missing (run `make deps`, which makes .venv-grade)", python);
        return -1;
    }
    if (spawn_helper(g, python, script, err) != 0) { grader_close(g); return -1; }
    cJSON *ready = read_reply(g);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ready, "math_verify");
    int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ready, "ready")) && cJSON_IsString(v);
    if (ok) snprintf(g->version, sizeof g->version, "math-verify %s", v->valuestring);
    cJSON_Delete(ready);
    if (!ok) {
        snprintf(err, GRADER_ERR, "math-verify grader: %s %s did not start (is math-verify installed in it? `make deps`)", python, script);
        grader_close(g);
        return -1;
    }
    return 0;
}

int grader_math(grader *g, const char *output, const char *answer, int *correct, char **extracted, char *err) {
    if (g->kind == GRADER_BUILTIN) {
        math_grade_result r = math_grade(output, answer);
        *correct = r.correct;
        *extracted = r.extracted;
        return 0;
    }
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "answer", answer);
    cJSON_AddStringToObject(req, "output", output);
    char *line = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old); /* a helper that died must not kill us */
    int sent = line && fprintf(g->to, "%s\n", line) > 0 && fflush(g->to) == 0;
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) > 0) {}
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(line);
    cJSON *rep = sent ? read_reply(g) : NULL;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(rep, "correct"), *x = cJSON_GetObjectItemCaseSensitive(rep, "extracted");
    if (!cJSON_IsBool(c)) {
        cJSON_Delete(rep);
        snprintf(err, GRADER_ERR, "math-verify grader: the helper stopped answering (pid %d)", (int)g->pid);
        return -1;
    }
    *correct = cJSON_IsTrue(c);
    *extracted = cJSON_IsString(x) ? strdup(x->valuestring) : NULL;
    cJSON_Delete(rep);
    return 0;
}

void grader_close(grader *g) {
    if (g->to) fclose(g->to); /* EOF: the helper's loop ends */
    if (g->from) fclose(g->from);
    if (g->pid > 0) {
        int st;
        if (waitpid(g->pid, &st, 0) < 0 && errno != ECHILD) kill(g->pid, SIGKILL);
    }
    memset(g, 0, sizeof *g);
    g->pid = -1;
}
