/* y = x + a·h[i mod hot_n]: a streaming kernel that re-reads a hot buffer h, launched in a chain of several over
 * different x and y and the same h. Without a policy, L2 (least recently used first) evicts h while the x and y
 * of each kernel stream through it, so every kernel reads h again from HBM. With an access-policy window over h
 * whose hits persist, h's lines stay in the part of L2 set aside for persisting lines (cudaLimitPersistingL2CacheSize)
 * and the chain reads h from HBM once. The kernel is the same; only the launch attribute differs.
 *
 * A second way to protect h without a window: load x and store y with evict-first cache hints (ld.global.cs,
 * st.global.cs), so that the stream's lines are the first L2 gives up. The lab times both, alone and together.
 *
 * 16-byte accesses where x, y, h and the sizes allow them (hot_n % 4 == 0 and 16-byte aligned buffers), single
 * words otherwise. */
#include <stdint.h>
#include "common/grid.h"
#include "memory/l2_persistence.h"

#define THREADS 256

/* EVICT_FIRST: the x loads and y stores carry the evict-first hint; otherwise plain accesses. */
template <int EVICT_FIRST>
__global__ void __launch_bounds__(THREADS)
    hot_axpy_vec4_kernel(const float4 *__restrict__ x, const float4 *__restrict__ h, float4 *__restrict__ y, size_t n4,
                         size_t hot4, float a)
{
    const size_t step = (size_t)gridDim.x * THREADS;
    for (size_t i = (size_t)blockIdx.x * THREADS + threadIdx.x; i < n4; i += step) {
        const float4 v = EVICT_FIRST ? __ldcs(x + i) : x[i], w = h[i % hot4];
        const float4 o = make_float4(v.x + a * w.x, v.y + a * w.y, v.z + a * w.z, v.w + a * w.w);
        if (EVICT_FIRST)
            __stcs(y + i, o);
        else
            y[i] = o;
    }
}

template <int EVICT_FIRST>
__global__ void __launch_bounds__(THREADS)
    hot_axpy_kernel(const float *__restrict__ x, const float *__restrict__ h, float *__restrict__ y, size_t begin,
                    size_t n, size_t hot_n, float a)
{
    const size_t step = (size_t)gridDim.x * THREADS;
    for (size_t i = begin + (size_t)blockIdx.x * THREADS + threadIdx.x; i < n; i += step) {
        const float v = (EVICT_FIRST ? __ldcs(x + i) : x[i]) + a * h[i % hot_n];
        if (EVICT_FIRST)
            __stcs(y + i, v);
        else
            y[i] = v;
    }
}

extern "C" cudaError_t pl_l2_limits(size_t *max_persisting_bytes, size_t *max_window_bytes)
{
    int dev = 0, persisting = 0, window = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&persisting, cudaDevAttrMaxPersistingL2CacheSize, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
    *max_persisting_bytes = (size_t)persisting;
    *max_window_bytes = (size_t)window;
    return e;
}

extern "C" cudaError_t pl_l2_hot_axpy(const float *x, const float *h, float *y, size_t n, size_t hot_n, float a,
                                      int evict_first, const pl_l2_window *w, cudaStream_t stream)
{
    if (hot_n == 0)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    cudaLaunchAttribute attr[1];
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3(THREADS);
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 0;
    if (w && w->policy != PL_L2_NONE) {
        attr[0].id = cudaLaunchAttributeAccessPolicyWindow;
        attr[0].val.accessPolicyWindow.base_ptr = const_cast<void *>(w->base);
        attr[0].val.accessPolicyWindow.num_bytes = w->bytes;
        attr[0].val.accessPolicyWindow.hitRatio = w->hit_ratio;
        attr[0].val.accessPolicyWindow.hitProp =
            w->policy == PL_L2_PERSISTING ? cudaAccessPropertyPersisting : cudaAccessPropertyNormal;
        attr[0].val.accessPolicyWindow.missProp =
            w->policy == PL_L2_PERSISTING ? cudaAccessPropertyStreaming : cudaAccessPropertyNormal;
        cfg.numAttrs = 1;
    }
    const int vec = hot_n % 4 == 0 && ((uintptr_t)x | (uintptr_t)h | (uintptr_t)y) % 16 == 0;
    if (vec) {
        const size_t n4 = n / 4;
        if (n4 > 0) {
            cfg.gridDim = dim3(pl_grid_1d(n4, THREADS));
            const float4 *x4 = reinterpret_cast<const float4 *>(x), *h4 = reinterpret_cast<const float4 *>(h);
            float4 *y4 = reinterpret_cast<float4 *>(y);
            cudaError_t e = evict_first
                                ? cudaLaunchKernelEx(&cfg, hot_axpy_vec4_kernel<1>, x4, h4, y4, n4, hot_n / 4, a)
                                : cudaLaunchKernelEx(&cfg, hot_axpy_vec4_kernel<0>, x4, h4, y4, n4, hot_n / 4, a);
            if (e != cudaSuccess)
                return e;
        }
        if (n % 4 == 0)
            return cudaSuccess;
        /* the last n % 4 elements */
        cfg.gridDim = dim3(1);
        return evict_first ? cudaLaunchKernelEx(&cfg, hot_axpy_kernel<1>, x, h, y, n4 * 4, n, hot_n, a)
                           : cudaLaunchKernelEx(&cfg, hot_axpy_kernel<0>, x, h, y, n4 * 4, n, hot_n, a);
    }
    cfg.gridDim = dim3(pl_grid_1d(n, THREADS));
    return evict_first ? cudaLaunchKernelEx(&cfg, hot_axpy_kernel<1>, x, h, y, (size_t)0, n, hot_n, a)
                       : cudaLaunchKernelEx(&cfg, hot_axpy_kernel<0>, x, h, y, (size_t)0, n, hot_n, a);
}
