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
} pl_expect_kind;

typedef struct pl_comm_expect {
    pl_expect_kind kind;
    int nranks;
    int op; /* pl_redop, for PL_EXPECT_REDUCE */
    int src_rank;
    uint64_t seed;
    size_t block;
    size_t base;
} pl_comm_expect;

/* buf[i] = value(seed, rank, base + i) for i < n, stored as dt. */
cudaError_t pl_comm_fill(void *buf, size_t n, pl_dtype dt, uint64_t seed, int rank, size_t base, cudaStream_t stream);
/* Compare n elements of out with the expectation, adding into *acc (device memory). */
cudaError_t pl_comm_check(const void *out, size_t n, pl_dtype dt, const pl_comm_expect *e, pl_comm_check_acc *acc,
                          cudaStream_t stream);
/* The value every rank's input holds at an index (what the kernels compute), for host-side tests. */
double pl_comm_value_host(uint64_t seed, int rank, size_t index);

#ifdef __cplusplus
}
#endif
#endif
