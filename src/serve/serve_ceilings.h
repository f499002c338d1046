/* The ceilings a floor (the engine's computed ceiling for a workload) is computed at: what `perflab peak` measured on
 * this kind of GPU and stored (core/ceilings.h), or what the user gave (--hbm-gbps, --tensor-tflops). Kept apart
 * from the engine's headers: both name a struct pl_ceilings. */
#ifndef PERFLAB_SERVE_SERVE_CEILINGS_H
#define PERFLAB_SERVE_SERVE_CEILINGS_H

#include <stddef.h>

typedef struct pl_serve_ceil {
    double hbm_gbps, tensor_tflops; /* bytes/s and FLOP/s as GB/s (1e9) and TFLOP/s (1e12) */
    char source[512];               /* where they came from, for every output */
} pl_serve_ceil;

/* The stored ceilings of GPU `gpu_name` under artifacts_dir (or $PERFLAB_CEILINGS): device memory and the tensor
 * cores at fp8 (nonzero) or bf16. 0 loaded; 1 none stored, or the two figures not measured (err says which); -1 a
 * malformed file (err says where). */
int pl_serve_ceil_load(const char *artifacts_dir, const char *gpu_name, int fp8, pl_serve_ceil *out, char *err,
                       size_t errlen);

/* The ceilings of GPU `device` (named gpu_name) for the floor: the stored ones, else measured now by `perflab peak
 * --quick --only memory,tensor --device N --artifacts-dir artifacts_dir` in a child process (its output in
 * log_path), which stores them. 0 with *out filled, or -1 with one line in err. */
int pl_serve_ceil_measure(const char *artifacts_dir, const char *gpu_name, int device, int fp8, const char *log_path,
                          pl_serve_ceil *out, char *err, size_t errlen);

#endif
