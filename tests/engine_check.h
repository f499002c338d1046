/* What the engine's GPU tests share (tests/gpu/test_engine_*.c): random bf16 inputs, host copies of device
 * memory, sequences whose pages are scattered through a pool, and the check of a step's writes into the KV cache. */
#ifndef PERFLAB_TESTS_ENGINE_CHECK_H
#define PERFLAB_TESTS_ENGINE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "engine/kv_pages.h"
#include "perflab/stats.h"

/* p[i] uniform in ±1 rounded to bf16, never within 1e-3 of zero (a zero hides a missing term). */
void pl_test_fill_pm1_bf16(uint16_t *p, size_t n, pl_rng *r);

/* A malloc'd host copy of `bytes` of device memory (the test fails on an error). */
void *pl_test_dev_copy(const void *dev, size_t bytes);

/* A pool of page_size-token pages holding need[s] tokens of each of nseq sequences, handed out a page per sequence
 * in turn (each sequence's pages scattered), plus two spare pages; returns the pool's pages and sets *max_pages to
 * the most pages a sequence holds. */
int pl_test_scatter_pages(pl_kv_pool *pool, pl_kv_seq *seqs, int nseq, const int *need, int page_size, int *max_pages);

/* A KV cache of cache_elems bf16 a pool: host copies *kc_h, *vc_h filled ±1 from rng (malloc'd), and the device pools
 * *k, *v holding the same (cudaMalloc'd). */
void pl_test_kv_make(size_t cache_elems, pl_rng *rng, uint16_t **kc_h, uint16_t **vc_h, uint16_t **k, uint16_t **v);

/* A step's device buffers for up to max_rows rows of `hidden` and nseq sequences of max_pages pages: input and output
 * rows, the rows' positions and cache slots, the sequences' lengths and block tables (cudaMalloc'd). */
void pl_test_step_alloc(int max_rows, int hidden, int nseq, int max_pages, uint16_t **x, uint16_t **out, int **pos,
                        int64_t **slots, int **lens, int **table);

/* Poisons (NaN) the rows at slots[0..nrows) of the device pools k and v ([slots][row_elems] bf16). */
void pl_test_poison_slots(uint16_t *k, uint16_t *v, const int64_t *slots, int nrows, size_t row_elems);

/* A layer step, enqueued on `stream` with x as its input (NULL: the caller's own) and arg its other arguments. */
typedef cudaError_t (*pl_test_step_fn)(void *arg, const uint16_t *x, cudaStream_t stream);

/* Runs a step in one of the three ways the engine tests check, and waits for it: mode 0 straight from x into the
 * step's output; 1 in place (x copied into out, then out as the input: out = x); 2 captured into a CUDA graph on a
 * stream of its own and replayed once. x and out hold rows × hidden bf16. */
void pl_test_run_step(pl_test_step_fn step, void *arg, int mode, const uint16_t *x, uint16_t *out, size_t x_bytes);

/* After a step that wrote rows at slots[0..nrows) of a cache pool [slots][row_elems]: each written element within
 * (|ref| + the rows' rms) / 64 of the reference's (room for a bf16 rounding flip of the projection, not for a wrong
 * angle or slot), every other element bit-identical to `before`. `after` and `ref` are host copies. */
void pl_test_check_cache(const char *tag, const uint16_t *before, const uint16_t *after, const uint16_t *ref,
                         size_t cache_elems, size_t row_elems, const int64_t *slots, int nrows);

#endif
