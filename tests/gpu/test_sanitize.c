/* The `sanitize` label: compute-sanitizer's memcheck, racecheck and synccheck over `perflab verify --targets all
 * --small`, so that every target (a new one too, without being named here) runs its every variant once under each
 * tool, at its small sizes. Any error the tools report, or any variant that fails, fails the test. Exits 77 with the
 * reason where there is no GPU or no compute-sanitizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"
#include "testutil.h"

static char *sanitizer_path(void)
{
    const char *env = getenv("COMPUTE_SANITIZER");
    if (env && *env)
        return pl_strdup(env);
    FILE *f = popen("command -v compute-sanitizer 2>/dev/null", "r");
    char line[1024] = "";
    if (f && fgets(line, sizeof line, f))
        line[strcspn(line, "\n")] = '\0';
    if (f)
        pclose(f);
    if (line[0])
        return pl_strdup(line);
    return access("/usr/local/cuda/bin/compute-sanitizer", X_OK) == 0 ? pl_strdup("/usr/local/cuda/bin/compute-sanitizer")
                                                                      : NULL;
}

static char *sanitizer;

/* Every process compute-sanitizer followed printed an error summary: each must say 0 errors. */
static void expect_clean(const char *tool, const char *out)
{
    int summaries = 0;
    for (const char *p = strstr(out, "ERROR SUMMARY:"); p; p = strstr(p + 1, "ERROR SUMMARY:")) {
        summaries++;
        ck_assert_msg(strncmp(p, "ERROR SUMMARY: 0 errors", 23) == 0, "%s found errors:\n%s", tool, out);
    }
    ck_assert_msg(summaries > 0, "%s printed no error summary:\n%s", tool, out);
}

static void run_tool(const char *tool)
{
    char *dir = pl_test_tmpdir(tool);
    char *cmd = pl_strfmt("'%s' --tool %s --target-processes all --error-exitcode 99 --print-limit 20 '%s' verify "
                          "--targets all --small --quiet --timeout-s 1200 --artifacts-dir '%s' 2>&1",
                          sanitizer, tool, PERFLAB_BIN, dir);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    pl_buf out = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        pl_buf_appendn(&out, chunk, n);
    int status = pclose(f);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    printf("%s: exit %d\n%s\n", tool, code, out.data ? out.data : "");
    expect_clean(tool, out.data ? out.data : "");
    ck_assert_msg(code == 0, "perflab verify under %s exited %d", tool, code);
    pl_buf_free(&out);
    free(cmd);
    free(dir);
}

START_TEST(memcheck)
{
    run_tool("memcheck");
}
END_TEST

START_TEST(racecheck)
{
    run_tool("racecheck");
}
END_TEST

START_TEST(synccheck)
{
    run_tool("synccheck");
}
END_TEST

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    sanitizer = sanitizer_path();
    if (!sanitizer) {
        printf("SKIP: no compute-sanitizer on the PATH or in /usr/local/cuda/bin (set COMPUTE_SANITIZER)\n");
        return 77;
    }
    Suite *s = suite_create("sanitize");
    TCase *tc = tcase_create("tools");
    tcase_set_timeout(tc, 3600);
    tcase_add_test(tc, memcheck);
    tcase_add_test(tc, racecheck);
    tcase_add_test(tc, synccheck);
    suite_add_tcase(s, tc);
    int rc = pl_run_suite(s);
    free(sanitizer);
    return rc;
}
