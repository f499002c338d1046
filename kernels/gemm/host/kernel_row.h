/* What a kernel's row of the tables (gemm.h's pl_gemm_kernel) is written with. Each recipe declares its rows beside
 * its launchers (portable/<recipe>_rows.c, sm90/<recipe>_rows.c), one `const pl_gemm_kernel pl_gemm_row_<name>` a
 * configuration with designated initializers; host/kernel_table.c puts them in the tables' order. */
#ifndef PERFLAB_GEMM_KERNEL_ROW_H
#define PERFLAB_GEMM_KERNEL_ROW_H

#include <stddef.h>

#include "gemm/gemm.h"

/* The kernels that read A and B through TMA (and the decode GEMVs, with 16-byte loads of the same rows) take B N×K
 * (K-major for both operands, as wgmma takes them without transposition), K % 8 == 0 and 16-byte aligned A and B:
 * TMA reads rows whose pitch is a multiple of 16 bytes from 16-byte aligned bases. 1 when p is such a problem; else 0
 * with the reason in why. */
int pl_gemm_supports_tma(const pl_gemm_problem *p, char *why, size_t whylen);
/* The same for the kernels that read B K×N through TMA (the _kn rows: B N-major, 64-column boxes): B K×N, K % 8 == 0
 * (A's rows), N % 8 == 0 (B's rows) and 16-byte aligned A and B. */
int pl_gemm_supports_tma_kn(const pl_gemm_problem *p, char *why, size_t whylen);

/* ---- the FP8 rows run with a whole FP8 problem (sm90/fp8_ws_rows.c) ----
 * 1 when the row's kernel takes p's scaling and promotion (128×176: tensor scaling only; the 128-wide kernels:
 * promotion every k-block only); the row's own `supports` checks the rest. */
struct pl_gemm_fp8_problem;
/* The FP8 problem a row of the FP8 table is given as a pl_gemm_problem: its e4m3 A and B, D, tensor scaling with unit
 * scales. */
struct pl_gemm_fp8_problem pl_gemm_fp8_problem_of(const pl_gemm_problem *p);
/* What every FP8 row needs of such a problem: B N×K, no epilogue, and what pl_gemm_fp8_supports asks. */
int pl_gemm_fp8_row_supports(const pl_gemm_problem *p, char *why, size_t whylen);
/* The FP8 table's launcher `name` of FP8 kernel `fn` (unit scales, promotion every 128 K). */
#define PL_GEMM_FP8_ROW_LAUNCHER(name, fn)                                                                             \
    static cudaError_t name(const pl_gemm_problem *p, cudaStream_t stream)                                             \
    {                                                                                                                  \
        const struct pl_gemm_fp8_problem q = pl_gemm_fp8_problem_of(p);                                                \
        return fn(&q, stream);                                                                                         \
    }
int pl_gemm_fp8_row_takes(const pl_gemm_kernel *row, const struct pl_gemm_fp8_problem *p);
/* Runs the row's kernel on p (its scales, scaling and promotion); cudaErrorInvalidValue where it does not take p. */
cudaError_t pl_gemm_fp8_row_launch(const pl_gemm_kernel *row, const struct pl_gemm_fp8_problem *p, cudaStream_t stream);

/* ---- what the pick's model knows of a kernel (pl_gemm_model), written in its row ----
 * Mainloop efficiencies are fractions of the per-SM tensor rate, measured on an H200 (docs/perf/gemm.md) against
 * 132 · 4096 FLOP/clk · 1.5 GHz = 811 TFLOP/s (the FP8 rows against twice that), or predicted where a row's file says
 * so. The teaching rungs carry the model's floor (0.05): the pick never chooses them. */
#define PL_GEMM_MODEL_FLOOR                                                                                            \
    {                                                                                                                  \
        .eff = 0.05, .fused_eff = 0.05, .mem_eff = 1.0, .resident = 1                                                  \
    }
/* `r` CTAs an SM, one tile each, a fused epilogue at no cost */
#define PL_GEMM_MODEL_RESIDENT(e, r)                                                                                   \
    {                                                                                                                  \
        .eff = (e), .fused_eff = (e), .mem_eff = 1.0, .resident = (r)                                                  \
    }
/* one CTA an SM looping over tiles; a fused epilogue multiplies the efficiency by `fused` */
#define PL_GEMM_MODEL_PERSISTENT(e, fused)                                                                             \
    {                                                                                                                  \
        .eff = (e), .fused_eff = (e) * (fused), .mem_eff = 1.0, .resident = 1, .persistent = 1                         \
    }

#endif
