#include "common/peer_access.h"

#include <stdio.h>

#include <cuda_runtime_api.h>

int pl_peer_enable(const int *devices, int n, int i, const char *what, const char *instead, char *err, size_t errlen)
{
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        int can = 0;
        cudaError_t e = cudaDeviceCanAccessPeer(&can, devices[i], devices[j]);
        if (e == cudaSuccess && !can) {
            snprintf(err, errlen, "%s: GPU %d cannot access GPU %d's memory (no peer access): %s", what, devices[i],
                     devices[j], instead);
            return -1;
        }
        if (e == cudaSuccess) {
            e = cudaDeviceEnablePeerAccess(devices[j], 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled) {
                (void)cudaGetLastError(); /* clear it from the thread's last error */
                e = cudaSuccess;
            }
        }
        if (e != cudaSuccess) {
            snprintf(err, errlen, "%s: enabling GPU %d's access to GPU %d: %s", what, devices[i], devices[j],
                     cudaGetErrorString(e));
            return -1;
        }
    }
    return 0;
}
