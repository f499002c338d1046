#include "core/artifacts.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/results_json.h"
#include "core/util.h"
#include "core/files.h"
#include "core/run_report.h"

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

int pl_artifacts_write(const pl_run *run, char *err, size_t errlen)
{
    pl_report_file files[] = {
        {.name = "run.json", .json = pl_run_to_json(run)},
        {.name = "summary.md", .text = pl_run_summary_markdown(run)},
        {.name = "results.csv", .text = pl_run_results_csv(run)},
    };
    int rc = pl_report_write_files(run->run_dir, files, 3, err, errlen);
    for (size_t i = 0; i < 3; i++) {
        json_decref(files[i].json);
        free(files[i].text);
    }
    return rc;
}
