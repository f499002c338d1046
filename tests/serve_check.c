/* What the serving GPU tests share (serve_check.h). */
#include "serve_check.h"

#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

/* The run folder perflab serve wrote under dir (the one holding report.json), malloc'd. */
static char *run_folder(const char *dir)
{
    char *found = pl_file_in_subfolder(dir, "report.json");
    ck_assert_ptr_nonnull(found);
    *strrchr(found, '/') = '\0';
    return found;
}

char *pl_serve_check_run(const char *workload, const char *extra, const char *tag)
{
    char *dir = pl_test_tmpdir(tag), *cmd = pl_strfmt("%s %s --artifacts-dir %s", workload, extra, dir);
    pl_cmd_result r = pl_run_perflab(NULL, cmd);
    ck_assert_msg(r.exit_code == 0, "perflab %s: exit %d\n%s\n%s", cmd, r.exit_code, r.out, r.err);
    char *folder = run_folder(dir);
    pl_cmd_result_free(&r);
    free(cmd);
    free(dir);
    return folder;
}

json_t *pl_serve_check_tokens(const char *folder, const char *rate)
{
    char *name = pl_strfmt("requests-rate-%s.jsonl", rate), *path = pl_path_join(folder, name);
    char *text = pl_read_file(path, NULL, NULL, 0);
    ck_assert_msg(text != NULL, "no %s", path);
    json_t *out = json_object();
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        ck_assert_msg(o != NULL, "%s: %s", path, e.text);
        json_t *t = json_object_get(o, "tokens");
        ck_assert_msg(json_is_array(t), "%s: a request without tokens", path);
        ck_assert_int_eq((int)json_array_size(t), (int)json_integer_value(json_object_get(o, "output_len")));
        size_t i;
        json_t *v;
        json_array_foreach(t, i, v)
        {
            ck_assert_msg(json_integer_value(v) >= 0 && json_integer_value(v) < 1000,
                          "token %lld out of the vocabulary", (long long)json_integer_value(v));
        }
        char id[16];
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(o, "id")));
        json_object_set(out, id, t);
        json_decref(o);
    }
    free(text);
    free(path);
    free(name);
    return out;
}

void pl_serve_check_matches_alone(const char *workload, const char *folder, const char *kv, int n, const char *what)
{
    json_t *under_load = pl_serve_check_tokens(folder, "inf");
    char *alone_args =
        pl_strfmt("--request-rate inf --num-pages 12 --max-num-seqs 1 --max-concurrency 1 --kv-dtype %s", kv);
    char *alone_dir = pl_serve_check_run(workload, alone_args, "serve_gpu_alone");
    json_t *alone = pl_serve_check_tokens(alone_dir, "inf");
    ck_assert_int_eq((int)json_object_size(alone), n);
    const char *id;
    json_t *t;
    json_object_foreach(alone, id, t)
    {
        ck_assert_msg(json_equal(t, json_object_get(under_load, id)),
                      "%s cache: request %s: tokens %s differ from alone", kv, id, what);
    }
    json_decref(alone);
    json_decref(under_load);
    free(alone_dir);
    free(alone_args);
}
