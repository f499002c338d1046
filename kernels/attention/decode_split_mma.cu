/* Paged decode, version 3 — split_kv_mma: flash-decoding with the GQA group on the tensor cores.
 *
 * The same split as split_kv (one CTA per chunk of a (sequence, kv head) KV range, partial results combined by a
 * second kernel), but the arithmetic goes through mma.sync m16n8k16: the G query heads of the group are the rows
 * of a 16-row A operand (zero rows pad G up to 16), so each warp's step is FlashAttention-2 on a 16 × 16 tile —
 * S = Q·Kᵀ for 16 tokens (ldmatrix from the K tile), the online softmax over the row, P to A registers in place,
 * O += P·V (ldmatrix.trans from the V tile). The SIMT version spends ~90 instructions per token and lane group on
 * fp32 FMAs, bf16 unpacking and shuffle reductions, enough to make a memory-bound problem instruction-bound; here
 * a token costs ~15 warp instructions, and the tensor cores, three quarters idle on padding rows, still have
 * room to spare. K and V stream through a 3-stage cp.async pipeline of 64-token tiles (16-byte copies, XOR-swizzled
 * rows so that ldmatrix does not conflict), each warp taking 16 tokens of a tile; the four warps' states merge
 * through shared memory at the end. */
#include "attention/attention.h"
#include "attention/decode_mma_tile.cuh"
#include "attention/decode_split.cuh"

#define DM_STAGES 3

template <int D> struct dm_smem {
    static constexpr int tile_bytes = DM_TILE * D * 2; /* K or V of one tile */
    static constexpr int stage_bytes = 2 * tile_bytes;
    static constexpr int merge_bytes = dm_merge<D>::bytes;
    static constexpr int bytes = DM_STAGES * stage_bytes > merge_bytes ? DM_STAGES *stage_bytes : merge_bytes;
};

template <int D> __global__ void __launch_bounds__(DM_THREADS, 2) decode_split_mma_kernel(const ds_args a)
{
    typedef dm_smem<D> sm;
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
    const pl_decode_problem &p = a.p;
    const int sp = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int len = p.seq_lens[b];
    const int start = sp * a.chunk;
    if (start >= len)
        return; /* the combine step knows this chunk is empty from the length */
    const int end = min(len, start + a.chunk);
    const int n_tiles = (end - start + DM_TILE - 1) / DM_TILE;
    const int *table = p.block_table + (long long)b * p.max_pages;

#pragma unroll
    for (int s = 0; s < DM_STAGES - 1; s++) {
        if (s < n_tiles)
            dm_load_tile<D>(sbase + s * sm::stage_bytes, p, table, kvh, start + s * DM_TILE, end);
        cp_async_commit();
    }
    uint32_t qa[D / 16][4];
    dm_load_q<D>(qa, p, a.group, b, kvh);
    dm_state<D> st;
    dm_state_reset<D>(st);

    for (int i = 0; i < n_tiles; i++) {
        cp_async_wait<DM_STAGES - 2>();
        __syncthreads(); /* tile i visible; every warp is done with the stage refilled next */
        if (i + DM_STAGES - 1 < n_tiles)
            dm_load_tile<D>(sbase + ((i + DM_STAGES - 1) % DM_STAGES) * sm::stage_bytes, p, table, kvh,
                            start + (i + DM_STAGES - 1) * DM_TILE, end);
        cp_async_commit();
        dm_tile_step<D>(st, qa, sbase + (i % DM_STAGES) * sm::stage_bytes, start + i * DM_TILE, end, a.scale_log2);
    }
    cp_async_wait<0>();

    /* the four warps' states of each head through shared memory (the stages are free now) */
    __syncthreads();
    float *sm_o = reinterpret_cast<float *>(smem);
    dm_stash_state<D>(sm_o, st, a.group);
    __syncthreads();
    ds_store_partials<D, DM_WARPS, 8>(a, sm_o, sm_o + DM_WARPS * 8 * D, sm_o + DM_WARPS * 8 * (D + 1), a.group, b, kvh,
                                      sp);
}

template <int D> static cudaError_t launch_split_mma(const ds_args &a, cudaStream_t stream)
{
    const dim3 grid((unsigned)a.max_splits, (unsigned)a.p.kv_heads, (unsigned)a.p.batch);
    const int smem = dm_smem<D>::bytes;
    cudaError_t e = cudaFuncSetAttribute(decode_split_mma_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess)
        return e;
    decode_split_mma_kernel<D><<<grid, DM_THREADS, smem, stream>>>(a);
    e = cudaGetLastError();
    return e != cudaSuccess ? e : ds_launch_combine<D>(a, stream);
}

extern "C" cudaError_t pl_decode_split_mma(const pl_decode_problem *p, int max_len, int chunk, void *workspace,
                                           cudaStream_t stream)
{
    ds_args a;
    cudaError_t e = ds_args_of(p, max_len, chunk, workspace, &a);
    if (e != cudaSuccess)
        return e;
    return p->head_dim == 64 ? launch_split_mma<64>(a, stream) : launch_split_mma<128>(a, stream);
}
