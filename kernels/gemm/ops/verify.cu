/* Verification of a GEMM output on the device: the output (bf16 or fp16 bits) against an fp32 reference,
 * reduced to a few sums in float64, so that checking a 16384×16384 product costs milliseconds and no copy. */
#include <string.h>
#include <cuda_fp16.h>

#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"

#define CMP_THREADS 256

/* Device scratch: the running sums, then the counters. */
struct diff_scratch {
    double err_sq, ref_sq;
    unsigned long long max_key; /* (float bits of |err|) << 32 | index: integer max = largest error */
    unsigned long long nonfinite, unwritten, violations;
};

static unsigned cmp_grid(size_t n)
{
    size_t blocks = (n + CMP_THREADS - 1) / CMP_THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > 132 * 8 ? 132 * 8 : blocks);
}

__device__ __forceinline__ double block_sum(double v, double *shared)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    double total = 0;
    if (threadIdx.x == 0)
        for (int w = 0; w < CMP_THREADS / 32; w++)
            total += shared[w];
    return total; /* valid in thread 0 */
}

/* One thread's running comparison: the sums, the largest error (as a key), the counters. */
struct cmp_acc {
    double err_sq, ref_sq;
    unsigned long long max_key, nonfinite, unwritten, violations;
};

/* Element i of out (bits) against r, its elementwise bound `bound`. */
__device__ __forceinline__ void cmp_element(cmp_acc &a, uint16_t bits, int is_f16, float r, double bound, size_t i)
{
    if (bits == 0xFFFFu) { /* the poison pattern */
        a.unwritten++;
        return;
    }
    const float o = is_f16 ? __half2float(__ushort_as_half(bits)) : pl_bf16_bits_to_float(bits);
    if (!isfinite(o)) {
        a.nonfinite++;
        return;
    }
    const double e = fabs((double)o - (double)r);
    a.err_sq += e * e;
    a.ref_sq += (double)r * r;
    if (e > bound)
        a.violations++;
    const unsigned long long key =
        (unsigned long long)__float_as_uint((float)e) << 32 | (unsigned long long)(i & 0xFFFFFFFFu);
    a.max_key = key > a.max_key ? key : a.max_key;
}

/* The block's accumulators into the scratch. */
__device__ __forceinline__ void cmp_flush(cmp_acc &a, diff_scratch *s, double *partial)
{
    const double err_sq = block_sum(a.err_sq, partial), ref_sq = block_sum(a.ref_sq, partial);
    if (threadIdx.x == 0) {
        atomicAdd(&s->err_sq, err_sq);
        atomicAdd(&s->ref_sq, ref_sq);
    }
    if (a.max_key)
        atomicMax(&s->max_key, a.max_key);
    if (a.nonfinite)
        atomicAdd(&s->nonfinite, a.nonfinite);
    if (a.unwritten)
        atomicAdd(&s->unwritten, a.unwritten);
    if (a.violations)
        atomicAdd(&s->violations, a.violations);
}

__global__ void __launch_bounds__(CMP_THREADS)
    compare_kernel(const uint16_t *__restrict__ out, int is_f16, const float *__restrict__ ref, size_t n, double rtol,
                   double atol, diff_scratch *s)
{
    __shared__ double partial[CMP_THREADS / 32];
    cmp_acc a = {};
    for (size_t i = blockIdx.x * (size_t)CMP_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * CMP_THREADS)
        cmp_element(a, out[i], is_f16, ref[i], rtol * fabs((double)ref[i]) + atol, i);
    cmp_flush(a, s, partial);
}

/* A warp per row of row_len elements: the row's rms of the reference first, then each element against
 * rtol·|ref| + atol_row_rms·rms(row). */
__global__ void __launch_bounds__(CMP_THREADS)
    compare_rows_kernel(const uint16_t *__restrict__ out, int is_f16, const float *__restrict__ ref, size_t rows,
                        int row_len, double rtol, double atol_row_rms, diff_scratch *s)
{
    __shared__ double partial[CMP_THREADS / 32];
    cmp_acc a = {};
    const int lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * (CMP_THREADS / 32);
    for (size_t row = blockIdx.x * (size_t)(CMP_THREADS / 32) + threadIdx.x / 32; row < rows; row += warps) {
        const size_t base = row * (size_t)row_len;
        double sq = 0;
        for (int c = lane; c < row_len; c += 32)
            sq += (double)ref[base + c] * ref[base + c];
        for (int off = 16; off > 0; off >>= 1)
            sq += __shfl_xor_sync(0xffffffffu, sq, off);
        const double atol = atol_row_rms * sqrt(sq / row_len);
        for (int c = lane; c < row_len; c += 32)
            cmp_element(a, out[base + c], is_f16, ref[base + c], rtol * fabs((double)ref[base + c]) + atol, base + c);
    }
    cmp_flush(a, s, partial);
}

__global__ void __launch_bounds__(CMP_THREADS)
    sum_squares_kernel(const float *__restrict__ x, size_t n, diff_scratch *s)
{
    __shared__ double partial[CMP_THREADS / 32];
    double sq = 0;
    for (size_t i = blockIdx.x * (size_t)CMP_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * CMP_THREADS)
        sq += (double)x[i] * x[i];
    sq = block_sum(sq, partial);
    if (threadIdx.x == 0)
        atomicAdd(&s->ref_sq, sq);
}

extern "C" size_t pl_gemm_diff_scratch_bytes(void)
{
    return sizeof(diff_scratch);
}

/* After the reduction kernel: its launch status, then the scratch copied back (synchronises). */
static cudaError_t read_back(const diff_scratch *s, diff_scratch *h, cudaStream_t stream)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(h, s, sizeof *h, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    return e;
}

/* The scratch's counters into diff. */
static void diff_of(const diff_scratch *h, pl_gemm_diff *diff)
{
    diff->err_sq = h->err_sq;
    diff->ref_sq = h->ref_sq;
    float max_abs;
    const uint32_t bits = (uint32_t)(h->max_key >> 32);
    memcpy(&max_abs, &bits, sizeof max_abs);
    diff->max_abs = max_abs;
    diff->max_index = h->max_key & 0xFFFFFFFFu;
    diff->nonfinite = h->nonfinite;
    diff->unwritten = h->unwritten;
    diff->violations = h->violations;
}

extern "C" cudaError_t pl_gemm_compare(const uint16_t *out, int out_is_f16, const float *ref, size_t n, double rtol,
                                       double atol, void *scratch, pl_gemm_diff *diff, cudaStream_t stream)
{
    diff_scratch *s = static_cast<diff_scratch *>(scratch), h;
    cudaError_t e = cudaMemsetAsync(s, 0, sizeof *s, stream);
    if (e != cudaSuccess)
        return e;
    compare_kernel<<<cmp_grid(n), CMP_THREADS, 0, stream>>>(out, out_is_f16 != 0, ref, n, rtol, atol, s);
    if ((e = read_back(s, &h, stream)) != cudaSuccess)
        return e;
    diff_of(&h, diff);
    return cudaSuccess;
}

extern "C" cudaError_t pl_gemm_compare_rows(const uint16_t *out, int out_is_f16, const float *ref, size_t rows,
                                            int row_len, double rtol, double atol_row_rms, void *scratch,
                                            pl_gemm_diff *diff, cudaStream_t stream)
{
    if (row_len < 1)
        return cudaErrorInvalidValue;
    diff_scratch *s = static_cast<diff_scratch *>(scratch), h;
    cudaError_t e = cudaMemsetAsync(s, 0, sizeof *s, stream);
    if (e != cudaSuccess)
        return e;
    compare_rows_kernel<<<cmp_grid(rows * 32), CMP_THREADS, 0, stream>>>(out, out_is_f16 != 0, ref, rows, row_len, rtol,
                                                                         atol_row_rms, s);
    if ((e = read_back(s, &h, stream)) != cudaSuccess)
        return e;
    diff_of(&h, diff);
    return cudaSuccess;
}

extern "C" cudaError_t pl_gemm_rms_f32(const float *ref, size_t n, void *scratch, double *rms, cudaStream_t stream)
{
    diff_scratch *s = static_cast<diff_scratch *>(scratch), h;
    cudaError_t e = cudaMemsetAsync(s, 0, sizeof *s, stream);
    if (e != cudaSuccess)
        return e;
    sum_squares_kernel<<<cmp_grid(n), CMP_THREADS, 0, stream>>>(ref, n, s);
    if ((e = read_back(s, &h, stream)) != cudaSuccess)
        return e;
    *rms = n ? sqrt(h.ref_sq / (double)n) : 0.0;
    return cudaSuccess;
}
