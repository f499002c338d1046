#include <stdint.h>
#include <cuda_runtime.h>

#include "core/latch.h"

__global__ void latch_kernel(volatile int *flag, volatile int *timed_out, uint64_t timeout_ns)
{
    uint64_t start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (*flag == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > timeout_ns) {
            *timed_out = 1;
            break;
        }
        __nanosleep(256);
    }
}

extern "C" int pl_latch_init(pl_ctx *ctx, pl_latch *l)
{
    int *host = NULL;
    PL_CUDA(ctx, cudaHostAlloc((void **)&host, 2 * sizeof(int), cudaHostAllocMapped));
    host[0] = 1;
    host[1] = 0;
    l->flag = host;
    l->timed_out = host + 1;
    int *dev = NULL;
    PL_CUDA(ctx, cudaHostGetDevicePointer((void **)&dev, host, 0));
    l->dev_flag = dev;
    l->dev_timed_out = dev + 1;
    return 0;
}

extern "C" int pl_latch_hold(pl_ctx *ctx, pl_latch *l)
{
    *l->flag = 0;
    *l->timed_out = 0;
    latch_kernel<<<1, 1, 0, ctx->stream>>>(l->dev_flag, l->dev_timed_out, PL_LATCH_TIMEOUT_NS);
    PL_CHECK_LAUNCH(ctx);
    return 0;
}

extern "C" void pl_latch_release(pl_latch *l)
{
    __sync_synchronize(); /* everything enqueued before the release is in the driver's hands */
    *l->flag = 1;
}

extern "C" int pl_latch_gave_way(pl_latch *l)
{
    return *l->timed_out != 0;
}

extern "C" void pl_latch_free(pl_latch *l)
{
    if (l->flag)
        cudaFreeHost((void *)l->flag);
    l->flag = l->timed_out = NULL;
}
