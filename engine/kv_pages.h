/* The paged KV cache, host side: a pool of fixed-size pages handed out by a block allocator (a free stack: O(1)
 * alloc and free), a page table per sequence that grows as tokens are appended and is released when the sequence
 * finishes, and the block table and lengths the paged decode kernels read.
 *
 * Device layout (the one kernels/attention/attention.h's pl_decode_problem reads, flash-attn / FlashInfer "NHD"):
 * per layer a K pool and a V pool, each [num_pages][page_size][kv_heads][head_dim] bf16; token t of a sequence
 * whose page table is pages[] lives in page pages[t / page_size] at row t % page_size, so the element (t, kv head
 * g, dim d) is at ((pages[t / page_size] · page_size + t % page_size) · kv_heads + g) · head_dim + d. Every layer
 * uses the same page ids (one table serves all layers). The block table is [batch][max_pages] int32, sequence b's
 * page ids first and -1 after them; seq_lens[b] is the number of tokens the step attends to (the new token
 * included, once its K/V is written).
 *
 * An FP8 cache (pl_layer_kv.dtype PL_KV_FP8_E4M3, kernels/attention/kv_fp8.h) has the same layout in e4m3 bytes,
 * [num_pages][page_size][kv_heads][head_dim] (element (slot, g, d) at (slot · kv_heads + g) · head_dim + d, 1 byte),
 * and beside each of the K and V pools its rows' scales, [num_pages·page_size][kv_heads] float: (slot, g)'s row
 * means e4m3(byte) · scale, the scale a power of two chosen from that row alone when it is written (a scale per
 * (token, kv head) row: a page's later tokens do not exist yet when its first is written). Per token and layer:
 * 2 · kv_heads · (head_dim + 4) bytes instead of 2 · kv_heads · head_dim · 2 (0.516× at head_dim 128). */
#ifndef PERFLAB_ENGINE_KV_PAGES_H
#define PERFLAB_ENGINE_KV_PAGES_H

#include <stddef.h>
#include <stdint.h>

#include "attention/attention.h"

typedef struct pl_kv_pool {
    int num_pages, page_size;
    int *free_stack; /* the free page ids; free_stack[0..free_count) */
    int free_count;
} pl_kv_pool;

typedef struct pl_kv_seq {
    int len;            /* tokens held */
    int npages, cap;    /* pages held; room in `pages` */
    int *pages;         /* the page table */
} pl_kv_seq;

/* 0, or -1 on bad sizes (num_pages, page_size >= 1) or no host memory. Page ids 0..num_pages-1, handed out in
 * ascending order from a fresh pool. */
int pl_kv_pool_init(pl_kv_pool *pool, int num_pages, int page_size);
void pl_kv_pool_destroy(pl_kv_pool *pool);

/* A free page's id, or -1 when none is left. */
int pl_kv_page_alloc(pl_kv_pool *pool);
void pl_kv_page_free(pl_kv_pool *pool, int page);

/* Pages that hold `tokens` tokens. */
int pl_kv_pages_for(int tokens, int page_size);

/* The pages appending `tokens` tokens to seq would take (what admission compares with pool->free_count). */
int pl_kv_pages_needed(const pl_kv_pool *pool, const pl_kv_seq *seq, int tokens);

/* Appends `tokens` (>= 0) tokens to seq, taking the pages they need. PL_KV_OUT_OF_PAGES when the pool has too few
 * free pages: nothing is taken and seq is as it was (the scheduler then waits, preempts or refuses admission);
 * PL_KV_NO_MEMORY when the page table cannot grow; PL_KV_BAD_COUNT for tokens < 0. */
enum { PL_KV_OK = 0, PL_KV_OUT_OF_PAGES = -1, PL_KV_NO_MEMORY = -2, PL_KV_BAD_COUNT = -3 };
int pl_kv_seq_append(pl_kv_pool *pool, pl_kv_seq *seq, int tokens);
/* Returns every page of seq to the pool and empties it (its table's memory kept for reuse). */
void pl_kv_seq_release(pl_kv_pool *pool, pl_kv_seq *seq);
void pl_kv_seq_destroy(pl_kv_pool *pool, pl_kv_seq *seq);

/* The cache slot of token t (page id · page_size + row): the row index into a pool seen as [slots][kv_heads][hd]. */
int64_t pl_kv_slot(const pl_kv_seq *seq, int t, int page_size);

/* Fills table [n][max_pages] (-1 past each sequence's pages) and lens [n] from seqs. -1 when a sequence holds more
 * than max_pages pages (nothing meaningful written then). */
int pl_kv_block_table(const pl_kv_seq *seqs, int n, int max_pages, int *table, int *lens);

/* The geometry fields of a decode problem over this pool (batch, heads, kv_heads, head_dim, page_size, max_pages,
 * scale 1/sqrt(head_dim)); the pointers are left for the caller. */
void pl_kv_decode_geometry(const pl_kv_pool *pool, int batch, int heads, int kv_heads, int head_dim, int max_pages,
                           pl_decode_problem *p);

#endif
