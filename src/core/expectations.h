/* Per-GPU expectations (expectations_file.c: the files; expectations.c: the judgement): expectations/<hardware_key>.json holds the median time each target variant should reach
 * on that kind of GPU. A run is compared with them (met/improved/regressed/new/missing); a regression is a
 * slowdown beyond both the stored tolerance and the measured noise. */
#ifndef PERFLAB_CORE_EXPECTATIONS_H
#define PERFLAB_CORE_EXPECTATIONS_H

#include <stddef.h>
#include "perflab/results.h"

#define PL_EXPECTATIONS_SCHEMA_VERSION 1
#define PL_EXPECT_DEFAULT_TOLERANCE    0.10 /* 10% slower than expected is tolerated */
#define PL_EXPECT_NOISE_SIGMAS         3.0  /* and the slowdown must exceed this many combined noise sigmas */

typedef struct pl_expect_entry {
    char *target; /* group:name */
    char *variant;
    double median_ms;
    double rel_noise; /* the noise measured when stored */
    double tolerance; /* relative, e.g. 0.10 */
    char *params;     /* canonical "k=v k=v" of the parameters measured; a run with others is not compared */
    char *host;       /* a host-timed variant's: the PERFLAB_HOST_KEY it was stored under; NULL for an unnamed host */
    char *updated_at; /* ISO 8601 */
    char *git_commit;
} pl_expect_entry;

typedef struct pl_expectations {
    int schema_version;
    char *hardware_key;
    char *gpu_name; /* provenance of the last update */
    char *perflab_version;
    char *updated_at;
    pl_expect_entry *entries;
    size_t n_entries;
} pl_expectations;

/* Where the expectation files live: --expectations-dir if given, else $PERFLAB_EXPECTATIONS_DIR, else
 * ./expectations when it exists, else the source tree's expectations/. malloc'd. */
char *pl_expectations_dir(const char *explicit_dir);

/* A hardware key names a file, so it is a plain name: lower-case letters, digits and '_' ([a-z0-9_]+), the keys
 * of GPUs of different kinds joined by '+' (2x_h200+l40s), at most PL_EXPECT_KEY_MAX bytes. -1 with one line
 * naming where the key came from (`from`: "--key", "the run's provenance.hardware_key", ...) otherwise. */
#define PL_EXPECT_KEY_MAX 128
int pl_expectations_key_check(const char *key, const char *from, char *err, size_t errlen);
/* <dir>/<key>.json with dir from pl_expectations_dir(explicit_dir); NULL with the key refused (above). */
char *pl_expectations_path(const char *explicit_dir, const char *key, const char *from, char *err, size_t errlen);
/* What every entry must be, for the loader and the writer alike (so that nothing is written that the loader then
 * refuses): a printable "group:name" target and variant, a positive finite median, finite rel_noise and tolerance
 * >= 0, optional strings in UTF-8. -1 with "what is wrong" (no file name) otherwise. */
int pl_expect_entry_check(const pl_expect_entry *x, char *err, size_t errlen);

/* Returns 0 on success, 1 when the file does not exist (*out is then an empty set for `key`), -1 when it is
 * malformed: err then reads "FILE:LINE:COLUMN: what is wrong" for a syntax error, or
 * "FILE: entries[3].median_ms: expected a positive number, found -1" for a schema error. */
int pl_expectations_load(const char *path, const char *key, pl_expectations *out, char *err, size_t errlen);
/* Refuses (-1, nothing written) a set the loader would refuse: an invalid key or entry. */
int pl_expectations_save(const pl_expectations *e, const char *path, char *err, size_t errlen);
void pl_expectations_free(pl_expectations *e);
/* The entry of a target/variant, or NULL; the order entries are saved in (target, then variant). */
pl_expect_entry *pl_expectations_find(const pl_expectations *e, const char *target, const char *variant);
int pl_expect_entry_cmp(const void *a, const void *b);

/* Compare a run's results with the expectations. Only targets in the run are judged; an expected variant of
 * such a target without a timed result is `missing`; a result without an expectation (or measured with other
 * parameters) is `new`; a host-timed variant is judged only when the run and the entry name the same host
 * (PERFLAB_HOST_KEY), and is `ungated` otherwise. Fills out->rows, out->regressions and out->present; the caller sets key, file,
 * file_found and accepted. */
void pl_expectations_compare(const pl_expectations *e, const pl_run *run, pl_expect_report *out);

/* Store every timed (ok) variant of the run, replacing entries of the same target/variant, keeping others.
 * Provenance (GPU name, version, commit, time) comes from the run. Returns the number of entries written. */
size_t pl_expectations_update(pl_expectations *e, const pl_run *run);

/* Canonical "k=v k=v" of a target result's parameters (malloc'd). */
char *pl_params_canonical(const pl_target_result *t);

#endif
