/* The block allocator and the per-sequence page tables of the paged KV cache. */
#include "engine/kv_pages.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int pl_kv_pool_init(pl_kv_pool *pool, int num_pages, int page_size)
{
    memset(pool, 0, sizeof *pool);
    if (num_pages < 1 || page_size < 1)
        return -1;
    pool->free_stack = malloc((size_t)num_pages * sizeof *pool->free_stack);
    if (!pool->free_stack)
        return -1;
    pool->num_pages = num_pages;
    pool->page_size = page_size;
    for (int i = 0; i < num_pages; i++) /* the top of the stack is page 0 */
        pool->free_stack[i] = num_pages - 1 - i;
    pool->free_count = num_pages;
    return 0;
}

void pl_kv_pool_destroy(pl_kv_pool *pool)
{
    free(pool->free_stack);
    memset(pool, 0, sizeof *pool);
}

int pl_kv_page_alloc(pl_kv_pool *pool)
{
    return pool->free_count > 0 ? pool->free_stack[--pool->free_count] : -1;
}

void pl_kv_page_free(pl_kv_pool *pool, int page)
{
    pool->free_stack[pool->free_count++] = page;
}

int pl_kv_pages_for(int tokens, int page_size)
{
    return (tokens + page_size - 1) / page_size;
}

int pl_kv_pages_needed(const pl_kv_pool *pool, const pl_kv_seq *seq, int tokens)
{
    return pl_kv_pages_for(seq->len + tokens, pool->page_size) - seq->npages;
}

int pl_kv_seq_append(pl_kv_pool *pool, pl_kv_seq *seq, int tokens)
{
    if (tokens < 0)
        return PL_KV_BAD_COUNT;
    const int want = seq->npages + pl_kv_pages_needed(pool, seq, tokens);
    if (want - seq->npages > pool->free_count)
        return PL_KV_OUT_OF_PAGES;
    if (want > seq->cap) {
        const int cap = want > 2 * seq->cap ? want : 2 * seq->cap;
        int *grown = realloc(seq->pages, (size_t)cap * sizeof *grown);
        if (!grown)
            return PL_KV_NO_MEMORY;
        seq->pages = grown;
        seq->cap = cap;
    }
    while (seq->npages < want)
        seq->pages[seq->npages++] = pl_kv_page_alloc(pool);
    seq->len += tokens;
    return PL_KV_OK;
}

void pl_kv_seq_release(pl_kv_pool *pool, pl_kv_seq *seq)
{
    while (seq->npages > 0) /* in reverse, so that the next sequence reuses them in the same order */
        pl_kv_page_free(pool, seq->pages[--seq->npages]);
    seq->len = 0;
}

void pl_kv_seq_destroy(pl_kv_pool *pool, pl_kv_seq *seq)
{
    pl_kv_seq_release(pool, seq);
    free(seq->pages);
    memset(seq, 0, sizeof *seq);
}

int64_t pl_kv_slot(const pl_kv_seq *seq, int t, int page_size)
{
    return (int64_t)seq->pages[t / page_size] * page_size + t % page_size;
}

int pl_kv_block_table(const pl_kv_seq *seqs, int n, int max_pages, int *table, int *lens)
{
    for (int b = 0; b < n; b++) {
        if (seqs[b].npages > max_pages)
            return -1;
        for (int i = 0; i < max_pages; i++)
            table[(size_t)b * max_pages + i] = i < seqs[b].npages ? seqs[b].pages[i] : -1;
        lens[b] = seqs[b].len;
    }
    return 0;
}

void pl_kv_decode_geometry(const pl_kv_pool *pool, int batch, int heads, int kv_heads, int head_dim, int max_pages,
                           pl_decode_problem *p)
{
    p->batch = batch;
    p->heads = heads;
    p->kv_heads = kv_heads;
    p->head_dim = head_dim;
    p->page_size = pool->page_size;
    p->max_pages = max_pages;
    p->scale = 1.0f / sqrtf((float)head_dim);
}
