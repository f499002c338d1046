/* What a kernel needs of the GPU, in the kernel library's own terms (it depends on CUDA alone): a range of compute
 * capabilities and the Hopper/Blackwell features it uses. A harness maps these onto its own requirements (perflab's
 * labs/common/kernel_req.h). */
#ifndef PERFLAB_KERNELS_NEEDS_H
#define PERFLAB_KERNELS_NEEDS_H

enum pl_kernel_feature {
    PL_KNEED_WGMMA = 1u << 0,    /* sm_90a warpgroup MMA */
    PL_KNEED_TMA = 1u << 1,      /* bulk tensor copies (sm_90+) */
    PL_KNEED_CLUSTERS = 1u << 2, /* thread-block clusters and distributed shared memory (sm_90+) */
    PL_KNEED_TCGEN05 = 1u << 3,  /* sm_100a tensor-memory MMA */
    PL_KNEED_FP8 = 1u << 4,      /* FP8 tensor cores (sm_89+) */
};

typedef struct pl_kernel_needs {
    int min_cc;        /* major*10+minor; 0 = any */
    int max_cc;        /* for architecture-specific code (wgmma: 90); 0 = no limit */
    unsigned features; /* pl_kernel_feature bits */
} pl_kernel_needs;

#endif
