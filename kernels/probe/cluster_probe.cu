/* Thread-block clusters: launch with a cluster dimension, and read a neighbour block's shared memory through
 * distributed shared memory (mapa + ld.shared::cluster, via cooperative_groups). */
#include <cooperative_groups.h>
#include "probe/probe_kernels.h"

namespace cg = cooperative_groups;

__host__ __device__ static inline unsigned cluster_word(unsigned salt, unsigned block, unsigned i)
{
    return (salt ^ (block * 0x9E3779B9u)) + i * 7u;
}

__global__ void __launch_bounds__(PL_PROBE_CLUSTER_THREADS) cluster_dsmem_kernel(unsigned salt, unsigned *out)
{
    __shared__ unsigned words[PL_PROBE_CLUSTER_THREADS];
    cg::cluster_group cluster = cg::this_cluster();
    words[threadIdx.x] = cluster_word(salt, blockIdx.x, threadIdx.x);
    cluster.sync(); /* every block's shared memory is written before anyone reads it */
    const unsigned rank = cluster.block_rank(), size = cluster.num_blocks();
    const unsigned *peer = cluster.map_shared_rank(words, (rank + 1) % size);
    out[blockIdx.x * PL_PROBE_CLUSTER_THREADS + threadIdx.x] = peer[threadIdx.x];
    cluster.sync(); /* and no block exits while a neighbour may still read its shared memory */
}

extern "C" unsigned pl_probe_cluster_word(unsigned salt, unsigned block, unsigned i)
{
    return cluster_word(salt, block, i);
}

extern "C" cudaError_t pl_probe_cluster_max_size(int *portable, int *nonportable)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(128, 1, 1);
    cfg.blockDim = dim3(PL_PROBE_CLUSTER_THREADS, 1, 1);
    cudaError_t e = cudaOccupancyMaxPotentialClusterSize(portable, (void *)cluster_dsmem_kernel, &cfg);
    if (e != cudaSuccess)
        return e;
    e = cudaFuncSetAttribute((void *)cluster_dsmem_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess)
        return e;
    return cudaOccupancyMaxPotentialClusterSize(nonportable, (void *)cluster_dsmem_kernel, &cfg);
}

extern "C" cudaError_t pl_probe_cluster_dsmem(int cluster_size, int blocks, unsigned salt, unsigned *out,
                                              cudaStream_t stream)
{
    if (cluster_size < 1 || blocks < cluster_size || blocks % cluster_size != 0)
        return cudaErrorInvalidValue;
    if (cluster_size > 8) {
        cudaError_t e =
            cudaFuncSetAttribute((void *)cluster_dsmem_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        if (e != cudaSuccess)
            return e;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)blocks, 1, 1);
    cfg.blockDim = dim3(PL_PROBE_CLUSTER_THREADS, 1, 1);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)cluster_size;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, cluster_dsmem_kernel, salt, out);
}
