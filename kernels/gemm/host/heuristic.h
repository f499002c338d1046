/* Which native BF16 kernel to run for a problem: the pick behind pl_gemm_bf16 (gemm/gemm.h).
 *
 * The pick, in order:
 *   1. the table measured by a sweep (heuristic_table.c, written by scripts/gemm_heuristic_table.py from a
 *      `perflab gemm --shapes wide` comparison.json): the entry of the same layout (and SM count and L2 size, when it
 *      names them) nearest the problem, within a factor √2 in each of M, N and K, if its kernel is in the table
 *      (gemm/host/kernel_table.c), runs on this GPU and takes the problem. Entries that name this GPU's L2 size
 *      come first: GPUs of one SM count differ in their memory (the H100 SXM and the H200: 132 SMs both, 50 and 60
 *      MiB of L2, 3.35 and 4.8 TB/s of HBM), and a decode shape's best configuration with them; entries of any L2
 *      size serve where none does;
 *   2. otherwise the rule: the kernel with the smallest time by a roofline model with wave quantization
 *      (pl_gemm_model_us) scaled by the model's measured error for that kernel near the problem
 *      (pl_gemm_model_measured_us: the points of heuristic_points.c, every configuration's time at every shape a
 *      sweep measured, on a GPU of this SM count and L2 size); among those within 3% of it, the one that pads the
 *      least work (whole tiles), then the one that loads the fewest bytes from L2, then the kernel table's order.
 *      Where no point was measured on a GPU like this one, the model alone.
 * Before both: a kernel timed on this GPU for this very problem class (on-device tuning, gemm/tune.h), when one was.
 * The teaching rungs are never picked. What the model knows of each kernel (its efficiency, residency, persistence)
 * is in the kernel's row of the table (pl_gemm_model). */
#ifndef PERFLAB_GEMM_HEURISTIC_H
#define PERFLAB_GEMM_HEURISTIC_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#include "gemm/gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the pick needs to know of the GPU. */
typedef struct pl_gemm_gpu {
    int cc;               /* compute capability, major·10 + minor */
    int sms;              /* streaming multiprocessors */
    int clusters;         /* thread-block clusters can be launched */
    double hbm_gbps;      /* the model's HBM bandwidth; 0: PL_GEMM_MODEL_HBM_GBPS */
    double tensor_tflops; /* the model's dense bf16 rate at a GEMM's clock; 0: sms · 4096 FLOP/clk · 1.5 GHz */
    int l2_mib;           /* L2 size in MiB, rounded; with sms it tells the table's GPUs apart (0: unknown) */
} pl_gemm_gpu;

#define PL_GEMM_MODEL_HBM_GBPS  3000.0  /* the H100's measured copy rate; the H200 measures ~4200 (docs/perf) */
#define PL_GEMM_MODEL_CLOCK_GHZ 1.5     /* the SM clock of a large GEMM at the 700 W limit (docs/perf/gemm.md) */
#define PL_GEMM_TABLE_MAX_LOG2  0.5     /* a table entry applies within a factor 2^0.5 in each of M, N and K */
#define PL_GEMM_MODEL_L2_GBPS   10000.0 /* L2 to SMs: the 128×128 kernel drew ~9.8 TB/s at 628 TFLOP/s (docs/perf) */
#define PL_GEMM_MODEL_TIE       0.03    /* model times this close count as a tie */

/* An L2 size in bytes as pl_gemm_gpu.l2_mib and the table's entries give it: MiB, rounded. */
static inline int pl_gemm_l2_mib(size_t l2_bytes)
{
    return (int)((l2_bytes + ((size_t)1 << 19)) >> 20);
}

/* The current device's (cc, SM count, clusters, L2 size); rates left 0 (the model's defaults). */
cudaError_t pl_gemm_gpu_query(pl_gemm_gpu *g);
/* 1 when the kernel's needs (compute capability, features) are met by g. */
int pl_gemm_kernel_runs_on(const pl_gemm_kernel *k, const pl_gemm_gpu *g);

/* One measured decision: problems near (m, n, k) with this layout run `kernel` on the GPU it was measured on. */
typedef struct pl_gemm_heuristic_entry {
    const char *layout; /* "nk" | "kn" */
    int sms;            /* that GPU's SM count; 0: any GPU */
    int m, n, k;
    const char *kernel; /* a kernel's name in the kernel table */
    int l2_mib;         /* that GPU's L2 size (MiB); 0: any GPU of `sms` SMs (consulted after the entries that match) */
} pl_gemm_heuristic_entry;

/* The committed table (heuristic_table.c, generated); n entries. */
const pl_gemm_heuristic_entry *pl_gemm_heuristic_table(size_t *n);

/* One measured point: `kernel` took `us` on (m, n, k) with this layout, on a GPU of `sms` SMs and `l2_mib` MiB of
 * L2 (written by scripts/gemm_points_table.py from perflab gemm runs). */
typedef struct pl_gemm_point {
    const char *layout; /* "nk" | "kn" */
    int sms, l2_mib;
    int m, n, k;
    const char *kernel;
    double us;
} pl_gemm_point;

/* The committed points (heuristic_points.c, generated); n points. */
const pl_gemm_point *pl_gemm_heuristic_points(size_t *n);

/* The width, in octaves of each of M, N and K, over which a point's error informs the model: a point at distance d
 * (the root of the summed squares of log2 ratios) weighs exp(-d² / 2σ²). Chosen by leaving each measured shape out
 * in turn and picking it from the others (docs/gemm.md): 1.5 did best of 0.7-3 on the H200's 76 shapes. */
#define PL_GEMM_POINTS_SIGMA 1.5

typedef struct pl_gemm_pick {
    const pl_gemm_kernel *kernel; /* NULL when no enumerated kernel takes the problem */
    int from_table;               /* 1: a table entry decided; 0: the model */
    int tuned;                    /* 1: timed on this GPU by pl_gemm_bf16_tune (gemm/tune.h) */
    double model_us;              /* the model's time of the pick (NaN when the table decided) */
    char why[192];                /* one line: which entry, or the model's figures; why none */
} pl_gemm_pick;

/* The model's time in µs of kernel k on problem p: launch + max(compute, memory) + per-tile overheads, where
 *   compute = ⌈CTAs / SMs⌉ · (2 · tile_m · tile_n · K per split) / (per-SM tensor rate · the kernel's efficiency),
 *   memory  = (A + B + D bytes) / (HBM bandwidth · min(1, busy SMs / half the SMs)),
 *   L2      = the bytes the tiles load from L2 (tile_m- and tile_n-row panels of K per tile)
 *             / PL_GEMM_MODEL_L2_GBPS, when that is larger,
 * CTAs = tiles · split (split-K: pl_gemm_sk_split's), tiles padded to whole tiles (waves and edges both count).
 * The efficiencies (k->model) are the measured fractions of the power-capped peak (docs/perf/gemm.md), or predictions
 * where the kernel table says so. Infinity when the kernel does not take the problem. */
double pl_gemm_model_us(const pl_gemm_kernel *k, const pl_gemm_problem *p, const pl_gemm_gpu *g);

/* The model's time scaled by its error for k at the points near p: model · exp(Σ wᵢ·ln(measuredᵢ / modelᵢ) / Σ wᵢ)
 * over the points of k measured with p's layout on a GPU of g's SM count and L2 size, wᵢ as PL_GEMM_POINTS_SIGMA
 * says. The model alone where k has no such point; infinity where k does not take p. */
double pl_gemm_model_measured_us(const pl_gemm_kernel *k, const pl_gemm_problem *p, const pl_gemm_gpu *g,
                                 const pl_gemm_point *points, size_t npoints);

/* The pick from a given table and given points (pure: no GPU needed; p's pointers are only checked for alignment).
 * Returns 0, or -1 when no enumerated kernel runs on g and takes p (out->why says why). */
int pl_gemm_bf16_pick_measured(const pl_gemm_problem *p, const pl_gemm_gpu *g, const pl_gemm_heuristic_entry *table,
                               size_t n, const pl_gemm_point *points, size_t npoints, pl_gemm_pick *out);
/* The same with no points: the table, then the model alone. */
int pl_gemm_bf16_pick_from(const pl_gemm_problem *p, const pl_gemm_gpu *g, const pl_gemm_heuristic_entry *table,
                           size_t n, pl_gemm_pick *out);
/* The same from the committed table and points. The picks are remembered (a few hundred problems, each with its GPU
 * and its operands' alignment; thread-safe), so that a step calling the same GEMMs again pays the model once. */
int pl_gemm_bf16_pick(const pl_gemm_problem *p, const pl_gemm_gpu *g, pl_gemm_pick *out);

/* The kernels eligible for p on g, fastest first by the model scaled by the points (pl_gemm_model_measured_us): at
 * most max of them into kernels[] and their model times into us[]; returns how many. On-device tuning times the
 * first few (gemm/tune.h). */
size_t pl_gemm_bf16_rank(const pl_gemm_problem *p, const pl_gemm_gpu *g, const pl_gemm_point *points, size_t npoints,
                         const pl_gemm_kernel **kernels, double *us, size_t max);

/* What a pick depends on besides the shape, layout and GPU: which epilogue inputs are given (bit 0 bias, 1 residual,
 * 2 GELU) and whether every operand is 16-byte aligned. */
int pl_gemm_problem_epilogue(const pl_gemm_problem *p);
int pl_gemm_problem_aligned(const pl_gemm_problem *p);

/* The kernel pl_gemm_bf16_tune (or a loaded tune file) found fastest for p's problem class on a GPU like g, with its
 * median time in *us; NULL when none was tuned (gemm/host/tune.c). */
const pl_gemm_kernel *pl_gemm_tuned_kernel(const pl_gemm_problem *p, const pl_gemm_gpu *g, double *us);
/* 1 when pl_gemm_set_autotune(1) asked pl_gemm_bf16 to tune the problem classes it meets. */
int pl_gemm_autotune_on(void);

/* The FP8 pick behind pl_gemm_fp8 (gemm/fp8.h): the model's stage alone (no table, no points yet) over the FP8 table's
 * kernels that take p (its scaling and promotion; never the less accurate every-512-K row unless p asks for
 * promote = 4, which only the 128×192 kernels run), the model counting e4m3 operands at twice the BF16 tensor rate.
 * Returns 0, or -1 with out->why. */
struct pl_gemm_fp8_problem;
int pl_gemm_fp8_pick(const struct pl_gemm_fp8_problem *p, const pl_gemm_gpu *g, pl_gemm_pick *out);

#ifdef __cplusplus
}
#endif
#endif
