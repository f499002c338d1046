/* What both versions of the element-wise chain share (elementwise_chain.h): the three operations on eight bf16 at
 * a time, and the walk over the matrix as a flat array of 16-byte vectors. A block takes CHAIN_PER_THREAD *
 * CHAIN_THREADS consecutive vectors, thread t the vectors t, t + CHAIN_THREADS, ...: every load instruction of a
 * warp covers 512 contiguous bytes, CHAIN_PER_THREAD 16-byte loads are in flight per thread before its first
 * store, and the grid is one chunk per block (no grid-stride loop: the fastest shape of a copy on Hopper,
 * docs/perf/peak.md). The last n % 8 elements go element by element. Which operations a kernel applies is a
 * compile-time constant, so each kernel holds only its own arithmetic. */
#ifndef PERFLAB_FUSION_CHAIN_CUH
#define PERFLAB_FUSION_CHAIN_CUH

#include "common/rows.cuh"

#define CHAIN_THREADS    256
#define CHAIN_PER_THREAD 4
#define CHAIN_CHUNK      (CHAIN_THREADS * CHAIN_PER_THREAD)

enum { CHAIN_BIAS = 1, CHAIN_GELU = 2, CHAIN_SCALE = 4 };

/* GELU, tanh form (PyTorch's approximate="tanh"), with the hardware tanh (sm_75+, relative error about 2^-11,
 * under a bf16 rounding). */
__device__ __forceinline__ float chain_gelu(float v)
{
    const float u = 0.7978845608028654f * fmaf(0.044715f * v * v, v, v);
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    return 0.5f * v * (1.0f + t);
}

__device__ __forceinline__ float chain_op(float v, float b, float scale, int ops)
{
    if (ops & CHAIN_BIAS)
        v += b;
    if (ops & CHAIN_GELU)
        v = chain_gelu(v);
    if (ops & CHAIN_SCALE)
        v *= scale;
    return v;
}

/* The bias of flat elements i0 .. i0+7 of a matrix with `cols` columns (they may straddle rows). */
__device__ __forceinline__ uint4 chain_bias8(const uint16_t *__restrict__ bias, size_t i0, int cols)
{
    const int c0 = (int)(i0 < 0xffffffffu ? (unsigned)i0 % (unsigned)cols : (unsigned)(i0 % (size_t)cols));
    if (c0 + 8 <= cols)
        return rows_load8(bias, c0, cols, 0);
    uint32_t w[4] = {0, 0, 0, 0};
    int c = c0;
#pragma unroll
    for (int e = 0; e < 8; e++) {
        w[e / 2] |= (uint32_t)bias[c] << (16 * (e % 2));
        c = c + 1 < cols ? c + 1 : 0;
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ uint4 chain_apply8(uint4 v, const uint16_t *__restrict__ bias, size_t i0, int cols,
                                              float scale, int ops)
{
    float f[8], b[8];
    rows_unpack8(v, f);
    if (ops & CHAIN_BIAS)
        rows_unpack8(chain_bias8(bias, i0, cols), b);
#pragma unroll
    for (int e = 0; e < 8; e++)
        f[e] = chain_op(f[e], ops & CHAIN_BIAS ? b[e] : 0.0f, scale, ops);
    return rows_pack8(f);
}

/* out = ops(in) over n elements; in may equal out (each element is read and written by one thread). */
__device__ __forceinline__ void chain_walk(const uint16_t *in, uint16_t *out, const uint16_t *__restrict__ bias,
                                           size_t n, int cols, float scale, int ops)
{
    const size_t nvec = n / 8;
    const uint4 *in4 = reinterpret_cast<const uint4 *>(in);
    uint4 *out4 = reinterpret_cast<uint4 *>(out);
    const size_t first = (size_t)blockIdx.x * CHAIN_CHUNK + threadIdx.x;
    uint4 v[CHAIN_PER_THREAD];
#pragma unroll
    for (int k = 0; k < CHAIN_PER_THREAD; k++) {
        const size_t g = first + (size_t)k * CHAIN_THREADS;
        if (g < nvec)
            v[k] = in4[g];
    }
#pragma unroll
    for (int k = 0; k < CHAIN_PER_THREAD; k++) {
        const size_t g = first + (size_t)k * CHAIN_THREADS;
        if (g < nvec)
            out4[g] = chain_apply8(v[k], bias, 8 * g, cols, scale, ops);
    }
    /* the last n % 8 elements, one per thread of the first block */
    const size_t i = nvec * 8 + threadIdx.x;
    if (blockIdx.x == 0 && i < n) {
        const float b = ops & CHAIN_BIAS ? rows_bf16(bias[i % (size_t)cols]) : 0.0f;
        out[i] = rows_to_bf16(chain_op(rows_bf16(in[i]), b, scale, ops));
    }
}

/* One block per chunk; at least one block for the element-wise tail. */
static inline unsigned chain_grid(size_t n)
{
    const size_t blocks = (n / 8 + CHAIN_CHUNK - 1) / CHAIN_CHUNK;
    return blocks == 0 ? 1u : (unsigned)blocks;
}

static inline bool chain_args_ok(const void *a, const void *b, const void *c, const uint16_t *bias, int rows, int cols)
{
    return rows >= 1 && cols >= 1 && a && b && c && bias && (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) & 15u) == 0;
}

#endif
