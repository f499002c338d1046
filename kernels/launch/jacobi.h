/* An iterate-until-converged loop for the launch labs: Jacobi sweeps for the tridiagonal system
 * diag·x[i] + off·(x[i-1] + x[i+1]) = b[i] (zeros outside [0, n)), until no element moves by more than `tol`.
 *
 * A sweep and a decision per iteration, both on the device; the decision is either written to memory (for a host
 * that reads it back and decides whether to launch the next iteration) or handed to a CUDA graph's conditional
 * while node (cudaGraphSetConditional), so that the graph itself loops. Both launchers are capturable. */
#ifndef PERFLAB_LAUNCH_JACOBI_H
#define PERFLAB_LAUNCH_JACOBI_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The loop's state on the device; all zero before the first sweep (cudaMemsetAsync). */
typedef struct pl_jacobi_ctrl {
    unsigned iterations;   /* sweeps done */
    unsigned maxdiff_bits; /* this sweep's largest |x_new - x_old| as float bits (atomicMax: all are >= 0) */
    unsigned go_on;        /* the last decision: 1 to sweep again */
} pl_jacobi_ctrl;

/* One sweep. It reads x0 and writes x1 after an even number of sweeps, and the other way round after an odd one
 * (ctrl->iterations says which), so that the same launch, or graph node, serves every iteration:
 * x_new[i] = (b[i] - off·(x[i-1] + x[i+1])) · inv_diag, computed with explicit roundings (no contraction), so that
 * a host can repeat it bit for bit. */
cudaError_t pl_jacobi_sweep_f32(const float *b, float *x0, float *x1, size_t n, float inv_diag, float off,
                                pl_jacobi_ctrl *ctrl, cudaStream_t stream);

/* One thread: iterations += 1; go_on = (largest move > tol) && iterations < max_iterations; the largest move back to
 * 0. With use_handle, the decision also goes to cudaGraphSetConditional(handle, go_on): the launch must then be a
 * node of the body of the while node that owns the handle. */
cudaError_t pl_jacobi_decide(pl_jacobi_ctrl *ctrl, float tol, unsigned max_iterations, int use_handle,
                             cudaGraphConditionalHandle handle, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
