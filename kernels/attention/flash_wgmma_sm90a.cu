/* Attention, version 3 — flash_wgmma: FlashAttention-3's ideas on Hopper (sm_90a), written from the paper and the
 * PTX ISA.
 *
 * One CTA per (tile of 128 queries, query head, batch), three warpgroups. Warpgroup 0 is the producer: it gives
 * its registers back (setmaxnreg) and two of its threads issue TMA loads, one for K tiles and one for V tiles (so
 * that a late V never holds back the next K), each into a ring of shared-memory stages guarded by "full" (TMA
 * bytes arrive) and "empty" (every consumer warp is done) mbarriers; the Q tile comes once. Warpgroups 1 and 2
 * are the consumers, 64 query rows each, with the registers the producer gave up.
 * Per K/V tile of 128 keys (80 at head_dim 256, fw_config) a consumer issues S = Q·Kᵀ as wgmma m64n128k16 (m64n80k16)
 * from shared memory (both operands K-major, 128-byte swizzled as TMA wrote them) and, while those run, O += P·V of
 * the previous tile as wgmma m64n{head_dim}k16 with A = P from registers (the bf16 probabilities never touch shared
 * memory) and B = V N-major from shared memory;
 * it waits for S only, does the online softmax of this tile (max, exp2, sums) while the tensor cores still work
 * on P·V, then waits for P·V, rescales O and turns S into the next P. So the exponentials of one tile overlap
 * the GEMMs of the next (the paper's intra-warpgroup pipelining). The two consumer warpgroups interleave on their
 * own (schedule "overlap", the default) or take turns issuing their GEMMs through named barriers ("pingpong", the
 * paper's inter-warpgroup schedule: one's softmax under the other's GEMMs): measured, neither wins everywhere.
 * The epilogue divides by the row sums, stages O through shared memory for a TMA store
 * (rows past the sequence are clipped by the tensor map) and writes the log-sum-exp.
 * Both layouts go through 4-D tensor maps (head_dim, seq, heads, batch) with the layout's strides, so TMA's
 * bounds checks give any seq for free: rows and keys past the sequence read as zeros, and the keys are masked.
 * Causal: tiles past the diagonal are never loaded, the CTAs start heaviest first. */
#include <math.h>
#include <cuda.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"
#include "attention/attn_wgmma_ops.cuh"
#include "common/sm90_common.cuh"

#define FW_BM         128 /* queries per CTA: two consumer warpgroups of 64 */
#define FW_THREADS    384
#define FW_SMEM_LIMIT 232448
#define FW_HALF_Q     (64 * 128) /* one 64-column half of a 64-row Q tile: 8 KB */

/* The tile sizes and register split of one head dimension. A consumer thread holds O (64 × D / 128 = D/2 fp32), S
 * (bn/2 fp32) and P (bn/4 bf16 pairs) at once, and the three warpgroups share the 168 registers a thread that
 * __launch_bounds__(384, 1) gives (3 · 168 = prod + 2 · cons). Shared memory holds Q (128 × D bf16) and `stages` K
 * and V tiles of bn × D bf16 within 227 KB.
 *   D 64, 128: 128-key tiles; S 64 + P 32 + O 32 or 64 registers fit the consumers' 232 (producer 40); 4 stages
 *              (160 KB) at 64, 2 (160 KB) at 128.
 *   D 256:     O alone is 128 registers, so 128-key tiles (S 64 + P 32 more, 224 before any address or row state)
 *              do not fit: 80-key tiles (S 40 + P 20: 188) under the consumers' 240 (producer 24, the fewest
 *              setmaxnreg takes); Q is 64 KB and a K or V tile 40 KB, so 2 stages (64 + 4 · 40 = 224 KB) are all that
 *              fit, and 96-key tiles (48 KB, 256 KB in all) do not. */
template <int D> struct fw_config {
    static constexpr int bn = D == 256 ? 80 : 128; /* keys per tile: the N of S = Q·Kᵀ, the K of O += P·V */
    static constexpr int halves = D / 64;          /* 64-column (128-byte) TMA boxes across head_dim */
    static constexpr int q_bytes = FW_BM * D * 2;  /* both consumers' Q */
    static constexpr int kv_bytes = bn * D * 2;    /* one K or V stage */
    static constexpr int box_bytes = bn * 128;     /* one 64-column box of a K or V stage */
    static constexpr int stages = D == 64 ? 4 : 2;
    static constexpr int prod_regs = D == 256 ? 24 : 40;
    static constexpr int cons_regs = D == 256 ? 240 : 232; /* prod + 2 · cons = 3 · 168 */
    static constexpr int bar_bytes = 8 * (1 + 4 * stages);
    static constexpr int smem_bytes = 1024 + q_bytes + 2 * stages * kv_bytes + bar_bytes;
    static_assert(prod_regs + 2 * cons_regs == 3 * 168, "the register split must use the launch's registers");
    static_assert(bn % 16 == 0 && box_bytes % 1024 == 0, "whole k16 steps and 1024-byte aligned swizzled boxes");
};

/* ---- TMA on 4-D tensors: (head_dim, seq, heads, batch) ---- */

__device__ __forceinline__ void fw_tma_load_4d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1,
                                               int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                 "%3, %4, %5}], [%6];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                 : "memory");
}

__device__ __forceinline__ void fw_tma_store_4d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(
                     (uint64_t)map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
                 : "memory");
}

/* Descriptor of B = V N-major (imm-trans-b = 1) with 128-byte swizzle: rows of 64 head_dim values (128 B) per key,
 * 8-key groups 1024 B apart (stride byte offset), the next 64 head_dim values one whole box of BN keys further
 * (leading byte offset = BN · 128 B). */
template <int BN> __device__ __forceinline__ uint64_t fw_desc_v(uint32_t addr)
{
    uint64_t desc = 0;
    desc |= (uint64_t)((addr & 0x3FFFF) >> 4);
    desc |= (uint64_t)((BN * 128) >> 4) << 16; /* leading byte offset: next 64 columns of head_dim */
    desc |= (uint64_t)(1024 >> 4) << 32;       /* stride byte offset: next 8 keys */
    desc |= (uint64_t)1 << 62;                 /* 128-byte swizzle */
    return desc;
}

/* Keep the compiler from touching the P registers before the wgmma reading them is waited for. */
template <int KT> __device__ __forceinline__ void fw_fence_regs(uint32_t (&p)[KT][4])
{
#pragma unroll
    for (int t = 0; t < KT; t++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            asm volatile("" : "+r"(p[t][i])::"memory");
}

struct fw_args {
    float *lse;
    int heads, group, seq, causal, q_tiles;
    float scale_log2;
};

/* Issue S = Q·K_jᵀ (64 × bn per consumer) once tile j has landed: K-major A and B, 128-byte swizzle. */
template <int D>
__device__ __forceinline__ void fw_issue_qk(float (&s)[fw_config<D>::bn / 2], uint32_t my_q, uint32_t sk,
                                            uint32_t k_full, int j)
{
    typedef fw_config<D> cfg;
    constexpr int S = cfg::stages;
    const int st = j % S;
    mbar_wait(k_full + 8 * st, (j / S) & 1);
    const uint32_t kt = sk + st * cfg::kv_bytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        const int hf = kk / 4, w = kk % 4;
        const uint64_t da = wgmma_desc_k128(my_q + hf * FW_HALF_Q + w * 32);
        const uint64_t db = wgmma_desc_k128(kt + hf * cfg::box_bytes + w * 32);
        if constexpr (cfg::bn == 128)
            pl_wgmma_m64n128k16_bf16<0>(s, da, db, kk > 0);
        else
            pl_wgmma_m64n80k16_bf16<0>(s, da, db, kk > 0);
    }
    wgmma_commit();
}

/* Issue O += P·V_j once tile j has landed: A = P from registers, B = V N-major; one k16 step per 16 keys, each
 * spanning the whole head_dim (N = D). */
template <int D>
__device__ __forceinline__ void fw_issue_pv(float (&o)[D / 2], const uint32_t (&p)[fw_config<D>::bn / 16][4],
                                            uint32_t sv, uint32_t v_full, int j)
{
    typedef fw_config<D> cfg;
    constexpr int S = cfg::stages;
    const int st = j % S;
    mbar_wait(v_full + 8 * st, (j / S) & 1);
    const uint32_t vt = sv + st * cfg::kv_bytes;
    wgmma_fence();
#pragma unroll
    for (int t = 0; t < cfg::bn / 16; t++) {
        const uint64_t db = fw_desc_v<cfg::bn>(vt + t * 2048);
        if constexpr (D == 256)
            attn_wgmma_rs_m64n256k16(o, p[t], db, 1);
        else if constexpr (D == 128)
            attn_wgmma_rs_m64n128k16(o, p[t], db, 1);
        else
            attn_wgmma_rs_m64n64k16(o, p[t], db, 1);
    }
    wgmma_commit();
}

/* The online softmax of one tile, in place: mask where the tile needs it (keys past the sequence, the causal
 * diagonal), new running max per row (a quad of lanes holds a row), alpha = 2^(m_old - m_new) for the caller to
 * rescale O with, S replaced by 2^(scale·log2e·S - m_new), the row sums (per thread; reduced at the end). */
template <int BN>
__device__ __forceinline__ void fw_softmax(float (&s)[BN / 2], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                           const fw_args &a, int kv0, int row_min, int row_lo, int lane)
{
    if (kv0 + BN > a.seq || (a.causal && kv0 + BN - 1 > row_min)) {
#pragma unroll
        for (int i = 0; i < BN / 2; i++) {
            const int col = kv0 + 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
            const int row = row_lo + ((i >> 1) & 1) * 8;
            if (col >= a.seq || (a.causal && col > row))
                s[i] = -INFINITY;
        }
    }
    float mx[2] = {m[0], m[1]}, mb[2], rs[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < BN / 2; i += 4) {
        mx[0] = fmaxf(mx[0], fmaxf(s[i], s[i + 1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[i + 2], s[i + 3]));
    }
    attn_rows_new_max(mx, m, alpha, mb, a.scale_log2);
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
        s[i] = attn_exp2(fmaf(s[i], a.scale_log2, -mb[(i >> 1) & 1]));
        rs[(i >> 1) & 1] += s[i];
    }
    l[0] = l[0] * alpha[0] + rs[0];
    l[1] = l[1] * alpha[1] + rs[1];
}

/* P (bf16) as the A operand of the KT k16 steps over the tile's 16·KT keys: the accumulator layout of n8 tiles 2t
 * and 2t+1 is the A layout of k16 step t. */
template <int KT> __device__ __forceinline__ void fw_pack_p(uint32_t (&p)[KT][4], const float (&s)[8 * KT])
{
#pragma unroll
    for (int t = 0; t < KT; t++) {
        p[t][0] = attn_pack_bf16(s[8 * t + 0], s[8 * t + 1]);
        p[t][1] = attn_pack_bf16(s[8 * t + 2], s[8 * t + 3]);
        p[t][2] = attn_pack_bf16(s[8 * t + 4], s[8 * t + 5]);
        p[t][3] = attn_pack_bf16(s[8 * t + 6], s[8 * t + 7]);
    }
}

/* Arrive on named barrier `id` without waiting (the other side waits with named_barrier_sync). */
__device__ __forceinline__ void fw_named_barrier_arrive(uint32_t id, uint32_t threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/* Ping-pong between the two consumers (PP = 1): named barriers 3 and 4 make them take turns issuing their GEMMs, so
 * that one's softmax runs while the other's GEMMs keep the tensor cores busy. Consumer c waits for its turn before
 * each issue and hands the turn over after it; consumer 1 hands the first turn to consumer 0 at the start and
 * consumer 0 takes the last hand-over at the end, so every barrier phase completes. */
template <int PP> __device__ __forceinline__ void fw_turn_wait(int c)
{
    if (PP)
        named_barrier_sync(3 + c, 256);
}

template <int PP> __device__ __forceinline__ void fw_turn_pass(int c)
{
    if (PP)
        fw_named_barrier_arrive(3 + (1 - c), 256);
}

/* The producer's ring of one operand (K or V): tile j into stage j % stages once every consumer warp has released
 * that stage, one 64-column box of head_dim at a time, all completing on the stage's "full" barrier. */
template <int D>
__device__ __forceinline__ void fw_load_ring(const CUtensorMap *map, uint32_t ring, uint32_t full, uint32_t empty,
                                             int n_tiles, int kvh, int b)
{
    typedef fw_config<D> cfg;
    constexpr int S = cfg::stages;
    for (int j = 0; j < n_tiles; j++) {
        const int st = j % S;
        mbar_wait(empty + 8 * st, ((j / S) & 1) ^ 1);
        mbar_arrive_expect_tx(full + 8 * st, cfg::kv_bytes);
        for (int hf = 0; hf < cfg::halves; hf++)
            fw_tma_load_4d(ring + st * cfg::kv_bytes + hf * cfg::box_bytes, map, full + 8 * st, hf * 64, j * cfg::bn,
                           kvh, b);
    }
}

/* A consumer's epilogue: row sums over the quad and the LSE, O / l into this warpgroup's Q tile (swizzled as the O
 * tensor map expects), one TMA store per 64-column box (rows past the sequence clipped by the map). */
template <int D>
__device__ __forceinline__ void fw_epilogue(const float (&o)[D / 2], float (&l)[2], const float (&m)[2],
                                            const fw_args &a, const CUtensorMap *tma_o, uint32_t my_q, int c,
                                            int row_min, int row_lo, int h, int b)
{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    attn_rows_finish(l, m, a.scale_log2, a.lse + ((long long)b * a.heads + h) * a.seq, row_lo, a.seq, lane);
    const float inv[2] = {1.0f / l[0], 1.0f / l[1]};
#pragma unroll
    for (int i = 0; i < D / 2; i += 2) {
        const int r = warp * 16 + (lane >> 2) + ((i >> 1) & 1) * 8; /* row in the 64-row tile */
        const int col = 8 * (i >> 2) + 2 * (lane & 3);
        const int hf = col / 64, chunk = (col % 64) / 8;
        const uint32_t addr = my_q + hf * FW_HALF_Q + r * 128 + ((chunk ^ (r & 7)) << 4) + (col % 8) * 2;
        const float iv = inv[(i >> 1) & 1];
        const uint32_t w = attn_pack_bf16(o[i] * iv, o[i + 1] * iv);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(w) : "memory");
    }
    fence_proxy_async_shared();
    named_barrier_sync(1 + c, 128);
    if ((threadIdx.x & 127) == 0 && row_min < a.seq) {
        for (int hf = 0; hf < fw_config<D>::halves; hf++)
            fw_tma_store_4d(tma_o, my_q + hf * FW_HALF_Q, hf * 64, row_min, h, b);
        bulk_commit();
        bulk_wait<0>();
    }
}

template <int D, int PP>
__global__ void __launch_bounds__(FW_THREADS, 1)
    flash_wgmma_kernel(const __grid_constant__ CUtensorMap tma_q, const __grid_constant__ CUtensorMap tma_k,
                       const __grid_constant__ CUtensorMap tma_v, const __grid_constant__ CUtensorMap tma_o,
                       const fw_args a)
{
    typedef fw_config<D> cfg;
    constexpr int S = cfg::stages, BN = cfg::bn, KT = BN / 16;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t sq = base, sk = sq + cfg::q_bytes, sv = sk + S * cfg::kv_bytes;
    const uint32_t q_full = sv + S * cfg::kv_bytes;
    const uint32_t k_full = q_full + 8, k_empty = k_full + 8 * S, v_full = k_empty + 8 * S, v_empty = v_full + 8 * S;

    const int qt = a.causal ? a.q_tiles - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / a.group;
    const int q0 = qt * FW_BM;
    const int kv_end = a.causal ? min(a.seq, q0 + FW_BM) : a.seq;
    const int n_tiles = (kv_end + BN - 1) / BN;
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        mbar_init(q_full, 1);
        for (int s = 0; s < S; s++) {
            mbar_init(k_full + 8 * s, 1);
            mbar_init(v_full + 8 * s, 1);
            mbar_init(k_empty + 8 * s, 8); /* the four warps of each consumer */
            mbar_init(v_empty + 8 * s, 8);
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) {
        regs_dealloc<cfg::prod_regs>();
        if (threadIdx.x == 0) { /* Q once, then the K ring */
            tma_prefetch_descriptor(&tma_q);
            tma_prefetch_descriptor(&tma_k);
            mbar_arrive_expect_tx(q_full, cfg::q_bytes);
            for (int c = 0; c < 2; c++)
                for (int hf = 0; hf < cfg::halves; hf++)
                    fw_tma_load_4d(sq + (c * cfg::halves + hf) * FW_HALF_Q, &tma_q, q_full, hf * 64, q0 + 64 * c, h, b);
            fw_load_ring<D>(&tma_k, sk, k_full, k_empty, n_tiles, kvh, b);
        } else if (threadIdx.x == 32) { /* the V ring */
            tma_prefetch_descriptor(&tma_v);
            fw_load_ring<D>(&tma_v, sv, v_full, v_empty, n_tiles, kvh, b);
        }
    } else {
        regs_alloc<cfg::cons_regs>();
        const int c = wg - 1;
        const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
        const uint32_t my_q = sq + c * cfg::halves * FW_HALF_Q;
        const int row_min = q0 + 64 * c;                      /* the first query row of this warpgroup */
        const int row_lo = row_min + warp * 16 + (lane >> 2); /* this thread's rows: row_lo, row_lo + 8 */
        float o[D / 2], s[BN / 2];
        uint32_t p[KT][4];
#pragma unroll
        for (int i = 0; i < D / 2; i++)
            o[i] = 0.0f;
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            s[i] = 0.0f;
#pragma unroll
        for (int t = 0; t < KT; t++)
            p[t][0] = p[t][1] = p[t][2] = p[t][3] = 0u;
        float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

        mbar_wait(q_full, 0);
        if (c == 1)
            fw_turn_pass<PP>(c); /* consumer 0 issues first */
        /* tile 0: S, softmax (O is still zero) */
        fw_turn_wait<PP>(c);
        fw_issue_qk<D>(s, my_q, sk, k_full, 0);
        fw_turn_pass<PP>(c);
        wgmma_wait<0>();
        accumulators_fence(s);
        if (lane == 0)
            mbar_arrive(k_empty);
        float alpha[2];
        fw_softmax<BN>(s, m, l, alpha, a, 0, row_min, row_lo, lane);
        fw_pack_p(p, s);
        /* steady state: S_j and P_{j-1}·V_{j-1} in flight together, the softmax of S_j under P·V */
        for (int j = 1; j < n_tiles; j++) {
            fw_turn_wait<PP>(c);
            fw_issue_qk<D>(s, my_q, sk, k_full, j);
            fw_issue_pv<D>(o, p, sv, v_full, j - 1);
            fw_turn_pass<PP>(c);
            wgmma_wait<1>(); /* S_j done; P·V may still run */
            accumulators_fence(s);
            if (lane == 0)
                mbar_arrive(k_empty + 8 * (j % S));
            fw_softmax<BN>(s, m, l, alpha, a, j * BN, row_min, row_lo, lane);
            wgmma_wait<0>(); /* P·V done: O may be rescaled, P rewritten, V_{j-1} released */
            accumulators_fence(o);
            fw_fence_regs(p);
            if (lane == 0)
                mbar_arrive(v_empty + 8 * ((j - 1) % S));
#pragma unroll
            for (int i = 0; i < D / 2; i++)
                o[i] *= alpha[(i >> 1) & 1];
            fw_pack_p(p, s);
        }
        fw_turn_wait<PP>(c);
        fw_issue_pv<D>(o, p, sv, v_full, n_tiles - 1);
        fw_turn_pass<PP>(c);
        if (c == 0)
            fw_turn_wait<PP>(c); /* the hand-over of consumer 1's last issue */
        wgmma_wait<0>();
        accumulators_fence(o);
        fw_fence_regs(p);
        if (lane == 0)
            mbar_arrive(v_empty + 8 * ((n_tiles - 1) % S));

        fw_epilogue<D>(o, l, m, a, &tma_o, my_q, c, row_min, row_lo, h, b);
    }
}

/* ---- host side: 4-D tensor maps through the driver's entry point ---- */

typedef CUresult (*fw_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                 const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static fw_encode_fn fw_encoder(void)
{
    static fw_encode_fn fn;
    static int looked;
    if (!looked) {
        void *ptr = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (fw_encode_fn)ptr;
        looked = 1;
    }
    return fn;
}

/* (head_dim, seq, nheads, batch) of a bf16 tensor in the problem's layout, boxes of 64 head_dim × rows, 128-byte
 * swizzle; coordinates past the sequence read as zeros and are never written. */
static cudaError_t fw_map(CUtensorMap *map, const void *ptr, const pl_attn_problem *p, int nheads, int rows)
{
    fw_encode_fn fn = fw_encoder();
    if (!fn)
        return cudaErrorNotSupported;
    const pl_attn_strides st = pl_attn_strides_of(p, nheads);
    const cuuint64_t dims[4] = {(cuuint64_t)p->head_dim, (cuuint64_t)p->seq, (cuuint64_t)nheads, (cuuint64_t)p->batch};
    const cuuint64_t strides[3] = {(cuuint64_t)st.s * 2, (cuuint64_t)st.h * 2, (cuuint64_t)st.b * 2};
    const cuuint32_t box[4] = {64, (cuuint32_t)rows, 1, 1};
    const cuuint32_t elem[4] = {1, 1, 1, 1};
    CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void *>(ptr), dims, strides, box, elem,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

template <int D, int PP> static cudaError_t launch_flash_wgmma(const pl_attn_problem *p, cudaStream_t stream)
{
    typedef fw_config<D> cfg;
    static_assert(cfg::smem_bytes <= FW_SMEM_LIMIT, "shared memory over the limit");
    CUtensorMap tq, tk, tv, to;
    cudaError_t e = fw_map(&tq, p->q, p, p->heads, 64);
    if (e == cudaSuccess)
        e = fw_map(&tk, p->k, p, p->kv_heads, cfg::bn);
    if (e == cudaSuccess)
        e = fw_map(&tv, p->v, p, p->kv_heads, cfg::bn);
    if (e == cudaSuccess)
        e = fw_map(&to, p->o, p, p->heads, 64);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(flash_wgmma_kernel<D, PP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 cfg::smem_bytes);
    if (e != cudaSuccess)
        return e;
    if (p->heads > 65535 || p->batch > 65535)
        return cudaErrorInvalidValue;
    fw_args a;
    a.lse = p->lse;
    a.heads = p->heads;
    a.group = p->heads / p->kv_heads;
    a.seq = p->seq;
    a.causal = p->causal;
    a.q_tiles = (p->seq + FW_BM - 1) / FW_BM;
    a.scale_log2 = p->scale * PL_ATTN_LOG2E;
    flash_wgmma_kernel<D, PP>
        <<<dim3(a.q_tiles, p->heads, p->batch), FW_THREADS, cfg::smem_bytes, stream>>>(tq, tk, tv, to, a);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_attn_flash_wgmma_schedule(const pl_attn_problem *p, int pingpong, cudaStream_t stream)
{
    char why[160];
    if (!pl_attn_problem_valid(p, why, sizeof why))
        return cudaErrorInvalidValue;
    if (p->head_dim == 64)
        return pingpong ? launch_flash_wgmma<64, 1>(p, stream) : launch_flash_wgmma<64, 0>(p, stream);
    if (p->head_dim == 256)
        return pingpong ? launch_flash_wgmma<256, 1>(p, stream) : launch_flash_wgmma<256, 0>(p, stream);
    return pingpong ? launch_flash_wgmma<128, 1>(p, stream) : launch_flash_wgmma<128, 0>(p, stream);
}
