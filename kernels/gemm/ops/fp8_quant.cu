/* FP8 quantization for the FP8 GEMMs: bf16 -> e4m3 with one scale per tensor, per row and 128 columns (1×128,
 * activations) or per 128×128 block (weights), and back. Every scale is a power of two, 2^⌈log2(amax/448)⌉: the
 * division by it is exact, the only error is e4m3's rounding, and q · scale is exactly a bf16 value, so the
 * dequantized operands are the quantized ones, exactly (a bf16 GEMM of them is the FP8 GEMM's ideal result).
 * Amax reductions: a warp per 1×128 row block (4 values a lane), a 256-thread block per 128×128 block, atomicMax
 * on the bits of |x| (non-negative floats order as their bits) for the tensor. */
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "gemm/fp8.h"

#define Q_THREADS 256

static unsigned q_grid(size_t work, unsigned per_block)
{
    size_t blocks = (work + per_block - 1) / per_block;
    return (unsigned)(blocks < 1 ? 1 : blocks > 132 * 32 ? 132 * 32 : blocks);
}

__device__ __forceinline__ float bf16_at(const uint16_t *x, size_t i)
{
    return __uint_as_float((uint32_t)x[i] << 16);
}

/* 2^⌈log2(amax/448)⌉, or 1 when amax is 0 (a block of zeros) or not finite. */
__device__ __forceinline__ float pow2_scale(float amax)
{
    if (!(amax > 0.0f) || !isfinite(amax))
        return 1.0f;
    int e;
    const float m = frexpf(amax / PL_FP8_E4M3_MAX, &e); /* amax/448 = m · 2^e, m in [0.5, 1) */
    return ldexpf(1.0f, m > 0.5f ? e : e - 1);
}

__device__ __forceinline__ uint8_t to_e4m3(float v)
{
    const __nv_fp8_e4m3 q(v); /* round to nearest even, saturating */
    return *reinterpret_cast<const uint8_t *>(&q);
}

__device__ __forceinline__ float from_e4m3(uint8_t bits)
{
    __nv_fp8_e4m3 q;
    *reinterpret_cast<uint8_t *>(&q) = bits;
    return float(q);
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* ---- per tensor ---- */

__global__ void amax_kernel(const uint16_t *x, size_t n, unsigned *amax)
{
    float m = 0.0f;
    for (size_t i = blockIdx.x * (size_t)Q_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * Q_THREADS)
        m = fmaxf(m, fabsf(bf16_at(x, i)));
    m = warp_max(m);
    if ((threadIdx.x & 31) == 0)
        atomicMax(amax, __float_as_uint(m));
}

__global__ void quantize_tensor_kernel(const uint16_t *x, size_t n, uint8_t *q, float *scale, const unsigned *amax)
{
    const float s = pow2_scale(__uint_as_float(*amax)), inv = 1.0f / s;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *scale = s;
    for (size_t i = blockIdx.x * (size_t)Q_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * Q_THREADS)
        q[i] = to_e4m3(bf16_at(x, i) * inv);
}

extern "C" cudaError_t pl_fp8_quantize_tensor(const uint16_t *x, size_t n, uint8_t *q, float *scale,
                                              unsigned *amax_scratch, cudaStream_t stream)
{
    cudaError_t e = cudaMemsetAsync(amax_scratch, 0, sizeof *amax_scratch, stream);
    if (e != cudaSuccess)
        return e;
    amax_kernel<<<q_grid(n, Q_THREADS * 8), Q_THREADS, 0, stream>>>(x, n, amax_scratch);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    quantize_tensor_kernel<<<q_grid(n, Q_THREADS * 8), Q_THREADS, 0, stream>>>(x, n, q, scale, amax_scratch);
    return cudaGetLastError();
}

/* ---- 1×128: a warp per (row, 128 columns), lane l holds columns 4l..4l+3 of the block ---- */

__global__ void quantize_rows_kernel(const uint16_t *x, int rows, int cols, uint8_t *q, float *scale, int ld)
{
    const int kblocks = pl_fp8_kblocks(cols);
    const long long warps = (long long)rows * kblocks;
    const int lane = threadIdx.x & 31;
    for (long long w = (blockIdx.x * (long long)Q_THREADS + threadIdx.x) / 32; w < warps;
         w += (long long)gridDim.x * (Q_THREADS / 32)) {
        const int row = (int)(w / kblocks), kb = (int)(w % kblocks);
        const size_t base = (size_t)row * cols;
        float v[4], m = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int c = kb * PL_FP8_BLOCK + 4 * lane + j;
            v[j] = c < cols ? bf16_at(x, base + c) : 0.0f;
            m = fmaxf(m, fabsf(v[j]));
        }
        const float s = pow2_scale(warp_max(m)), inv = 1.0f / s;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int c = kb * PL_FP8_BLOCK + 4 * lane + j;
            if (c < cols)
                q[base + c] = to_e4m3(v[j] * inv);
        }
        if (lane == 0)
            scale[(size_t)kb * ld + row] = s;
    }
}

extern "C" cudaError_t pl_fp8_quantize_rows(const uint16_t *x, int rows, int cols, uint8_t *q, float *scale, int ld,
                                            cudaStream_t stream)
{
    const size_t warps = (size_t)rows * pl_fp8_kblocks(cols);
    quantize_rows_kernel<<<q_grid(warps, Q_THREADS / 32), Q_THREADS, 0, stream>>>(x, rows, cols, q, scale, ld);
    return cudaGetLastError();
}

/* ---- 128×128: a thread block per block of one matrix of the batch ---- */

__global__ void quantize_blocks_kernel(const uint16_t *x, int rows, int cols, uint8_t *q, float *scale, int ld)
{
    __shared__ float red[Q_THREADS / 32];
    const int nblocks = pl_fp8_kblocks(rows), kblocks = pl_fp8_kblocks(cols);
    const int kb = blockIdx.x % kblocks, nb = (blockIdx.x / kblocks) % nblocks, b = blockIdx.x / (kblocks * nblocks);
    const size_t base = (size_t)b * rows * cols;
    const int r0 = nb * PL_FP8_BLOCK, c0 = kb * PL_FP8_BLOCK;
    float m = 0.0f;
    for (int i = threadIdx.x; i < PL_FP8_BLOCK * PL_FP8_BLOCK; i += Q_THREADS) {
        const int r = r0 + i / PL_FP8_BLOCK, c = c0 + i % PL_FP8_BLOCK;
        if (r < rows && c < cols)
            m = fmaxf(m, fabsf(bf16_at(x, base + (size_t)r * cols + c)));
    }
    m = warp_max(m);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x / 32] = m;
    __syncthreads();
    m = 0.0f;
#pragma unroll
    for (int w = 0; w < Q_THREADS / 32; w++)
        m = fmaxf(m, red[w]);
    const float s = pow2_scale(m), inv = 1.0f / s;
    for (int i = threadIdx.x; i < PL_FP8_BLOCK * PL_FP8_BLOCK; i += Q_THREADS) {
        const int r = r0 + i / PL_FP8_BLOCK, c = c0 + i % PL_FP8_BLOCK;
        if (r < rows && c < cols) {
            const size_t idx = base + (size_t)r * cols + c;
            q[idx] = to_e4m3(bf16_at(x, idx) * inv);
        }
    }
    if (threadIdx.x == 0)
        scale[((size_t)b * nblocks + nb) * ld + kb] = s;
}

extern "C" cudaError_t pl_fp8_quantize_blocks(const uint16_t *x, int batch, int rows, int cols, uint8_t *q,
                                              float *scale, int ld, cudaStream_t stream)
{
    const size_t blocks = (size_t)batch * pl_fp8_kblocks(rows) * pl_fp8_kblocks(cols);
    if (blocks > 0x7fffffffu)
        return cudaErrorInvalidValue;
    quantize_blocks_kernel<<<(unsigned)blocks, Q_THREADS, 0, stream>>>(x, rows, cols, q, scale, ld);
    return cudaGetLastError();
}

/* ---- back to bf16 ---- */

__global__ void dequantize_kernel(const uint8_t *q, int batch, int rows, int cols, pl_fp8_scale_kind kind,
                                  const float *scale, int ld, __nv_bfloat16 *out)
{
    const size_t per = (size_t)rows * cols, n = per * (size_t)batch;
    const int nblocks = pl_fp8_kblocks(rows);
    for (size_t i = blockIdx.x * (size_t)Q_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * Q_THREADS) {
        const size_t b = i / per, within = i % per;
        const int r = (int)(within / cols), c = (int)(within % cols);
        float s;
        if (kind == PL_FP8_SCALE_TENSOR)
            s = scale[0];
        else if (kind == PL_FP8_SCALE_ROWS)
            s = scale[(size_t)(c / PL_FP8_BLOCK) * ld + r];
        else
            s = scale[(b * nblocks + (size_t)(r / PL_FP8_BLOCK)) * ld + c / PL_FP8_BLOCK];
        out[i] = __float2bfloat16_rn(from_e4m3(q[i]) * s);
    }
}

extern "C" cudaError_t pl_fp8_dequantize(const uint8_t *q, int batch, int rows, int cols, pl_fp8_scale_kind kind,
                                         const float *scale, int ld, uint16_t *out, cudaStream_t stream)
{
    const size_t n = (size_t)batch * rows * cols;
    dequantize_kernel<<<q_grid(n, Q_THREADS * 4), Q_THREADS, 0, stream>>>(q, batch, rows, cols, kind, scale, ld,
                                                                          reinterpret_cast<__nv_bfloat16 *>(out));
    return cudaGetLastError();
}

/* ---- inputs whose magnitude varies by block ---- */

__device__ __forceinline__ uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__global__ void scale_blocks_kernel(uint16_t *x, int rows, int cols, int block_rows, int block_cols, int max_exp,
                                    uint64_t seed)
{
    const size_t n = (size_t)rows * cols;
    const uint64_t bcols = (uint64_t)((cols + block_cols - 1) / block_cols);
    for (size_t i = blockIdx.x * (size_t)Q_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * Q_THREADS) {
        const uint64_t r = i / cols, c = i % cols;
        const uint64_t block = (r / block_rows) * bcols + c / block_cols;
        const int e = (int)(mix64(seed ^ mix64(block)) % (uint64_t)(2 * max_exp + 1)) - max_exp;
        const float v = ldexpf(bf16_at(x, i), e);
        x[i] = (uint16_t)(__float_as_uint(v) >> 16); /* a power of two times a bf16: exact */
    }
}

extern "C" cudaError_t pl_bf16_scale_blocks_pow2(uint16_t *x, int rows, int cols, int block_rows, int block_cols,
                                                 int max_exp, uint64_t seed, cudaStream_t stream)
{
    if (block_rows < 1 || block_cols < 1 || max_exp < 0 || max_exp > 60)
        return cudaErrorInvalidValue;
    const size_t n = (size_t)rows * cols;
    scale_blocks_kernel<<<q_grid(n, Q_THREADS * 4), Q_THREADS, 0, stream>>>(x, rows, cols, block_rows, block_cols,
                                                                            max_exp, seed);
    return cudaGetLastError();
}
