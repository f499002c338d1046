/* The model's own kernels (model.h): the embedding lookup, a row gather and the greedy argmax. */
#include <cuda_runtime.h>

#include "engine/model.h"

/* a block a row, 16-byte copies when the width allows */
__global__ void gather_rows_kernel(const uint16_t *src, const int *rows, int width, int limit, uint16_t *dst)
{
    int r = rows[blockIdx.x];
    if (r < 0 || r >= limit)
        r = 0;
    const uint16_t *s = src + (size_t)r * width;
    uint16_t *d = dst + (size_t)blockIdx.x * width;
    if (width % 8 == 0) {
        for (int i = threadIdx.x; i < width / 8; i += blockDim.x)
            ((uint4 *)d)[i] = ((const uint4 *)s)[i];
    } else {
        for (int i = threadIdx.x; i < width; i += blockDim.x)
            d[i] = s[i];
    }
}

__device__ static float bf16_f(uint16_t b)
{
    return __uint_as_float((uint32_t)b << 16);
}

/* a block a row: each thread's best (value, lowest index), then a shared-memory tree; NaN counts as smallest */
__global__ void argmax_kernel(const uint16_t *logits, int vocab, int *out)
{
    __shared__ float best_v[256];
    __shared__ int best_i[256];
    const uint16_t *row = logits + (size_t)blockIdx.x * vocab;
    float bv = -INFINITY;
    int bi = vocab;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
        const float v = bf16_f(row[i]);
        if (v > bv || (bi == vocab && v == v))
            bv = v, bi = i;
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) {
            const float ov = best_v[threadIdx.x + s];
            const int oi = best_i[threadIdx.x + s];
            if (oi < vocab && (best_i[threadIdx.x] == vocab || ov > best_v[threadIdx.x] ||
                               (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x])))
                best_v[threadIdx.x] = ov, best_i[threadIdx.x] = oi;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = best_i[0] < vocab ? best_i[0] : 0;
}

extern "C" cudaError_t pl_engine_embed(const uint16_t *embed, const int *tokens, int n, int hidden, int vocab,
                                       uint16_t *x, cudaStream_t stream)
{
    if (n < 1 || hidden < 1 || vocab < 1)
        return cudaErrorInvalidValue;
    gather_rows_kernel<<<n, 128, 0, stream>>>(embed, tokens, hidden, vocab, x);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_gather_rows(const uint16_t *src, const int *rows, int n, int width, uint16_t *dst,
                                             cudaStream_t stream)
{
    if (n < 1 || width < 1)
        return cudaErrorInvalidValue;
    gather_rows_kernel<<<n, 128, 0, stream>>>(src, rows, width, 0x7fffffff, dst);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_argmax(const uint16_t *logits, int n, int vocab, int *out, cudaStream_t stream)
{
    if (n < 1 || vocab < 1)
        return cudaErrorInvalidValue;
    argmax_kernel<<<n, 256, 0, stream>>>(logits, vocab, out);
    return cudaGetLastError();
}
