#include "report/artifacts.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/results_json.h"
#include "core/util.h"
#include "report/run_report.h"

int pl_artifacts_prepare(pl_run *run, const char *artifacts_dir, char *err, size_t errlen)
{
    char sub[512];
    if (pl_path_exists(artifacts_dir) && !pl_is_dir(artifacts_dir)) {
        pl_snprintf(err, errlen, "artifacts directory '%s' is a file, not a directory: pass another --artifacts-dir",
                    artifacts_dir);
        return -1;
    }
    if (pl_mkdir_p(artifacts_dir, sub, sizeof sub) != 0) {
        pl_snprintf(err, errlen, "%s: pass a writable --artifacts-dir", sub);
        return -1;
    }
    if (access(artifacts_dir, W_OK) != 0) {
        pl_snprintf(err, errlen, "artifacts directory '%s' is not writable: pass a writable --artifacts-dir",
                    artifacts_dir);
        return -1;
    }
    char *dir = pl_path_join(artifacts_dir, run->run_id);
    char *logs = pl_path_join(dir, "logs");
    int rc = pl_mkdir_p(logs, sub, sizeof sub);
    free(logs);
    if (rc != 0) {
        pl_snprintf(err, errlen, "%s: pass a writable --artifacts-dir", sub);
        free(dir);
        return -1;
    }
    free(run->run_dir);
    run->run_dir = dir;
    return 0;
}

static int write_text(const char *dir, const char *name, char *text, char *err, size_t errlen)
{
    char *path = pl_path_join(dir, name);
    int rc = pl_write_file_atomic(path, text ? text : "", text ? strlen(text) : 0, err, errlen);
    free(path);
    free(text);
    return rc;
}

int pl_artifacts_write(const pl_run *run, char *err, size_t errlen)
{
    char *path = pl_path_join(run->run_dir, "run.json");
    int rc = pl_run_save(run, path, err, errlen);
    free(path);
    if (rc == 0)
        rc = write_text(run->run_dir, "summary.md", pl_run_summary_markdown(run), err, errlen);
    if (rc == 0)
        rc = write_text(run->run_dir, "results.csv", pl_run_results_csv(run), err, errlen);
    return rc;
}
