#include "comm/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define CHECK_THREADS 256
#define MAX_BLOCKS    2048

/* splitmix64's finaliser over (seed, rank, index): a counter-based generator, so any element can be recomputed. */
__host__ __device__ static inline int value_k(uint64_t seed, int rank, size_t index)
{
    uint64_t x = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1) + 0xD1B54A32D192ED03ull * (uint64_t)index;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    int k = (int)(x % 30ull) - 15; /* [-15, 14] */
    return k >= 0 ? k + 1 : k;     /* [-15, -1] and [1, 15] */
}

__host__ __device__ static inline double value_of(uint64_t seed, int rank, size_t index, pl_dtype dt)
{
    int k = value_k(seed, rank, index);
    return dt == PL_DTYPE_I32 ? (double)k : (double)k / 8.0;
}

__device__ static inline void store(void *buf, size_t i, pl_dtype dt, double v)
{
    switch (dt) {
    case PL_DTYPE_F64: ((double *)buf)[i] = v; break;
    case PL_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
    case PL_DTYPE_BF16: ((__nv_bfloat16 *)buf)[i] = __float2bfloat16((float)v); break;
    case PL_DTYPE_F16: ((__half *)buf)[i] = __float2half((float)v); break;
    case PL_DTYPE_I32: ((int *)buf)[i] = (int)v; break;
    default: break;
    }
}

/* The element as a double; *poison says whether its bytes are all ones. */
__device__ static inline double load(const void *buf, size_t i, pl_dtype dt, int *poison)
{
    switch (dt) {
    case PL_DTYPE_F64: {
        unsigned long long b = ((const unsigned long long *)buf)[i];
        *poison = b == ~0ull;
        return __longlong_as_double((long long)b);
    }
    case PL_DTYPE_F32: {
        unsigned b = ((const unsigned *)buf)[i];
        *poison = b == ~0u;
        return (double)__uint_as_float(b);
    }
    case PL_DTYPE_BF16: {
        unsigned short b = ((const unsigned short *)buf)[i];
        *poison = b == 0xFFFF;
        return (double)__bfloat162float(__ushort_as_bfloat16(b));
    }
    case PL_DTYPE_F16: {
        unsigned short b = ((const unsigned short *)buf)[i];
        *poison = b == 0xFFFF;
        return (double)__half2float(__ushort_as_half(b));
    }
    case PL_DTYPE_I32: *poison = 0; return (double)((const int *)buf)[i];
    default: *poison = 0; return 0;
    }
}

__global__ void fill_kernel(void *buf, size_t n, pl_dtype dt, uint64_t seed, int rank, size_t base)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store(buf, i, dt, value_of(seed, rank, base + i, dt));
}

/* EP combine's expectation of element i, and the error the fp32 sum and the bf16 rounding may make (*bound). */
__device__ static inline double ep_combine_at(const pl_comm_expect &e, size_t i, double *bound)
{
    const size_t t = i / (size_t)e.hidden;
    const double x = value_of(e.seed, e.src_rank, i, PL_DTYPE_BF16);
    double sum = 0, mag = 0;
    for (int j = 0; j < e.topk; j++) {
        const size_t slot = t * (size_t)e.topk + (size_t)j;
        const double term = (double)e.weight[slot] * PL_EP_EXPERT_SCALE(e.expert[slot]) * x;
        sum += term;
        mag += fabs(term);
    }
    *bound = 0x1p-8 * fabs(sum) + 0x1p-16 * mag;
    return sum;
}

/* The expectation of element i; *bound: how far the output may be from it (0: bit for bit). */
__device__ static inline double expected_at(const pl_comm_expect &e, size_t i, pl_dtype dt, double *bound)
{
    *bound = 0;
    switch (e.kind) {
    case PL_EXPECT_EP_ROWS: {
        const size_t r = i / (size_t)e.hidden, c = i % (size_t)e.hidden;
        return value_of(e.seed, e.row_src[r], (size_t)e.row_token[r] * (size_t)e.hidden + c, dt);
    }
    case PL_EXPECT_EP_COMBINE: return ep_combine_at(e, i, bound);
    case PL_EXPECT_REDUCE: {
        double acc = value_of(e.seed, 0, e.base + i, dt);
        for (int r = 1; r < e.nranks; r++) {
            double v = value_of(e.seed, r, e.base + i, dt);
            acc = e.op == 1 ? fmax(acc, v) : e.op == 2 ? fmin(acc, v) : acc + v;
        }
        return acc;
    }
    case PL_EXPECT_BLOCKS: return value_of(e.seed, (int)(i / e.block), e.base + i % e.block, dt);
    default: return value_of(e.seed, e.src_rank, e.base + i, dt);
    }
}

__device__ static inline double warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ static inline unsigned long long warp_sum_u(unsigned long long v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ static inline double warp_max(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

__global__ void check_kernel(const void *out, size_t n, pl_dtype dt, pl_comm_expect e, pl_comm_check_acc *acc)
{
    unsigned long long wrong = 0, nonfinite = 0, unwritten = 0;
    double err2 = 0, ref2 = 0, max_abs = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int poison = 0;
        const double got = load(out, i, dt, &poison);
        double bound;
        const double want = expected_at(e, i, dt, &bound);
        ref2 += want * want;
        if (poison) {
            unwritten++;
            wrong++;
        } else if (!isfinite(got)) {
            nonfinite++;
            wrong++;
        } else if (got != want) {
            const double d = got - want;
            wrong += fabs(d) > bound;
            err2 += d * d;
            max_abs = fmax(max_abs, fabs(d));
        }
    }
    wrong = warp_sum_u(wrong);
    nonfinite = warp_sum_u(nonfinite);
    unwritten = warp_sum_u(unwritten);
    err2 = warp_sum(err2);
    ref2 = warp_sum(ref2);
    max_abs = warp_max(max_abs);
    if ((threadIdx.x & 31) == 0) {
        if (wrong)
            atomicAdd(&acc->wrong, wrong);
        if (nonfinite)
            atomicAdd(&acc->nonfinite, nonfinite);
        if (unwritten)
            atomicAdd(&acc->unwritten, unwritten);
        if (err2 > 0)
            atomicAdd(&acc->err2, err2);
        atomicAdd(&acc->ref2, ref2);
        if (max_abs > 0) /* non-negative doubles order like their bit patterns */
            atomicMax(&acc->max_abs_bits, (unsigned long long)__double_as_longlong(max_abs));
    }
}

static unsigned blocks_for(size_t n)
{
    size_t b = (n + CHECK_THREADS - 1) / CHECK_THREADS;
    return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

extern "C" cudaError_t pl_comm_fill(void *buf, size_t n, pl_dtype dt, uint64_t seed, int rank, size_t base,
                                    cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    fill_kernel<<<blocks_for(n), CHECK_THREADS, 0, stream>>>(buf, n, dt, seed, rank, base);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_comm_check(const void *out, size_t n, pl_dtype dt, const pl_comm_expect *e,
                                     pl_comm_check_acc *acc, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    check_kernel<<<blocks_for(n), CHECK_THREADS, 0, stream>>>(out, n, dt, *e, acc);
    return cudaGetLastError();
}

__global__ void ep_expert_kernel(uint16_t *out, const uint16_t *in, const int *local_expert, int first_expert, size_t n,
                                 int hidden)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const double s = PL_EP_EXPERT_SCALE(first_expert + local_expert[i / (size_t)hidden]);
        const float v = __bfloat162float(__ushort_as_bfloat16(in[i]));
        out[i] = __bfloat16_as_ushort(__float2bfloat16((float)(v * s)));
    }
}

extern "C" cudaError_t pl_comm_ep_expert(uint16_t *out, const uint16_t *in, const int *local_expert, int first_expert,
                                         int rows, int hidden, cudaStream_t stream)
{
    const size_t n = (size_t)rows * (size_t)hidden;
    if (n == 0)
        return cudaSuccess;
    ep_expert_kernel<<<blocks_for(n), CHECK_THREADS, 0, stream>>>(out, in, local_expert, first_expert, n, hidden);
    return cudaGetLastError();
}

extern "C" double pl_comm_value_host(uint64_t seed, int rank, size_t index)
{
    return (double)value_k(seed, rank, index) / 8.0;
}
