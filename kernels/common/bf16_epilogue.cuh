/* The output stage every GEMM kernel shares: bias, GELU and residual applied in fp32 to the accumulators, one
 * rounding to bf16, and predicated stores, so that any M and N are correct and every kernel of the ladder
 * computes exactly the same function. */
#ifndef PERFLAB_COMMON_BF16_EPILOGUE_CUH
#define PERFLAB_COMMON_BF16_EPILOGUE_CUH

#include <stdint.h>
#include <cuda_bf16.h>

/* What the kernels need to write D: passed by value as a kernel parameter. */
struct pl_gemm_out {
    uint16_t *d;
    const uint16_t *bias, *residual;
    int m, n;
    int gelu;
    int fused; /* any of bias, residual, gelu: the plain store skips the epilogue's loads */
};

__device__ __forceinline__ float pl_bf16_bits_to_float(uint16_t bits)
{
    return __uint_as_float((uint32_t)bits << 16);
}

__device__ __forceinline__ uint16_t pl_float_to_bf16_bits(float x)
{
    __nv_bfloat16 h = __float2bfloat16_rn(x);
    return *reinterpret_cast<uint16_t *>(&h);
}

/* GELU in its tanh form (GPT-2's, PyTorch's approximate="tanh"), with the hardware tanh (sm_75+, about 2^-11
 * relative error, far under a bf16 rounding): a handful of instructions, so that fusing it into a tensor-bound
 * kernel costs little. The references compute the same formula in float64. */
__device__ __forceinline__ float pl_gelu(float x)
{
    const float u = 0.7978845608028654f * fmaf(0.044715f * x * x, x, x);
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    return 0.5f * x * (1.0f + t);
}

/* The fused epilogue of one element (bias, GELU, residual), in fp32. */
__device__ __forceinline__ float pl_gemm_epilogue_value(const uint16_t *bias, const uint16_t *residual, int gelu,
                                                        size_t idx, int col, float v)
{
    if (bias)
        v += pl_bf16_bits_to_float(bias[col]);
    if (gelu)
        v = pl_gelu(v);
    if (residual)
        v += pl_bf16_bits_to_float(residual[idx]);
    return v;
}

__device__ __forceinline__ uint32_t pl_pack_bf16x2(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

/* Out of line on purpose: the store sites are unrolled over every accumulator pair (64 per thread in the
 * 128×256 kernel), and inlining the epilogue (GELU, loads) at each grew that kernel to 220 KB of code, whose
 * epilogue then ran from instruction-cache misses (measured: ~40 µs lost per tile). */
static __device__ __noinline__ uint32_t pl_gemm_fused_pair(const uint16_t *bias, const uint16_t *residual, int gelu,
                                                           size_t idx, int col, float v0, float v1)
{
    return pl_pack_bf16x2(pl_gemm_epilogue_value(bias, residual, gelu, idx, col, v0),
                          pl_gemm_epilogue_value(bias, residual, gelu, idx + 1, col + 1, v1));
}

/* The fused epilogue of two neighbours whose bias and residual pairs are already in registers (loaded in a batch
 * beforehand, so that their latencies overlap): arithmetic only, a dozen instructions, inlined (a call per pair
 * in a kernel holding 128 accumulators in registers cost more than the work). */
__device__ __forceinline__ uint32_t pl_gemm_epilogue_pair(float v0, float v1, uint32_t bias2, uint32_t res2,
                                                          int has_bias, int gelu, int has_residual)
{
    if (has_bias) {
        v0 += __uint_as_float(bias2 << 16);
        v1 += __uint_as_float(bias2 & 0xFFFF0000u);
    }
    if (gelu) {
        v0 = pl_gelu(v0);
        v1 = pl_gelu(v1);
    }
    if (has_residual) {
        v0 += __uint_as_float(res2 << 16);
        v1 += __uint_as_float(res2 & 0xFFFF0000u);
    }
    return pl_pack_bf16x2(v0, v1);
}

/* Elements at the edges of D (or with n odd, where a pair is not 4-byte aligned), one at a time. */
static __device__ __noinline__ void pl_gemm_store_edge(pl_gemm_out o, int row, int col, float v0, float v1)
{
    for (int e = 0; e < 2; e++) {
        if (row >= o.m || col + e >= o.n)
            return;
        const size_t idx = (size_t)row * o.n + col + e;
        float v = e ? v1 : v0;
        if (o.fused)
            v = pl_gemm_epilogue_value(o.bias, o.residual, o.gelu, idx, col + e, v);
        o.d[idx] = pl_float_to_bf16_bits(v);
    }
}

__device__ __forceinline__ void pl_gemm_store1(const pl_gemm_out &o, int row, int col, float v)
{
    if (row >= o.m || col >= o.n)
        return;
    size_t idx = (size_t)row * o.n + col;
    if (o.fused)
        v = pl_gemm_epilogue_value(o.bias, o.residual, o.gelu, idx, col, v);
    o.d[idx] = pl_float_to_bf16_bits(v);
}

/* Two neighbouring elements (row, col) and (row, col + 1), col even: one 4-byte store when both are inside and
 * the row length keeps it aligned (n even), else element by element. */
__device__ __forceinline__ void pl_gemm_store2(const pl_gemm_out &o, int row, int col, float v0, float v1)
{
    if (row < o.m && col + 1 < o.n && (o.n & 1) == 0) {
        const size_t idx = (size_t)row * o.n + col;
        const uint32_t packed =
            o.fused ? pl_gemm_fused_pair(o.bias, o.residual, o.gelu, idx, col, v0, v1) : pl_pack_bf16x2(v0, v1);
        *reinterpret_cast<uint32_t *>(o.d + idx) = packed;
    } else if (row < o.m && col < o.n) {
        pl_gemm_store_edge(o, row, col, v0, v1);
    }
}

/* Four neighbouring elements (row, col..col + 3), col a multiple of 4: one 8-byte store when all are inside,
 * nothing is fused and the row length keeps it aligned (n % 4 == 0), else as two pairs. */
__device__ __forceinline__ void pl_gemm_store4(const pl_gemm_out &o, int row, int col, float4 v)
{
    if (!o.fused && row < o.m && col + 3 < o.n && (o.n & 3) == 0) {
        const uint2 packed = make_uint2(pl_pack_bf16x2(v.x, v.y), pl_pack_bf16x2(v.z, v.w));
        *reinterpret_cast<uint2 *>(o.d + (size_t)row * o.n + col) = packed;
    } else {
        pl_gemm_store2(o, row, col, v.x, v.y);
        pl_gemm_store2(o, row, col + 2, v.z, v.w);
    }
}

/* True when a tile of D is wholly inside, n is even and nothing is fused: the stores need no checks at all. */
__device__ __forceinline__ bool pl_gemm_plain_interior(const pl_gemm_out &o, int m0, int n0, int rows, int cols)
{
    return !o.fused && m0 + rows <= o.m && n0 + cols <= o.n && (o.n & 1) == 0;
}

/* Store a warp's slice of a wgmma m64nN accumulator (N/2 registers per thread): register 4j+{0,1} holds
 * (row, 8j + 2·(lane%4) + {0,1}) and 4j+{2,3} is 8 rows below, with row = the warp's first row + lane/4. */
template <int N>
__device__ __forceinline__ void pl_gemm_store_m64(const pl_gemm_out &o, const float (&acc)[N / 2], int row, int n0,
                                                  bool interior)
{
    const int lane = threadIdx.x & 31;
    const int col0 = n0 + (lane & 3) * 2;
    if (interior) {
        uint16_t *p0 = o.d + (size_t)row * o.n + col0, *p1 = p0 + 8 * (size_t)o.n;
#pragma unroll
        for (int j = 0; j < N / 8; j++) {
            *reinterpret_cast<uint32_t *>(p0 + 8 * j) = pl_pack_bf16x2(acc[4 * j], acc[4 * j + 1]);
            *reinterpret_cast<uint32_t *>(p1 + 8 * j) = pl_pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
        pl_gemm_store2(o, row, col0 + 8 * j, acc[4 * j], acc[4 * j + 1]);
        pl_gemm_store2(o, row + 8, col0 + 8 * j, acc[4 * j + 2], acc[4 * j + 3]);
    }
}

#endif
