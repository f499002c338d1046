/* Paged decode, version 2 — split_kv: flash-decoding with the GQA group sharing every K/V load.
 *
 * Decoding reads the whole KV cache to produce one token: the work is memory-bound (2·head_dim FLOPs per 2 bytes
 * of K and 2 of V per query head), and one CTA per (sequence, head) leaves most of the GPU idle when batch ×
 * heads is small or the sequences are long. Here each (sequence, kv head) KV range is split into chunks of
 * `chunk` tokens, one CTA per chunk, and the CTA computes every query head of the GQA group from each K/V row
 * it loads (so K/V leave HBM once, not heads/kv_heads times).
 * Inside a CTA, K and V stream through a 3-stage cp.async pipeline of 32-token tiles (16-byte copies; the block
 * table read once per token row). Each warp takes 8 tokens of a tile: head_dim/8 lanes share a token, each
 * holding 8 elements of its K and V rows (one 16-byte shared-memory load each), fp32 FMAs for q·k, a shuffle
 * reduction over the token's lanes, and V accumulated per lane. Each lane group keeps its own running max, sum and
 * output per query head (an online softmax, the rescale once per tile); groups merge through shuffles, warps
 * through shared memory (the stages' bytes), and the CTA writes its chunk's (max, sum, unnormalised output) per
 * head to a workspace. A second kernel combines the chunks of each (sequence, head):
 * O = Σ 2^(mᵢ-M)·oᵢ / Σ 2^(mᵢ-M)·lᵢ. Scores are kept in base 2 (q pre-multiplied by scale·log2 e) so that every
 * exponential is one ex2.
 * Measured (docs/perf/attention.md): the arithmetic, about 90 instructions per token and lane group for G = 4,
 * makes this memory-bound problem instruction-bound (55-64% of the copy ceiling, the pipeline did not help);
 * decode_split_mma.cu moves it onto the tensor cores.
 */
#include <math.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"
#include "attention/decode_split.cuh"

#define DS_THREADS 128
#define DS_WARPS   (DS_THREADS / 32)
#define DS_TILE    32 /* tokens per pipeline stage: 8 per warp */
#define DS_STAGES  3  /* tiles in flight: 2 ahead of the one being used (48 KB for head_dim 128: 4 CTAs an SM) */

extern "C" size_t pl_decode_split_workspace_bytes(const pl_decode_problem *p, int max_len, int chunk)
{
    if (chunk <= 0 || max_len <= 0)
        return 0;
    const size_t n = (size_t)p->batch * p->heads * ds_max_splits(max_len, chunk);
    return n * ((size_t)p->head_dim + 2) * sizeof(float) + 256;
}

extern "C" int pl_decode_split_chunk(const pl_decode_problem *p, int max_len, int sm_count)
{
    /* about 32 CTAs per SM over the longest sequence (short CTAs balance the tail and the uneven lengths), in
     * multiples of 64 tokens, at least 256 so that a CTA's fixed costs stay small against its loads */
    const long long pairs = (long long)p->batch * p->kv_heads;
    long long splits = (32LL * (sm_count > 0 ? sm_count : 132) + pairs - 1) / pairs;
    if (splits < 1)
        splits = 1;
    long long chunk = (max_len + splits - 1) / splits;
    chunk = (chunk + 63) / 64 * 64;
    if (chunk < 256)
        chunk = 256;
    return (int)chunk;
}

/* Shared memory of a CTA: DS_STAGES tiles of DS_TILE tokens (K rows, then V rows, head_dim bf16 each); after the
 * loop the same bytes hold the warps' partial results for the merge. */
template <int D, int G> struct ds_smem {
    static constexpr int tile_bytes = DS_TILE * D * 2; /* K or V of one tile */
    static constexpr int stage_bytes = 2 * tile_bytes;
    static constexpr int merge_bytes = DS_WARPS * G * (D + 2) * 4;
    static constexpr int bytes = DS_STAGES * stage_bytes > merge_bytes ? DS_STAGES *stage_bytes : merge_bytes;
};

/* Tile i of the chunk [start, end) into a stage: 16-byte cp.async per row slice, zeros for tokens past the end. */
template <int D>
__device__ __forceinline__ void ds_load_tile(uint32_t stage, const pl_decode_problem &p, const int *table, int kvh,
                                             int t0, int end)
{
    constexpr int LPK = D / 8;
    constexpr int CHUNKS = DS_TILE * LPK; /* of K, and as many of V */
#pragma unroll
    for (int i = 0; i < 2 * CHUNKS / DS_THREADS; i++) {
        const int c = threadIdx.x + i * DS_THREADS;
        const int kv = c / CHUNKS, r = c % CHUNKS, tok = r / LPK, ch = r % LPK;
        const int t = t0 + tok;
        const uint16_t *base = kv ? p.v_cache : p.k_cache;
        const uint16_t *src = base;
        if (t < end) {
            const long long page = table[t / p.page_size];
            src = base + ((page * p.page_size + t % p.page_size) * p.kv_heads + kvh) * D + ch * 8;
        }
        cp_async16(stage + kv * (DS_TILE * D * 2) + tok * (D * 2) + ch * 16, src, t < end ? 16 : 0);
    }
}

/* CTAs an SM must hold: as many as the registers of G query heads' state allow without spilling (168 registers for
 * G = 4 at head_dim 128: three CTAs, 12 warps, an SM) */
#define DS_MIN_BLOCKS(G) ((G) >= 8 ? 2 : (G) == 4 ? 3 : 4)

template <int D, int G>
__global__ void __launch_bounds__(DS_THREADS, DS_MIN_BLOCKS(G)) decode_split_kernel(const ds_args a)
{
    constexpr int LPK = D / 8;                  /* lanes per token */
    constexpr int KPW = 32 / LPK;               /* tokens per warp step */
    constexpr int U = DS_TILE / DS_WARPS / KPW; /* steps per warp per tile */
    typedef ds_smem<D, G> sm;
    extern __shared__ __align__(16) uint8_t smem[];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
    const pl_decode_problem &p = a.p;
    const int sp = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int len = p.seq_lens[b];
    const int start = sp * a.chunk;
    if (start >= len)
        return; /* the combine step knows this chunk is empty from the length */
    const int end = min(len, start + a.chunk);
    const int n_tiles = (end - start + DS_TILE - 1) / DS_TILE;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tk = lane / LPK, dl = lane % LPK; /* token within the step, 8-element slice of head_dim */
    const int *table = p.block_table + (long long)b * p.max_pages;

    /* the first tiles in flight before anything else */
#pragma unroll
    for (int s = 0; s < DS_STAGES - 1; s++) {
        if (s < n_tiles)
            ds_load_tile<D>(sbase + s * sm::stage_bytes, p, table, kvh, start + s * DS_TILE, end);
        cp_async_commit();
    }

    float q[G][8], acc[G][8], m[G], l[G];
#pragma unroll
    for (int g = 0; g < G; g++) {
        const int hq = kvh * a.group + min(g, a.group - 1); /* padded heads repeat the last one, never stored */
        const uint4 w = *reinterpret_cast<const uint4 *>(p.q + ((long long)b * p.heads + hq) * D + dl * 8);
        const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[g][2 * i] = attn_bf16_lo(ws[i]) * a.scale_log2;
            q[g][2 * i + 1] = attn_bf16_hi(ws[i]) * a.scale_log2;
        }
#pragma unroll
        for (int e = 0; e < 8; e++)
            acc[g][e] = 0.0f;
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }

    for (int i = 0; i < n_tiles; i++) {
        cp_async_wait<DS_STAGES - 2>();
        __syncthreads(); /* tile i visible; every warp is done with the stage refilled next */
        if (i + DS_STAGES - 1 < n_tiles)
            ds_load_tile<D>(sbase + ((i + DS_STAGES - 1) % DS_STAGES) * sm::stage_bytes, p, table, kvh,
                            start + (i + DS_STAGES - 1) * DS_TILE, end);
        cp_async_commit();
        const uint32_t ks = sbase + (i % DS_STAGES) * sm::stage_bytes, vs = ks + sm::tile_bytes;
        const int t0 = start + i * DS_TILE;

        /* scores of this warp's U·KPW tokens for every head of the group */
        float s[U][G];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int tok = warp * (U * KPW) + u * KPW + tk;
            uint4 kr;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(kr.x), "=r"(kr.y), "=r"(kr.z), "=r"(kr.w)
                         : "r"(ks + tok * (D * 2) + dl * 16));
            const uint32_t kw[4] = {kr.x, kr.y, kr.z, kr.w};
#pragma unroll
            for (int g = 0; g < G; g++) {
                float x = 0.0f;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    x = fmaf(q[g][2 * j], attn_bf16_lo(kw[j]), x);
                    x = fmaf(q[g][2 * j + 1], attn_bf16_hi(kw[j]), x);
                }
#pragma unroll
                for (int off = LPK / 2; off > 0; off >>= 1)
                    x += __shfl_xor_sync(0xffffffffu, x, off);
                s[u][g] = t0 + tok < end ? x : -INFINITY;
            }
        }
        /* online softmax per head (once per tile), then the V rows */
        float pu[U][G];
#pragma unroll
        for (int g = 0; g < G; g++) {
            float mx = m[g];
#pragma unroll
            for (int u = 0; u < U; u++)
                mx = fmaxf(mx, s[u][g]);
            const float use = mx == -INFINITY ? 0.0f : mx;
            const float alpha = attn_exp2(m[g] - use);
            float sum = 0.0f;
#pragma unroll
            for (int u = 0; u < U; u++) {
                pu[u][g] = attn_exp2(s[u][g] - use);
                sum += pu[u][g];
            }
            l[g] = l[g] * alpha + sum;
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[g][e] *= alpha;
            m[g] = mx;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int tok = warp * (U * KPW) + u * KPW + tk;
            uint4 vr;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(vr.x), "=r"(vr.y), "=r"(vr.z), "=r"(vr.w)
                         : "r"(vs + tok * (D * 2) + dl * 16));
            const uint32_t vw[4] = {vr.x, vr.y, vr.z, vr.w};
#pragma unroll
            for (int g = 0; g < G; g++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    acc[g][2 * j] = fmaf(pu[u][g], attn_bf16_lo(vw[j]), acc[g][2 * j]);
                    acc[g][2 * j + 1] = fmaf(pu[u][g], attn_bf16_hi(vw[j]), acc[g][2 * j + 1]);
                }
        }
    }
    cp_async_wait<0>();

    /* merge the token groups of the warp (lanes with the same slice dl), then the warps through shared memory */
#pragma unroll
    for (int off = LPK; off < 32; off <<= 1) {
#pragma unroll
        for (int g = 0; g < G; g++) {
            float acc2[8];
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc2[e] = __shfl_xor_sync(0xffffffffu, acc[g][e], off);
            const float m2 = __shfl_xor_sync(0xffffffffu, m[g], off), l2 = __shfl_xor_sync(0xffffffffu, l[g], off);
            ds_merge<8>(m[g], l[g], acc[g], m2, l2, acc2);
        }
    }
    __syncthreads();                                 /* the stages are free: they hold the merge now */
    float *sm_acc = reinterpret_cast<float *>(smem); /* [DS_WARPS][G][D] */
    float *sm_m = sm_acc + DS_WARPS * G * D, *sm_l = sm_m + DS_WARPS * G; /* [DS_WARPS][G] */
    if (tk == 0) {
#pragma unroll
        for (int g = 0; g < G; g++) {
#pragma unroll
            for (int e = 0; e < 8; e++)
                sm_acc[(warp * G + g) * D + dl * 8 + e] = acc[g][e];
            if (dl == 0) {
                sm_m[warp * G + g] = m[g];
                sm_l[warp * G + g] = l[g];
            }
        }
    }
    __syncthreads();
    ds_store_partials<D, DS_WARPS, G>(a, sm_acc, sm_m, sm_l, min(G, a.group), b, kvh, sp);
}

template <int D, int G> static cudaError_t launch_split(const ds_args &a, cudaStream_t stream)
{
    const dim3 grid((unsigned)a.max_splits, (unsigned)a.p.kv_heads, (unsigned)a.p.batch);
    const int smem = ds_smem<D, G>::bytes;
    cudaError_t e = cudaFuncSetAttribute(decode_split_kernel<D, G>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess)
        return e;
    decode_split_kernel<D, G><<<grid, DS_THREADS, smem, stream>>>(a);
    e = cudaGetLastError();
    return e != cudaSuccess ? e : ds_launch_combine<D>(a, stream);
}

template <int D> static cudaError_t launch_split_d(const ds_args &a, cudaStream_t stream)
{
    if (a.group == 1)
        return launch_split<D, 1>(a, stream);
    if (a.group == 2)
        return launch_split<D, 2>(a, stream);
    if (a.group <= 4)
        return launch_split<D, 4>(a, stream);
    return launch_split<D, 8>(a, stream);
}

extern "C" cudaError_t pl_decode_split_kv(const pl_decode_problem *p, int max_len, int chunk, void *workspace,
                                          cudaStream_t stream)
{
    ds_args a;
    cudaError_t e = ds_args_of(p, max_len, chunk, workspace, &a);
    if (e != cudaSuccess)
        return e;
    return p->head_dim == 64 ? launch_split_d<64>(a, stream) : launch_split_d<128>(a, stream);
}
