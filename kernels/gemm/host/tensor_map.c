#include "gemm/host/tensor_map.h"

#include <stddef.h>

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static encode_tiled_fn encoder(void)
{
    static encode_tiled_fn fn;
    static int looked;
    if (!looked) {
        void *p = NULL;
        enum cudaDriverEntryPointQueryResult q;
        /* the 12.0 ABI of cuTensorMapEncodeTiled, the one this code was written against */
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (encode_tiled_fn)p;
        looked = 1;
    }
    return fn;
}

/* swizzled: the 128-byte swizzle (box rows of 128 bytes at most); else none (dense box rows, 16-byte multiples) */
static cudaError_t tensor_map(CUtensorMap *map, const void *base, uint64_t rows, uint64_t cols, uint32_t elem_bytes,
                              uint32_t box_rows, uint32_t box_cols, int swizzled)
{
    /* the arguments first: a bad one is cudaErrorInvalidValue on any machine, with a driver or without */
    if ((elem_bytes != 1 && elem_bytes != 2) || (uintptr_t)base % 16 != 0 || (cols * elem_bytes) % 16 != 0 ||
        box_rows < 1 || box_rows > 256 || box_cols < 1 ||
        (swizzled ? box_cols * elem_bytes > 128 : (box_cols * elem_bytes) % 16 != 0 || box_cols > 256))
        return cudaErrorInvalidValue;
    encode_tiled_fn fn = encoder();
    if (!fn)
        return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {cols, rows};           /* innermost first */
    const cuuint64_t strides[1] = {cols * elem_bytes}; /* bytes between rows */
    const cuuint32_t box[2] = {box_cols, box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUtensorMapDataType type = elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    CUresult r = fn(map, type, 2, (void *)base, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    swizzled ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t pl_tensor_map_2d(CUtensorMap *map, const void *base, uint64_t rows, uint64_t cols, uint32_t elem_bytes,
                             uint32_t box_rows, uint32_t box_cols)
{
    return tensor_map(map, base, rows, cols, elem_bytes, box_rows, box_cols, 1);
}

cudaError_t pl_tensor_map_bf16_dense(CUtensorMap *map, const void *base, uint64_t rows, uint64_t cols,
                                     uint32_t box_rows, uint32_t box_cols)
{
    return tensor_map(map, base, rows, cols, 2, box_rows, box_cols, 0);
}

cudaError_t pl_tensor_map_bf16(CUtensorMap *map, const void *base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                               uint32_t box_cols)
{
    return pl_tensor_map_2d(map, base, rows, cols, 2, box_rows, box_cols);
}

cudaError_t pl_tensor_map_operand_bf16(CUtensorMap *map, const void *base, uint64_t rows, uint64_t k, uint32_t box_rows,
                                       int mn_major)
{
    if (mn_major)
        return pl_tensor_map_bf16(map, base, k, rows, PL_TENSOR_MAP_OPERAND_BK, 64);
    return pl_tensor_map_bf16(map, base, rows, k, box_rows, PL_TENSOR_MAP_OPERAND_BK);
}
