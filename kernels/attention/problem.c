/* The attention problems' shared host logic: layout parsing, strides and the argument checks every kernel makes. */
#include "attention/attention.h"
#include "attention/mla.h"

#include <stdio.h>
#include <string.h>

int pl_attn_layout_from_name(const char *name)
{
    if (!name)
        return -1;
    if (strcmp(name, "bhsd") == 0)
        return PL_ATTN_BHSD;
    if (strcmp(name, "bshd") == 0)
        return PL_ATTN_BSHD;
    return -1;
}

pl_attn_strides pl_attn_strides_of(const pl_attn_problem *p, int nheads)
{
    const long long d = p->head_dim, s = p->seq, h = nheads;
    pl_attn_strides st;
    if (p->layout == PL_ATTN_BSHD) {
        st.b = s * h * d;
        st.h = d;
        st.s = h * d;
    } else {
        st.b = h * s * d;
        st.h = s * d;
        st.s = d;
    }
    return st;
}

static int aligned16(const void *ptr)
{
    return ((uintptr_t)ptr & 15u) == 0;
}

int pl_attn_problem_valid(const pl_attn_problem *p, char *why, size_t whylen)
{
    if (p->batch < 1 || p->heads < 1 || p->kv_heads < 1 || p->seq < 1) {
        snprintf(why, whylen, "batch, heads, kv_heads and seq must be >= 1 (got %d, %d, %d, %d)", p->batch, p->heads,
                 p->kv_heads, p->seq);
        return 0;
    }
    if (p->head_dim != 64 && p->head_dim != 128 && p->head_dim != 256) {
        snprintf(why, whylen, "head_dim %d is not supported: use 64, 128 or 256", p->head_dim);
        return 0;
    }
    if (p->heads % p->kv_heads != 0) {
        snprintf(why, whylen, "heads (%d) must be a multiple of kv_heads (%d): pick kv_heads dividing heads", p->heads,
                 p->kv_heads);
        return 0;
    }
    if (!(p->scale > 0.0f)) {
        snprintf(why, whylen, "the softmax scale must be > 0 (got %g)", (double)p->scale);
        return 0;
    }
    if (!p->q || !p->k || !p->v || !p->o || !p->lse || !aligned16(p->q) || !aligned16(p->k) || !aligned16(p->v) ||
        !aligned16(p->o)) {
        snprintf(why, whylen, "Q, K, V, O and LSE must be present and Q, K, V, O 16-byte aligned");
        return 0;
    }
    return 1;
}

int pl_attn_bwd_problem_valid(const pl_attn_bwd_problem *p, char *why, size_t whylen)
{
    if (!pl_attn_problem_valid(&p->f, why, whylen))
        return 0;
    if (p->f.head_dim != 64 && p->f.head_dim != 128) {
        snprintf(why, whylen, "head_dim %d is not supported by the backward kernels: use 64 or 128", p->f.head_dim);
        return 0;
    }
    if (!p->dout || !p->dq || !p->dk || !p->dv || !aligned16(p->dout) || !aligned16(p->dq) || !aligned16(p->dk) ||
        !aligned16(p->dv)) {
        snprintf(why, whylen, "dO, dQ, dK and dV must be present and 16-byte aligned");
        return 0;
    }
    return 1;
}

/* The geometry, scale and the pointers every decode kernel reads whatever the cache (q, table, lengths, o). */
static int decode_shape_valid(const pl_decode_problem *p, char *why, size_t whylen)
{
    if (p->batch < 1 || p->heads < 1 || p->kv_heads < 1 || p->max_pages < 1) {
        snprintf(why, whylen, "batch, heads, kv_heads and max_pages must be >= 1");
        return 0;
    }
    if (p->head_dim != 64 && p->head_dim != 128) {
        snprintf(why, whylen, "head_dim %d is not supported: use 64 or 128", p->head_dim);
        return 0;
    }
    if (p->heads % p->kv_heads != 0 || p->heads / p->kv_heads > 8) {
        snprintf(why, whylen, "heads (%d) must be a multiple of kv_heads (%d), at most 8 query heads per kv head",
                 p->heads, p->kv_heads);
        return 0;
    }
    if (p->page_size < 8 || p->page_size % 8 != 0) {
        snprintf(why, whylen, "page_size %d: use a multiple of 8 (16 and 64 are the usual)", p->page_size);
        return 0;
    }
    if (!(p->scale > 0.0f)) {
        snprintf(why, whylen, "the softmax scale must be > 0");
        return 0;
    }
    if (!p->q || !p->block_table || !p->seq_lens || !p->o || !aligned16(p->q) || !aligned16(p->o)) {
        snprintf(why, whylen, "q, block table, lengths and o must be present, q and o 16-byte aligned");
        return 0;
    }
    return 1;
}

int pl_decode_problem_valid(const pl_decode_problem *p, char *why, size_t whylen)
{
    if (p->kv_dtype != PL_KV_BF16) {
        snprintf(why, whylen,
                 "the cache is not bf16 (kv_dtype %d): an FP8 cache takes pl_decode_rows_deep_fp8 or "
                 "pl_decode_baseline",
                 (int)p->kv_dtype);
        return 0;
    }
    if (!decode_shape_valid(p, why, whylen))
        return 0;
    if (!p->k_cache || !p->v_cache || !aligned16(p->k_cache) || !aligned16(p->v_cache)) {
        snprintf(why, whylen, "the K and V caches must be present and 16-byte aligned");
        return 0;
    }
    return 1;
}

int pl_decode_problem_valid_any(const pl_decode_problem *p, char *why, size_t whylen)
{
    if (p->kv_dtype == PL_KV_BF16)
        return pl_decode_problem_valid(p, why, whylen);
    if (p->kv_dtype != PL_KV_FP8_E4M3) {
        snprintf(why, whylen, "unknown cache dtype %d: use PL_KV_BF16 or PL_KV_FP8_E4M3", (int)p->kv_dtype);
        return 0;
    }
    if (!decode_shape_valid(p, why, whylen))
        return 0;
    if (!p->k_fp8 || !p->v_fp8 || !p->k_scale || !p->v_scale || !aligned16(p->k_fp8) || !aligned16(p->v_fp8)) {
        snprintf(why, whylen,
                 "an FP8 cache needs its e4m3 K and V pools (16-byte aligned) and their rows' scales: set k_fp8, "
                 "v_fp8, k_scale and v_scale");
        return 0;
    }
    return 1;
}

int pl_mla_problem_valid(const pl_mla_problem *p, char *why, size_t whylen)
{
    if (p->batch < 1 || p->batch > 65535 || p->heads < 1 || p->heads > 4096 || p->max_pages < 1 || p->page_size < 1) {
        snprintf(why, whylen,
                 "batch (1..65535), heads (1..4096), max_pages and page_size (>= 1) out of range (got %d, %d, %d, %d)",
                 p->batch, p->heads, p->max_pages, p->page_size);
        return 0;
    }
    if (!(p->scale > 0.0f)) {
        snprintf(why, whylen, "the softmax scale must be > 0 (got %g)", (double)p->scale);
        return 0;
    }
    if (!p->q || !p->kv_cache || !p->block_table || !p->seq_lens || !p->o || !aligned16(p->q) ||
        !aligned16(p->kv_cache) || !aligned16(p->o)) {
        snprintf(why, whylen, "q, the cache, block table, lengths and o must be present, tensors 16-byte aligned");
        return 0;
    }
    return 1;
}
