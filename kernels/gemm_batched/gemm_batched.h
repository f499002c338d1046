/* Many small BF16 GEMMs of one shape at once (attention heads, experts, LoRA adapters): D_i = A_i·B_iᵀ for
 * i < count, A_i M×K row-major, B_i N×K row-major (K-major, as Q·Kᵀ of attention), D_i M×N row-major bf16, fp32
 * accumulation. The operands of one problem follow each other in memory (strides M·K, N·K, M·N elements). */
#ifndef PERFLAB_GEMM_BATCHED_H
#define PERFLAB_GEMM_BATCHED_H

#include <stdint.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "common/needs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_gemm_batch {
    int m, n, k, count;
    const uint16_t *a; /* count × M × K bf16 bits */
    const uint16_t *b; /* count × N × K */
    uint16_t *d;       /* count × M × N */
} pl_gemm_batch;

/* One launch for the whole batch: mma.sync tensor cores (sm_80+; PL_BATCHED_PDL: sm_90+), a 64×64 tile of one problem
 * per block. Any M, N, K; 16-byte cp.async loads when K % 8 == 0 and the operands are 16-byte aligned, else an
 * element-wise path. count <= 65535. `options` picks a rung of the ladder, each adding one technique to the one
 * before: 0; STAGED_STORE; STAGED_STORE | K_HALVES; STAGED_STORE | K_HALVES | PDL (other sets, sizes < 1:
 * cudaErrorInvalidValue without launching). */
enum pl_gemm_batched_options {
    PL_BATCHED_STAGED_STORE = 1u << 0, /* D through shared memory, 16-byte coalesced stores */
    PL_BATCHED_K_HALVES = 1u << 1,     /* each k-tile in two cp.async groups: mma on the first while the second lands */
    PL_BATCHED_PDL = 1u << 2,          /* programmatic dependent launch: the next kernel may launch at once */
};
cudaError_t pl_gemm_batched_mma(const pl_gemm_batch *p, unsigned options, cudaStream_t stream);
/* what it needs: mma.sync with bf16 (sm_80+); griddepcontrol for PL_BATCHED_PDL (sm_90+) */
#define PL_GEMM_BATCHED_MMA_NEEDS                                                                                      \
    {                                                                                                                  \
        80, 0, 0                                                                                                       \
    }
#define PL_GEMM_BATCHED_PDL_NEEDS                                                                                      \
    {                                                                                                                  \
        90, 0, 0                                                                                                       \
    }

/* The same with cuBLAS: one cublasGemmStridedBatchedEx call (fp32 compute, default algorithm), on the handle's
 * stream. */
cublasStatus_t pl_gemm_batched_cublas_strided(cublasHandle_t h, const pl_gemm_batch *p);

#ifdef __cplusplus
}
#endif
#endif
