/* perflab profile TARGET [--variant V]: each variant (or the one named) replayed once under Nsight Compute with the
 * fixed metric set (ncu.h), the .ncu-rep kept in a new artifacts folder with profile.json and summary.md, the
 * findings worth reading first, and an Nsight Systems timeline of the same replay where nsys runs. */
#ifndef PERFLAB_CORE_PROFILE_H
#define PERFLAB_CORE_PROFILE_H

#include <jansson.h>
#include <stddef.h>

typedef struct pl_profile_request {
    const char *target;            /* group:name */
    const char *variant;           /* NULL: every variant */
    const char *const *extra_args; /* 'group:name=--param value' each, as perflab run takes them */
    size_t n_extra;
    const char *artifacts_dir; /* the folder <artifacts_dir>/<run_id>/ is made in it */
    int device;
    unsigned long long seed;
    double timeout_s; /* per replay */
    int nsys;         /* also an nsys timeline where nsys is on the PATH */
    int argc;         /* the command line, for provenance */
    char **argv;
} pl_profile_request;

/* Returns the exit code: 0 (every replay measured), 1 (a replay failed: its entry says why), 2 (bad input; err),
 * 3 (no usable GPU, or no ncu; err). *out is profile.json's document (NULL on 2 and 3); the files are written. */
int pl_profile_run(const pl_profile_request *req, json_t **out, char *err, size_t errlen);

#endif
