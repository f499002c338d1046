/* The multi-GPU tests' helpers (multigpu.h). */
#include "multigpu.h"

#include <pthread.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "core/devprobe.h"
#include "testutil.h"

int pl_test_gpu_count(int need, const char *what)
{
    pl_gpu_inventory inv;
    const int probed = pl_gpu_inventory_probe(&inv, 60) == 0 && inv.usable;
    const int count = probed ? inv.device_count : 0;
    if (count < need)
        printf("SKIP: %s needs %d or more GPUs; this machine has %d%s%s\n", what, need, count, inv.error[0] ? ": " : "",
               inv.error);
    pl_gpu_inventory_free(&inv);
    return count < need ? 0 : count;
}

int pl_test_peers_ok(int n, char *why, size_t whylen)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int can = 1;
            if (i != j && (cudaDeviceCanAccessPeer(&can, i, j) != cudaSuccess || !can)) {
                snprintf(why, whylen, "GPU %d cannot access GPU %d's memory (no peer access)", i, j);
                return 0;
            }
        }
    return 1;
}

void pl_test_on_ranks(int n, void *(*fn)(void *), void *args, size_t arg_size)
{
    pthread_t t[16];
    ck_assert(n >= 1 && n <= 16);
    for (int r = 0; r < n; r++)
        ck_assert_int_eq(pthread_create(&t[r], NULL, fn, (char *)args + (size_t)r * arg_size), 0);
    for (int r = 0; r < n; r++)
        pthread_join(t[r], NULL);
}
