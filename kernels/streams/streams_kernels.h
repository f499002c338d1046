/* The compute stage of the streams lab: integer work of a chosen cost per element, so that a pipeline's kernel can
 * be made as long as its copies, and whose result a host can compute exactly in one step. */
#ifndef PERFLAB_STREAMS_KERNELS_H
#define PERFLAB_STREAMS_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = x after `iters` steps of x = a·x + c (mod 2^32) from x = in[i], for i < n: `iters` dependent integer
 * multiply-adds per element. in may equal out. Enqueues one kernel on `stream` (capturable) and returns
 * cudaGetLastError(). The closed form of the result is A·in[i] + C with pl_lcg_jump(). */
cudaError_t pl_lcg_steps_u32(const uint32_t *in, uint32_t *out, size_t n, int iters, uint32_t a, uint32_t c,
                             cudaStream_t stream);

/* The closed form of pl_lcg_steps_u32: `iters` steps take x to mul·x + add (mod 2^32). O(iters), on the host. */
static inline void pl_lcg_jump(int iters, uint32_t a, uint32_t c, uint32_t *mul, uint32_t *add)
{
    uint32_t m = 1, d = 0;
    for (int k = 0; k < iters; k++) {
        m *= a;
        d = d * a + c;
    }
    *mul = m;
    *add = d;
}

#ifdef __cplusplus
}
#endif
#endif
