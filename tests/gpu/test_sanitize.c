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

/* Every process compute-sanitizer followed printed a summary ("ERROR SUMMARY: 0 errors"; racecheck: "RACECHECK
 * SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"): each must report none. (The whole output is printed
 * before: an assertion carries only the line.) */
static void expect_clean(const char *tool, const char *out)
{
    static const struct {
        const char *key, *clean;
    } forms[] = {{"ERROR SUMMARY:", "ERROR SUMMARY: 0 errors"},
                 {"RACECHECK SUMMARY:", "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"}};
    int summaries = 0;
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
        for (const char *p = strstr(out, forms[f].key); p; p = strstr(p + 1, forms[f].key)) {
            summaries++;
            ck_assert_msg(strncmp(p, forms[f].clean, strlen(forms[f].clean)) == 0, "%s reported: %.160s", tool, p);
        }
    ck_assert_msg(summaries > 0, "%s printed no summary (its output is above)", tool);
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

/* PERFLAB_SANITIZE_TOOLS (a comma list) picks some of the three; all by default. */
static void run_if_chosen(const char *tool)
{
    const char *only = getenv("PERFLAB_SANITIZE_TOOLS");
    if (only && *only && !strstr(only, tool)) {
        printf("%s: not chosen by PERFLAB_SANITIZE_TOOLS=%s\n", tool, only);
        return;
    }
    run_tool(tool);
}

START_TEST(memcheck)
{
    run_if_chosen("memcheck");
}
END_TEST

START_TEST(racecheck)
{
    run_if_chosen("racecheck");
}
END_TEST

START_TEST(synccheck)
{
    run_if_chosen("synccheck");
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
