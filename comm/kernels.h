/* Device side of the fabric checks: every rank fills its input with values that are a pure function of
 * (seed, rank, index), so that any rank can compute what it must receive without asking anyone; a check kernel
 * compares an output with that expectation in float64. Values are k/8 with k a random integer in [-15, 15]
 * without 0: exact in every dtype, and so are their sums over up to 17 ranks in bf16 (136 in fp16), so a correct
 * reduction has no error at all whatever its order. */
#ifndef PERFLAB_COMM_KERNELS_H
#define PERFLAB_COMM_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "perflab/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Accumulated on the device by the check kernel; zero it before a check. */
typedef struct pl_comm_check_acc {
    unsigned long long wrong;        /* elements that differ from the expectation at all */
    unsigned long long nonfinite;    /* NaN/Inf that are not the poison pattern */
    unsigned long long unwritten;    /* still all-ones bytes (float types only: -1 is a valid int32) */
    unsigned long long max_abs_bits; /* the largest |out - expected|, as the bits of a non-negative double */
    double err2;                     /* sum of (out - expected)^2 over finite elements */
    double ref2;                     /* sum of expected^2 */
} pl_comm_check_acc;

typedef enum pl_expect_kind {
    PL_EXPECT_REDUCE, /* out[i] = op over every rank r of value(r, base + i) */
    PL_EXPECT_BLOCKS, /* out[i] = value(i / block, base + i % block): one block per source rank */
    PL_EXPECT_SOURCE, /* out[i] = value(src_rank, base + i) */
    /* EP dispatch: row r = i / hidden of an expert-major buffer holds token row_token[r] of rank row_src[r]:
     * out[i] = value(row_src[r], row_token[r] * hidden + i % hidden), bit for bit */
    PL_EXPECT_EP_ROWS,
    /* EP combine: token t = i / hidden of rank src_rank: out[i] = the float64 sum over j < topk of
     * weight[t * topk + j] * PL_EP_EXPERT_SCALE(expert[t * topk + j]) * value(src_rank, i); wrong when off by more
     * than the fp32 sum and one bf16 rounding can be (2^-8 |sum| + 2^-16 sum of |terms|) */
    PL_EXPECT_EP_COMBINE,
} pl_expect_kind;

/* The stand-in expert of the EP measurements: expert e's output is its input times this (exact in bf16 for the
 * values above: k/8 times m/8 is an integer over 64 below 256 in magnitude). */
#define PL_EP_EXPERT_SCALE(e) ((double)(1 + (e) % 8) / 8.0)

typedef struct pl_comm_expect {
    pl_expect_kind kind;
    int nranks;
    int op; /* pl_redop, for PL_EXPECT_REDUCE */
    int src_rank;
    uint64_t seed;
    size_t block;
    size_t base;
    /* EP (device arrays) */
    const int *row_src, *row_token, *expert;
    const float *weight;
    int hidden, topk;
} pl_comm_expect;

/* buf[i] = value(seed, rank, base + i) for i < n, stored as dt. */
cudaError_t pl_comm_fill(void *buf, size_t n, pl_dtype dt, uint64_t seed, int rank, size_t base, cudaStream_t stream);
/* Compare n elements of out with the expectation, adding into *acc (device memory). */
cudaError_t pl_comm_check(const void *out, size_t n, pl_dtype dt, const pl_comm_expect *e, pl_comm_check_acc *acc,
                          cudaStream_t stream);
/* The stand-in expert on a rank whose first expert is first_expert: out[r] = in[r] * PL_EP_EXPERT_SCALE(first_expert +
 * local_expert[r]) for rows r < rows of hidden bf16 elements. */
cudaError_t pl_comm_ep_expert(uint16_t *out, const uint16_t *in, const int *local_expert, int first_expert, int rows,
                              int hidden, cudaStream_t stream);
/* The value every rank's input holds at an index (what the kernels compute), for host-side tests. */
double pl_comm_value_host(uint64_t seed, int rank, size_t index);

#ifdef __cplusplus
}
#endif
#endif
