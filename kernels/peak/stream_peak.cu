/* Device-memory ceilings: read-only, write-only and copy kernels with 16-byte accesses, `unroll` of them in
 * flight per thread before the first is used (Little's law: a Hopper needs several MB in flight chip-wide),
 * and the device-side checks that prove every element was read or written. */
#include <stdint.h>
#include "common/grid.h"
#include "peak/peak_kernels.h"

template <bool STREAMING> __device__ __forceinline__ float4 load16(const float4 *p)
{
    return STREAMING ? __ldcs(p) : *p;
}

template <bool STREAMING> __device__ __forceinline__ void store16(float4 *p, float4 v)
{
    if (STREAMING)
        __stcs(p, v);
    else
        *p = v;
}

__device__ __forceinline__ float sum4(float4 v)
{
    return (v.x + v.y) + (v.z + v.w);
}

/* The block's sum of one value per thread, valid in thread 0. */
__device__ float block_sum(float v)
{
    __shared__ float warp_sums[PL_PEAK_BLOCK / 32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0)
        warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0;
    if (threadIdx.x < PL_PEAK_BLOCK / 32)
        v = warp_sums[threadIdx.x];
    if (threadIdx.x < 32)
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Each block takes chunks of UNROLL * blockDim float4 (thread j: j, j + blockDim, ...), so that each load
 * instruction of a warp covers 512 contiguous bytes, and strides over the array by the whole grid. */
template <int UNROLL, bool STREAMING>
__global__ void __launch_bounds__(PL_PEAK_BLOCK)
    stream_read_kernel(const float *__restrict__ src, size_t n, float *__restrict__ partial)
{
    const float4 *src4 = reinterpret_cast<const float4 *>(src);
    const size_t n4 = n / 4, chunk = (size_t)UNROLL * blockDim.x, step = chunk * gridDim.x;
    size_t i = blockIdx.x * chunk + threadIdx.x;
    float acc = 0.0f;
    for (; i + (UNROLL - 1) * blockDim.x < n4; i += step) {
        float4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            v[k] = load16<STREAMING>(src4 + i + k * blockDim.x);
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            acc += sum4(v[k]);
    }
    /* at most one partial chunk per thread: the next full step starts past n4 */
#pragma unroll
    for (int k = 0; k < UNROLL; k++)
        if (i + k * blockDim.x < n4)
            acc += sum4(src4[i + k * blockDim.x]);
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n - n4 * 4)
        acc += src[n4 * 4 + t];
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = acc;
}

template <int UNROLL, bool STREAMING>
__global__ void __launch_bounds__(PL_PEAK_BLOCK) stream_write_kernel(float *__restrict__ dst, size_t n, float value)
{
    float4 *dst4 = reinterpret_cast<float4 *>(dst);
    const size_t n4 = n / 4, chunk = (size_t)UNROLL * blockDim.x, step = chunk * gridDim.x;
    const float4 v = make_float4(value, value, value, value);
    size_t i = blockIdx.x * chunk + threadIdx.x;
    for (; i + (UNROLL - 1) * blockDim.x < n4; i += step) {
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            store16<STREAMING>(dst4 + i + k * blockDim.x, v);
    }
#pragma unroll
    for (int k = 0; k < UNROLL; k++)
        if (i + k * blockDim.x < n4)
            dst4[i + k * blockDim.x] = v;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n - n4 * 4)
        dst[n4 * 4 + t] = value;
}

template <int UNROLL, bool STREAMING>
__global__ void __launch_bounds__(PL_PEAK_BLOCK)
    stream_copy_kernel(const float *__restrict__ src, float *__restrict__ dst, size_t n)
{
    const float4 *src4 = reinterpret_cast<const float4 *>(src);
    float4 *dst4 = reinterpret_cast<float4 *>(dst);
    const size_t n4 = n / 4, chunk = (size_t)UNROLL * blockDim.x, step = chunk * gridDim.x;
    size_t i = blockIdx.x * chunk + threadIdx.x;
    for (; i + (UNROLL - 1) * blockDim.x < n4; i += step) {
        float4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            v[k] = load16<STREAMING>(src4 + i + k * blockDim.x);
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            store16<STREAMING>(dst4 + i + k * blockDim.x, v[k]);
    }
#pragma unroll
    for (int k = 0; k < UNROLL; k++)
        if (i + k * blockDim.x < n4)
            dst4[i + k * blockDim.x] = src4[i + k * blockDim.x];
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n - n4 * 4)
        dst[n4 * 4 + t] = src[n4 * 4 + t];
}

/* One function pointer per (op, unroll, streaming): the launchers pick from these tables. */
typedef void (*read_fn)(const float *, size_t, float *);
typedef void (*write_fn)(float *, size_t, float);
typedef void (*copy_fn)(const float *, float *, size_t);

static int unroll_index(int unroll)
{
    return unroll == 2 ? 0 : unroll == 4 ? 1 : unroll == 8 ? 2 : -1;
}

static const read_fn read_kernels[3][2] = {
    {stream_read_kernel<2, false>, stream_read_kernel<2, true>},
    {stream_read_kernel<4, false>, stream_read_kernel<4, true>},
    {stream_read_kernel<8, false>, stream_read_kernel<8, true>},
};
static const write_fn write_kernels[3][2] = {
    {stream_write_kernel<2, false>, stream_write_kernel<2, true>},
    {stream_write_kernel<4, false>, stream_write_kernel<4, true>},
    {stream_write_kernel<8, false>, stream_write_kernel<8, true>},
};
static const copy_fn copy_kernels[3][2] = {
    {stream_copy_kernel<2, false>, stream_copy_kernel<2, true>},
    {stream_copy_kernel<4, false>, stream_copy_kernel<4, true>},
    {stream_copy_kernel<8, false>, stream_copy_kernel<8, true>},
};

static const void *kernel_of(int op, const pl_stream_config *c)
{
    int u = unroll_index(c->unroll), s = c->streaming ? 1 : 0;
    if (u < 0)
        return NULL;
    switch (op) {
    case PL_STREAM_READ: return (const void *)read_kernels[u][s];
    case PL_STREAM_WRITE: return (const void *)write_kernels[u][s];
    case PL_STREAM_COPY: return (const void *)copy_kernels[u][s];
    default: return NULL;
    }
}

extern "C" cudaError_t pl_stream_resident_blocks(int op, const pl_stream_config *c, unsigned *blocks)
{
    const void *k = kernel_of(op, c);
    if (!k)
        return cudaErrorInvalidValue;
    int device = 0, sms = 0, per_sm = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, PL_PEAK_BLOCK, 0);
    if (err == cudaSuccess)
        *blocks = (unsigned)sms * (unsigned)per_sm;
    return err;
}

extern "C" unsigned pl_stream_grid(size_t n, const pl_stream_config *c, unsigned resident_blocks)
{
    size_t chunk = (size_t)c->unroll * PL_PEAK_BLOCK;
    size_t whole = (n / 4 + chunk - 1) / chunk;
    if (whole == 0)
        whole = 1; /* the scalar tail still needs a block */
    if (whole > PL_MAX_GRID_X)
        whole = PL_MAX_GRID_X;
    if (c->waves > 0 && (size_t)c->waves * resident_blocks < whole)
        return (unsigned)c->waves * resident_blocks;
    return (unsigned)whole;
}

static int aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

extern "C" cudaError_t pl_stream_read(const float *src, size_t n, const pl_stream_config *c, unsigned grid,
                                      float *partial, cudaStream_t stream)
{
    const void *k = kernel_of(PL_STREAM_READ, c);
    if (!k || !aligned16(src) || grid == 0)
        return cudaErrorInvalidValue;
    ((read_fn)k)<<<grid, PL_PEAK_BLOCK, 0, stream>>>(src, n, partial);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_stream_write(float *dst, size_t n, float value, const pl_stream_config *c, unsigned grid,
                                       cudaStream_t stream)
{
    const void *k = kernel_of(PL_STREAM_WRITE, c);
    if (!k || !aligned16(dst) || grid == 0)
        return cudaErrorInvalidValue;
    ((write_fn)k)<<<grid, PL_PEAK_BLOCK, 0, stream>>>(dst, n, value);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_stream_copy(const float *src, float *dst, size_t n, const pl_stream_config *c, unsigned grid,
                                      cudaStream_t stream)
{
    const void *k = kernel_of(PL_STREAM_COPY, c);
    if (!k || !aligned16(src) || !aligned16(dst) || grid == 0)
        return cudaErrorInvalidValue;
    ((copy_fn)k)<<<grid, PL_PEAK_BLOCK, 0, stream>>>(src, dst, n);
    return cudaGetLastError();
}

/* ---- checks: deliberately plain code, so that they share nothing with what they check ---- */

__global__ void sum_f64_kernel(const float *x, size_t n, double *sum)
{
    double acc = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc += (double)x[i];
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(sum, acc);
}

__global__ void count_mismatches_kernel(const float *a, const float *b, float value, size_t n,
                                        unsigned long long *count)
{
    unsigned long long bad = 0;
    const unsigned expected_bits = __float_as_uint(value);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned want = b ? __float_as_uint(b[i]) : expected_bits;
        bad += __float_as_uint(a[i]) != want;
    }
    for (int o = 16; o > 0; o >>= 1)
        bad += __shfl_xor_sync(0xffffffffu, bad, o);
    if ((threadIdx.x & 31) == 0 && bad)
        atomicAdd(count, bad);
}

extern "C" cudaError_t pl_check_sum_f64(const float *x, size_t n, double *sum, cudaStream_t stream)
{
    cudaError_t e = cudaMemsetAsync(sum, 0, sizeof *sum, stream);
    if (e != cudaSuccess)
        return e;
    sum_f64_kernel<<<1024, 256, 0, stream>>>(x, n, sum);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_check_count_mismatches(const float *a, const float *b, float value, size_t n,
                                                 unsigned long long *count, cudaStream_t stream)
{
    count_mismatches_kernel<<<1024, 256, 0, stream>>>(a, b, value, n, count);
    return cudaGetLastError();
}

/* ---- L2: every pass walks the whole working set; L1 is bypassed so that each SM's share, which would fit
 * in its L1, is served by L2 every time ---- */
__global__ void __launch_bounds__(PL_PEAK_BLOCK)
    l2_read_kernel(const float *__restrict__ buf, size_t n, int passes, float *__restrict__ partial)
{
    const float4 *buf4 = reinterpret_cast<const float4 *>(buf);
    const size_t n4 = n / 4, step = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; p++) {
        size_t i = first;
        for (; i + 3 * step < n4; i += 4 * step) {
            float4 v0 = __ldcg(buf4 + i), v1 = __ldcg(buf4 + i + step), v2 = __ldcg(buf4 + i + 2 * step),
                   v3 = __ldcg(buf4 + i + 3 * step);
            acc += (sum4(v0) + sum4(v1)) + (sum4(v2) + sum4(v3));
        }
        for (; i < n4; i += step)
            acc += sum4(__ldcg(buf4 + i));
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = acc;
}

extern "C" cudaError_t pl_l2_read(const float *buf, size_t n, int passes, unsigned grid, float *partial,
                                  cudaStream_t stream)
{
    if (!aligned16(buf) || n % 4 != 0 || grid == 0)
        return cudaErrorInvalidValue;
    l2_read_kernel<<<grid, PL_PEAK_BLOCK, 0, stream>>>(buf, n, passes, partial);
    return cudaGetLastError();
}
