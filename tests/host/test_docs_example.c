/* docs/writing-a-target.md shows labs/memory_vectorized_copy.c whole, as the example a new target follows: the
 * code block under "A whole small target" must be that file, byte for byte, so that the example always compiles
 * and runs as the target does. */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "testutil.h"

/* The first ```c block after `heading` in `doc` (malloc'd), or NULL. */
static char *code_block_after(const char *doc, const char *heading)
{
    const char *h = strstr(doc, heading);
    const char *open = h ? strstr(h, "```c\n") : NULL;
    if (!open)
        return NULL;
    open += strlen("```c\n");
    const char *close = strstr(open, "\n```\n");
    if (!close)
        return NULL;
    size_t n = (size_t)(close - open) + 1; /* the file's last newline */
    char *out = pl_xmalloc(n + 1);
    memcpy(out, open, n);
    out[n] = '\0';
    return out;
}

START_TEST(the_documented_target_is_the_file)
{
    char err[512] = "";
    char *doc_path = pl_path_join(PERFLAB_SOURCE_DIR, "docs/writing-a-target.md");
    char *lab_path = pl_path_join(PERFLAB_SOURCE_DIR, "labs/memory_vectorized_copy.c");
    char *doc = pl_read_file(doc_path, NULL, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s", err);
    char *lab = pl_read_file(lab_path, NULL, err, sizeof err);
    ck_assert_msg(lab != NULL, "%s", err);
    char *block = code_block_after(doc, "## A whole small target");
    ck_assert_msg(block != NULL, "%s has no ```c block under \"## A whole small target\"", doc_path);
    if (strcmp(block, lab) != 0) {
        size_t line = 1, i = 0;
        for (; block[i] && block[i] == lab[i]; i++)
            line += block[i] == '\n';
        ck_abort_msg("%s's example differs from %s from line %zu: copy the file into the doc (or the doc's change "
                     "into the file)",
                     doc_path, lab_path, line);
    }
    free(block);
    free(lab);
    free(doc);
    free(lab_path);
    free(doc_path);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("docs_example");
    TCase *tc = tcase_create("example");
    tcase_add_test(tc, the_documented_target_is_the_file);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
