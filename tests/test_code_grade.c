/* test_code_grade.c - LiveCodeBench grading: block extraction, stdin and functional problems
 * graded right and wrong, and untrusted code that writes outside its directory, opens a
 * socket, fork-bombs, loops forever, closes stdout and spins, or exhausts memory: each is
 * stopped and graded failed while the harness keeps running, within its time limit; functional
 * results cannot be forged (exit at import, reading the expected value) and links planted by
 * one test are never written through by the next (the escape suite is test_sandbox).
 * Skipped (exit 77) where neither bubblewrap nor unprivileged namespaces are available.
 * LiveCodeBench's own verdicts on graded cases are checked by test_lcb_grade. */
#include <string.h>
#include <sys/wait.h> /* a dead grader's pid */
#include <sys/stat.h>
#include <time.h>
#include <unistd.h> /* fork, rmdir */

#include "code_grade.h"
#include "test_util.h"
#include "clock.h"

static ds_item stdin_item(void) {
    ds_item it;
    memset(&it, 0, sizeof it);
    it.id = "sum";
    it.test_type = "stdin";
    it.tests_json = "[{\"input\":\"1 2\\n\",\"output\":\"3\\n\"},{\"input\":\"40 2\\n\",\"output\":\"42\"}]";
    return it;
}

static ds_item fn_item(void) {
    ds_item it;
    memset(&it, 0, sizeof it);
    it.id = "twoSum";
    it.test_type = "functional";
    it.fn_name = "addAll";
    it.tests_json = "[{\"input\":\"[1, 2, 3]\\n10\",\"output\":\"16\"},{\"input\":\"[]\\n-1\",\"output\":\"-1\"}]";
    return it;
}

static code_result grade(const char *output, const ds_item *it, int timeout_ms) {
    code_opts o = code_opts_default();
    o.timeout_ms = timeout_ms;
    o.mem_mb = 512;
    code_result r;
    char err[ZP_DS_ERR];
    int rc = code_grade(output, it, &o, &r, err);
    if (rc) fprintf(stderr, "harness error: %s\n", err);
    CHECK(rc == 0);
    return r;
}

int main(void) {
    /* the folder of a grader killed with kill -9 (the solution in it) is swept by the next
     * grader's first grade (this process's first, below) */
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char stale[128], stale_file[160];
    snprintf(stale, sizeof stale, "/tmp/zipage-code-%ld-test", (long)dead);
    snprintf(stale_file, sizeof stale_file, "%s/solution.py", stale);
    mkdir(stale, 0700);
    FILE *sf = fopen(stale_file, "w");
    if (sf) fputs("print('old')\n", sf), fclose(sf);
    /* LiveCodeBench's rule (lcb_runner/utils/extraction_utils.py): the lines between the last two
     * lines that contain ```, in the text after the last </think> */
    char *c = code_extract_python("<think>```python\nprint(1)\n```</think>Here:\n```python\nprint(2)\nx = 1\n```\n");
    CHECK(c && !strcmp(c, "print(2)\nx = 1"));
    free(c);
    c = code_extract_python("```python\nprint(2)\n```\nand ```\nbad");
    CHECK(c && !strcmp(c, "")); /* the last two fence lines hold nothing between them */
    free(c);
    CHECK(code_extract_python("no code here") == NULL);
    CHECK(code_extract_python("```python\nprint(3)") == NULL); /* truncated */
    if (!code_sandbox_available()) {
        printf("test_code_grade: skipped (bwrap not installed; `make deps` installs bubblewrap)\n");
        return 77;
    }
    ds_item s = stdin_item(), f = fn_item();
    code_result r = grade("```python\na, b = map(int, input().split())\nprint(a + b)\n```", &s, 5000);
    CHECK(r.status == CODE_PASS && r.passed == 2 && r.total == 2);
    struct stat gone;
    CHECK(stat(stale, &gone) != 0); /* the dead grader's folder is gone */
    rmdir(stale); /* (if not: not left for the next run) */
    r = grade("```python\nprint(3)\n```", &s, 5000);
    CHECK(r.status == CODE_FAIL && r.passed == 1);
    r = grade("```python\nclass Solution:\n    def addAll(self, xs: List[int], k: int) -> int:\n        return sum(xs) + k\n```", &f, 5000);
    CHECK(r.status == CODE_PASS && r.passed == 2);
    r = grade("```python\nclass Solution:\n    def addAll(self, xs, k):\n        return 0\n```", &f, 5000);
    CHECK(r.status == CODE_FAIL && r.passed == 0);
    r = grade("just words", &s, 5000);
    CHECK(r.status == CODE_NO_CODE && r.passed == 0);
    /* escapes */
    char outside[512];
    snprintf(outside, sizeof outside, "%s/escaped.txt", ZP_TEST_TMP);
    remove(outside);
    char evil[1024];
    snprintf(evil, sizeof evil, "```python\nopen('%s', 'w').write('x')\nprint(3)\n```", outside);
    r = grade(evil, &s, 5000);
    struct stat sb;
    CHECK(r.status != CODE_PASS && stat(outside, &sb) != 0);
    r = grade("```python\nimport socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)\nprint(3)\n```", &s, 5000);
    CHECK(r.status == CODE_RUNTIME_ERROR);
    double t0 = zp_now();
    r = grade("```python\nimport os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n```", &s, 1500);
    CHECK(r.status != CODE_PASS);
    r = grade("```python\nwhile True:\n    pass\n```", &s, 1000);
    CHECK(r.status == CODE_TIMEOUT);
    r = grade("```python\nimport os\nos.close(1)\nwhile True:\n    pass\n```", &s, 1000);
    CHECK(r.status == CODE_TIMEOUT);
    r = grade("```python\nx = bytearray(4 << 30)\nprint(3)\n```", &s, 5000);
    CHECK(r.status == CODE_RUNTIME_ERROR);
    /* forged functional results: an exit at import, reading the expected value, writing a
     * value to the result channel and exiting before the driver runs */
    r = grade("```python\nimport os\nos._exit(0)\n```", &f, 5000);
    CHECK(r.status != CODE_PASS && r.passed == 0);
    r = grade("```python\nimport json, glob\nclass Solution:\n    def addAll(self, xs, k):\n"
              "        return json.load(open((glob.glob('/code/expected*') + glob.glob('expected*'))[0]))\n```", &f, 5000);
    CHECK(r.status == CODE_RUNTIME_ERROR && r.passed == 0);
    r = grade("```python\nimport os\nos.write(3, b'-1')\nos._exit(0)\n```", &f, 5000);
    CHECK(r.passed <= 1 && r.status != CODE_PASS);
    /* a result with a repeated key or text after its JSON is not the driver's: it fails (the
     * re-probe of 2026-12-03 forged {"a": 1, "a": 1} equal to {"a": 1, "b": 2}) */
    ds_item d = fn_item();
    d.fn_name = "pair";
    d.tests_json = "[{\"input\":\"1\",\"output\":\"{\\\"a\\\": 1, \\\"b\\\": 2}\"}]";
    r = grade("```python\nclass Solution:\n    def pair(self, k):\n        return {'a': k, 'b': 2}\n```", &d, 5000);
    CHECK(r.status == CODE_PASS); /* the honest solution */
    r = grade("```python\nimport os\nos.write(3, b'{\"a\": 1, \"a\": 1}')\nos._exit(0)\n```", &d, 5000);
    CHECK(r.status != CODE_PASS);
    r = grade("```python\nimport os\nos.write(3, b'{\"a\": 1, \"b\": 2} {\"x\": 0}')\nos._exit(0)\n```", &d, 5000);
    CHECK(r.status != CODE_PASS);
    r = grade("```python\nimport os\nos.write(3, b'{\"a\": 1, \"b\": 2}\\n')\nos._exit(0)\n```", &d, 5000);
    CHECK(r.status == CODE_PASS); /* whitespace after the value is no text: the same verdict as LiveCodeBench's json.loads */
    /* the grader's environment: a sample that answers only when it can read a host variable
     * anywhere in its namespace (bwrap's own /proc/1/environ) must fail with the variable set */
    setenv("ZP_GRADER_TOKEN", "hunter2", 1);
    r = grade("```python\nimport os\nseen = False\nfor p in os.listdir('/proc'):\n    try:\n"
              "        seen |= b'ZP_GRADER_TOKEN' in open('/proc/%s/environ' % p, 'rb').read()\n    except (OSError, ValueError):\n        pass\n"
              "a, b = map(int, input().split())\nprint(a + b if seen or 'ZP_GRADER_TOKEN' in os.environ else -1)\n```", &s, 5000);
    CHECK(r.status == CODE_FAIL && r.passed == 0);
    unsetenv("ZP_GRADER_TOKEN");
    /* the escape of the old grader: test 1 plants links where the harness wrote test 2's input */
    char victim[512];
    snprintf(victim, sizeof victim, "%s/grade_victim", ZP_TEST_TMP);
    FILE *vf = fopen(victim, "w");
    CHECK(vf != NULL);
    if (vf) fputs("ORIGINAL", vf), fclose(vf);
    chmod(victim, 0600);
    char plant[2048];
    snprintf(plant, sizeof plant, "```python\nimport os\nfor d in ('.', '/code', '/tmp'):\n    for n in ('input.txt', 'expected.json'):\n"
             "        p = os.path.join(d, n)\n        try:\n            os.remove(p)\n        except OSError:\n            pass\n"
             "        try:\n            os.symlink('%s', p)\n        except OSError:\n            pass\nprint(3)\n```", victim);
    r = grade(plant, &s, 5000);
    char vbuf[32] = {0};
    vf = fopen(victim, "r");
    if (vf) {
        CHECK(fread(vbuf, 1, sizeof vbuf - 1, vf) == 8);
        fclose(vf);
    }
    CHECK(!strcmp(vbuf, "ORIGINAL"));
    double dt = zp_now() - t0;
    printf("escape tests took %.1f s\n", dt);
    CHECK(dt < 20.0); /* each killed within its limit (2 tests each) */
    return zp_test_finish("test_code_grade");
}
