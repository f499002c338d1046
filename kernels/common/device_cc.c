#include "common/device_cc.h"

cudaError_t pl_current_cc(int *cc)
{
    int device = 0, major = 0, minor = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    *cc = major * 10 + minor;
    return e;
}
