/* One schema for every provider's GEMM results (cuBLAS, cuBLASLt, perflab, CUTLASS, or a JSON file made
 * elsewhere): a record per (provider, shape, kernel configuration). Files of records are what `json:FILE` reads
 * and what perflab gemm writes per provider. */
#ifndef PERFLAB_SELECTOR_RECORDS_H
#define PERFLAB_SELECTOR_RECORDS_H

#include <jansson.h>
#include <stddef.h>

#define PL_GEMM_RECORDS_SCHEMA    "perflab.gemm.records/1"
#define PL_GEMM_COMPARISON_SCHEMA "perflab.gemm.comparison/1"

typedef enum pl_gemm_status {
    PL_GEMM_OK,          /* verified and timed */
    PL_GEMM_FAILED,      /* ran and failed: wrong result, error, crash, timeout */
    PL_GEMM_UNSUPPORTED, /* the provider cannot do this shape/dtype/layout (or is not available here) */
    PL_GEMM_MISSING,     /* nothing came back for it */
    PL_GEMM_STATUS_COUNT
} pl_gemm_status;

const char *pl_gemm_status_name(pl_gemm_status s);
int pl_gemm_status_from_name(const char *name); /* -1 when unknown */

typedef struct pl_gemm_record {
    char *provider; /* "cublas", "cublaslt", "perflab", "cutlass", or a json file's own (e.g. "triton") */
    char *shape;
    long long m, n, k;
    char *dtype;                     /* bf16 | fp16 | fp8 */
    char *layout;                    /* nk (B given N×K) | kn */
    char *kernel;                    /* the kernel or algorithm and its configuration, one line */
    json_t *config;                  /* provider-specific key/values, or NULL */
    double median_ms, tflops, noise; /* noise: robust relative spread of the samples; NaN when unknown */
    long long samples;
    int verified;
    double rel_l2_error; /* NaN when unknown */
    pl_gemm_status status;
    char *reason; /* why not ok; NULL when ok */
} pl_gemm_record;

void pl_gemm_record_free(pl_gemm_record *r);
void pl_gemm_record_copy(pl_gemm_record *dst, const pl_gemm_record *src);
json_t *pl_gemm_record_to_json(const pl_gemm_record *r);
/* Reads one record; `where` (e.g. "FILE: records[3]") prefixes errors, which name the key and what was expected.
 * tflops is derived from m, n, k and median_ms when absent. */
int pl_gemm_record_from_json(json_t *j, const char *where, pl_gemm_record *out, char *err, size_t errlen);

typedef struct pl_gemm_record_list {
    pl_gemm_record *items;
    size_t n, cap;
} pl_gemm_record_list;

void pl_gemm_record_list_push(pl_gemm_record_list *l, pl_gemm_record *r); /* takes ownership of r's contents */
void pl_gemm_record_list_free(pl_gemm_record_list *l);

/* A records file: {"schema": "perflab.gemm.records/1", "provider": ..., "records": [...]} or a bare array of
 * records. Syntax errors read FILE:LINE:COLUMN; schema errors name the record and key. */
int pl_gemm_records_load(const char *path, pl_gemm_record_list *out, char *err, size_t errlen);
json_t *pl_gemm_records_to_json(const char *provider, const pl_gemm_record_list *l);

/* The fastest verified, ok record of the list (records of one problem); NULL if none. */
const pl_gemm_record *pl_gemm_records_fastest(const pl_gemm_record_list *l);

#endif
