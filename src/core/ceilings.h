/* The ceilings `perflab peak` measured on one kind of GPU, stored as <artifacts-dir>/ceilings-<hardware_key>.json
 * (or $PERFLAB_CEILINGS) for later runs: `perflab run --profile roofline` shows each variant's share of them. */
#ifndef PERFLAB_HW_CEILINGS_H
#define PERFLAB_HW_CEILINGS_H

#include <jansson.h>
#include <stddef.h>

#include "perflab/results.h"

#define PL_CEILINGS_SCHEMA_VERSION 1

/* The named ceilings, each the best measured way to reach it (NAN when not measured). */
typedef enum pl_ceiling_id {
    PL_CEIL_HBM_GBPS,    /* device memory, bytes read + written, the better of the copy kernel and cudaMemcpy */
    PL_CEIL_L2_GBPS,     /* bytes read */
    PL_CEIL_SMEM_GBPS,   /* bytes read */
    PL_CEIL_FP32_TFLOPS, /* CUDA cores */
    PL_CEIL_FP64_TFLOPS,
    PL_CEIL_BF16_TFLOPS, /* tensor cores, cuBLASLt */
    PL_CEIL_FP16_TFLOPS,
    PL_CEIL_TF32_TFLOPS,
    PL_CEIL_FP8_TFLOPS,
    PL_CEIL_H2D_GBPS, /* pinned */
    PL_CEIL_D2H_GBPS,
    PL_CEIL_COUNT
} pl_ceiling_id;

typedef struct pl_ceilings {
    char *hardware_key;
    char *gpu_name;
    char *run_id;
    char *measured_at;
    double value[PL_CEIL_COUNT];
    char *source[PL_CEIL_COUNT]; /* which peak figure it came from */
} pl_ceilings;

void pl_ceilings_init(pl_ceilings *c); /* every value NAN */
void pl_ceilings_free(pl_ceilings *c);
json_t *pl_ceilings_to_json(const pl_ceilings *c);
int pl_ceilings_from_json(json_t *j, pl_ceilings *out, char *err, size_t errlen);
/* 0 loaded, 1 no such file, -1 malformed (err says where). */
int pl_ceilings_load(const char *path, pl_ceilings *out, char *err, size_t errlen);
int pl_ceilings_save(const pl_ceilings *c, const char *path, char *err, size_t errlen);
/* $PERFLAB_CEILINGS if set, else <artifacts_dir>/ceilings-<hardware_key>.json. malloc'd. */
char *pl_ceilings_path(const char *artifacts_dir, const char *hardware_key);

/* A roofline run records the ceilings `perflab peak` stored under artifacts_dir for its GPU kind (run->ceilings;
 * nothing for other profiles), so that its report never reads them from disk later. verb names the command in the one
 * line said when the stored file is unreadable. */
void pl_run_load_ceilings(pl_run *run, const char *artifacts_dir, const char *verb);

#endif
