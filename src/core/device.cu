/* Device helpers of the harness: seeded random fill, poison, L2 flush, a timed spin and an SM-clock probe. */
#include <stdint.h>
#include <string.h>
#include <cuda_runtime.h>

#include "perflab/device.h"

/* A counter-based generator: the value at `index` depends only on (seed, stream_id, index), so the host can
 * recompute any input element without copying it back. */
__host__ __device__ static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__host__ __device__ static inline float unit_float(uint64_t seed, uint64_t stream_id, uint64_t index)
{
    uint64_t h = mix64(seed ^ mix64(stream_id + 0x9e3779b97f4a7c15ull) ^ (index * 0xd1b54a32d192ed03ull));
    return (float)(h >> 40) * (1.0f / 16777216.0f); /* 24 bits: exact in float, in [0, 1) */
}

/* lo + (hi - lo) * u with every step rounded to float, so host and device agree bit for bit
 * (no fused multiply-add on either side). */
__device__ static inline float scale_device(float u, float lo, float hi)
{
    return __fadd_rn(__fmul_rn(__fsub_rn(hi, lo), u), lo);
}

extern "C" float pl_uniform_host(uint64_t seed, uint64_t stream_id, size_t index, float lo, float hi)
{
    volatile float span = hi - lo; /* volatile: keep the host compiler from contracting into an FMA */
    volatile float prod = span * unit_float(seed, stream_id, index);
    return prod + lo;
}

/* Round to nearest even, as the host mirror in pl_bf16_round_host does. */
__host__ __device__ static inline uint16_t float_to_bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0; /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

extern "C" uint16_t pl_bf16_round_host(float f)
{
    return float_to_bf16_bits(f);
}

__global__ void fill_uniform_f32_kernel(float *out, size_t n, float lo, float hi, uint64_t seed, uint64_t stream_id)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = scale_device(unit_float(seed, stream_id, i), lo, hi);
}

__global__ void fill_uniform_bf16_kernel(uint16_t *out, size_t n, float lo, float hi, uint64_t seed, uint64_t stream_id)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = float_to_bf16_bits(scale_device(unit_float(seed, stream_id, i), lo, hi));
}

static unsigned grid_for(pl_ctx *ctx, size_t n, unsigned block)
{
    size_t want = (n + block - 1) / block;
    size_t cap = (size_t)(ctx->device ? ctx->device->sm_count : 132) * 32;
    return (unsigned)(want < cap ? (want ? want : 1) : cap);
}

extern "C" int pl_fill_uniform_f32(pl_ctx *ctx, float *dev, size_t n, float lo, float hi, uint64_t stream_id)
{
    fill_uniform_f32_kernel<<<grid_for(ctx, n, 256), 256, 0, ctx->stream>>>(dev, n, lo, hi, ctx->seed, stream_id);
    PL_CHECK_LAUNCH(ctx);
    return 0;
}

extern "C" int pl_fill_uniform_bf16(pl_ctx *ctx, uint16_t *dev, size_t n, float lo, float hi, uint64_t stream_id)
{
    fill_uniform_bf16_kernel<<<grid_for(ctx, n, 256), 256, 0, ctx->stream>>>(dev, n, lo, hi, ctx->seed, stream_id);
    PL_CHECK_LAUNCH(ctx);
    return 0;
}

extern "C" int pl_poison(pl_ctx *ctx, void *dev, size_t bytes)
{
    PL_CUDA(ctx, cudaMemsetAsync(dev, 0xff, bytes, ctx->stream));
    return 0;
}

/* Writes evict: every line of the buffer is allocated in L2, pushing out what was there (the sample's own outputs
 * included, written back now rather than during the sample). */
__global__ void flush_kernel(int4 *buf, size_t n, int salt)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = make_int4((int)i, salt, (int)i ^ salt, salt);
}

/* ... but they leave L2 full of dirty lines, whose write-back the next kernel would pay for: a memory-bound sample
 * would move up to an L2 of extra bytes. Reading the buffer back from its start (the lines the writes pushed out
 * first) evicts the dirty ones and leaves L2 holding clean lines. The sum is stored when it happens to equal one
 * value, so that the reads cannot be optimized away. */
__global__ void flush_read_kernel(const int4 *buf, size_t n, int *sink)
{
    int acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const int4 v = buf[i];
        acc ^= v.x + v.y + v.z + v.w;
    }
    if (acc == 0x7fffffff) /* the flush buffer itself: a write there is harmless */
        *sink = acc;
}

extern "C" int pl_flush_l2(pl_ctx *ctx, void *buf, size_t bytes)
{
    static int salt;
    size_t n = bytes / sizeof(int4);
    flush_kernel<<<grid_for(ctx, n, 512), 512, 0, ctx->stream>>>((int4 *)buf, n, ++salt);
    PL_CHECK_LAUNCH(ctx);
    flush_read_kernel<<<grid_for(ctx, n, 512), 512, 0, ctx->stream>>>((const int4 *)buf, n, (int *)buf);
    PL_CHECK_LAUNCH(ctx);
    return 0;
}

__device__ static inline uint64_t global_timer_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spin_kernel(uint64_t ns)
{
    uint64_t start = global_timer_ns();
    while (global_timer_ns() - start < ns) {
    }
}

extern "C" int pl_spin_ns(pl_ctx *ctx, uint64_t ns)
{
    spin_kernel<<<1, 1, 0, ctx->stream>>>(ns);
    PL_CHECK_LAUNCH(ctx);
    return 0;
}

__global__ void clock_probe_kernel(uint64_t ns, unsigned long long *out)
{
    uint64_t t0 = global_timer_ns();
    long long c0 = clock64();
    uint64_t t1;
    do {
        t1 = global_timer_ns();
    } while (t1 - t0 < ns);
    long long c1 = clock64();
    out[0] = (unsigned long long)(c1 - c0);
    out[1] = t1 - t0;
}

extern "C" int pl_measure_sm_clock_mhz(pl_ctx *ctx, uint64_t ns, double *mhz)
{
    static unsigned long long *dev_out;
    unsigned long long host[2];
    if (!dev_out)
        PL_CUDA(ctx, cudaMalloc(&dev_out, sizeof host));
    clock_probe_kernel<<<1, 1, 0, ctx->stream>>>(ns, dev_out);
    PL_CHECK_LAUNCH(ctx);
    PL_CUDA(ctx, cudaMemcpyAsync(host, dev_out, sizeof host, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    *mhz = host[1] ? (double)host[0] / (double)host[1] * 1e3 : 0.0;
    return 0;
}
