#include "common/kernel_req.h"

/* The two feature sets name the same hardware with the same bits: keep them so. */
_Static_assert((unsigned)PL_KNEED_WGMMA == (unsigned)PL_FEAT_WGMMA && (unsigned)PL_KNEED_TMA == (unsigned)PL_FEAT_TMA &&
                   (unsigned)PL_KNEED_CLUSTERS == (unsigned)PL_FEAT_CLUSTERS &&
                   (unsigned)PL_KNEED_TCGEN05 == (unsigned)PL_FEAT_TCGEN05 &&
                   (unsigned)PL_KNEED_FP8 == (unsigned)PL_FEAT_FP8,
               "kernels/common/needs.h and perflab/target.h disagree on a feature bit");

pl_requirements pl_requirements_of_kernel(pl_kernel_needs needs)
{
    pl_requirements r = {.needs_gpu = 1, .min_cc = needs.min_cc, .max_cc = needs.max_cc, .features = needs.features};
    return r;
}
