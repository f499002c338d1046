/* launch:graph_conditional's kernels (kernels/launch/jacobi.h): a Jacobi sweep that also reduces the largest move
 * (a warp shuffle reduction, one atomicMax a warp), and a one-thread decision that either stores its verdict or
 * sets a graph's conditional handle. The max is exact and order-free, so the iteration count is deterministic. */
#include "launch/jacobi.h"

#define SWEEP_BLOCK 256u

__global__ void __launch_bounds__(SWEEP_BLOCK)
    jacobi_sweep_kernel(const float *__restrict__ b, float *x0, float *x1, size_t n, float inv_diag, float off,
                        pl_jacobi_ctrl *ctrl)
{
    const bool odd = ctrl->iterations & 1u;
    const float *in = odd ? x1 : x0;
    float *out = odd ? x0 : x1;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float move = 0.0f;
    if (i < n) {
        const float l = i > 0 ? in[i - 1] : 0.0f, r = i + 1 < n ? in[i + 1] : 0.0f;
        /* b - off·(l + r), then the product, each rounded once: no fused multiply-add the host would not make */
        const float v = __fmul_rn(fmaf(-off, __fadd_rn(l, r), b[i]), inv_diag);
        out[i] = v;
        move = fabsf(__fsub_rn(v, in[i]));
    }
    for (int s = 16; s > 0; s >>= 1)
        move = fmaxf(move, __shfl_xor_sync(0xFFFFFFFFu, move, s));
    if ((threadIdx.x & 31) == 0)
        atomicMax(&ctrl->maxdiff_bits, __float_as_uint(move));
}

__global__ void jacobi_decide_kernel(pl_jacobi_ctrl *ctrl, float tol, unsigned max_iterations, int use_handle,
                                     cudaGraphConditionalHandle handle)
{
    const unsigned it = ctrl->iterations + 1;
    const unsigned go_on = __uint_as_float(ctrl->maxdiff_bits) > tol && it < max_iterations;
    ctrl->iterations = it;
    ctrl->go_on = go_on;
    ctrl->maxdiff_bits = 0;
    if (use_handle)
        cudaGraphSetConditional(handle, go_on);
}

extern "C" cudaError_t pl_jacobi_sweep_f32(const float *b, float *x0, float *x1, size_t n, float inv_diag, float off,
                                           pl_jacobi_ctrl *ctrl, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    jacobi_sweep_kernel<<<(unsigned)((n + SWEEP_BLOCK - 1) / SWEEP_BLOCK), SWEEP_BLOCK, 0, stream>>>(
        b, x0, x1, n, inv_diag, off, ctrl);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_jacobi_decide(pl_jacobi_ctrl *ctrl, float tol, unsigned max_iterations, int use_handle,
                                        cudaGraphConditionalHandle handle, cudaStream_t stream)
{
    jacobi_decide_kernel<<<1, 1, 0, stream>>>(ctrl, tol, max_iterations, use_handle, handle);
    return cudaGetLastError();
}
