/* TMA tensor maps for the sm_90a GEMM kernels, encoded on the host through the driver's entry point (found at
 * run time through the CUDA runtime, so nothing links libcuda). */
#ifndef PERFLAB_GEMM_TENSOR_MAP_H
#define PERFLAB_GEMM_TENSOR_MAP_H

#include <stdint.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A row-major bf16 matrix of `rows` rows of `cols` elements (row pitch = cols), read in boxes of box_rows ×
 * box_cols with 128-byte swizzle (box_cols · 2 must be 128 at most): the layout wgmma_desc_k128 describes.
 * Elements outside the matrix read as zeros. cols · 2 must be a multiple of 16 and base 16-byte aligned;
 * cudaErrorInvalidValue otherwise. */
cudaError_t pl_tensor_map_bf16(CUtensorMap *map, const void *base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                               uint32_t box_cols);

/* The same for elements of `elem_bytes` bytes (1: e4m3 bytes, 2: bf16): box_cols · elem_bytes must be 128 at most,
 * cols · elem_bytes a multiple of 16. */
cudaError_t pl_tensor_map_2d(CUtensorMap *map, const void *base, uint64_t rows, uint64_t cols, uint32_t elem_bytes,
                             uint32_t box_rows, uint32_t box_cols);

/* A bf16 matrix as above, its boxes without swizzle: box rows lie densely in shared memory, box_cols · 2 bytes
 * apart (a multiple of 16). For the last, narrower subtile of an output tile whose width is not a multiple of 64
 * (the 176-column tiles' 48 columns). */
cudaError_t pl_tensor_map_bf16_dense(CUtensorMap *map, const void *base, uint64_t rows, uint64_t cols,
                                     uint32_t box_rows, uint32_t box_cols);

/* A wgmma operand of `rows` rows (A's M, B's N) against `k`, read 64 K a box, as gemm/device/sm90_operand.cuh's
 * policies read it: K-major (stored rows × K: boxes of box_rows rows × 64 K) or, mn_major, stored K × rows (boxes of
 * 64 K rows × 64 of its rows; box_rows unused). The conditions of pl_tensor_map_bf16 apply to the stored matrix
 * (K-major: k % 8 == 0; MN-major: rows % 8 == 0). */
#define PL_TENSOR_MAP_OPERAND_BK 64
cudaError_t pl_tensor_map_operand_bf16(CUtensorMap *map, const void *base, uint64_t rows, uint64_t k, uint32_t box_rows,
                                       int mn_major);

#ifdef __cplusplus
}
#endif
#endif
