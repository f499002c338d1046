/* Device-side helpers every GPU target needs: seeded random inputs (never zeros) and poisoned outputs. */
#ifndef PERFLAB_DEVICE_H
#define PERFLAB_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include "perflab/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Uniform values in [lo, hi), a pure function of (ctx->seed, stream_id, index): the same seed gives the same
 * inputs on any GPU, so a host reference can recompute them with pl_uniform_host. */
int pl_fill_uniform_f32(pl_ctx *ctx, float *dev, size_t n, float lo, float hi, uint64_t stream_id);
int pl_fill_uniform_bf16(pl_ctx *ctx, uint16_t *dev, size_t n, float lo, float hi, uint64_t stream_id);
float pl_uniform_host(uint64_t seed, uint64_t stream_id, size_t index, float lo, float hi);
/* The bf16 that pl_fill_uniform_bf16 stores for a float (round to nearest even). */
uint16_t pl_bf16_round_host(float f);

/* All-ones bytes: NaN in fp32/fp16/bf16, -1 in integers; pl_verify_* counts such elements as unwritten. */
int pl_poison(pl_ctx *ctx, void *dev, size_t bytes);

/* Write `bytes` of `buf` so that whatever the timed region touches next is no longer in L2. */
int pl_flush_l2(pl_ctx *ctx, void *buf, size_t bytes);

/* Spin on the SM for `ns` nanoseconds of %globaltimer (one thread block). */
int pl_spin_ns(pl_ctx *ctx, uint64_t ns);

/* Measure the SM clock: clock64 cycles over a %globaltimer interval of about `ns` nanoseconds (synchronous). */
int pl_measure_sm_clock_mhz(pl_ctx *ctx, uint64_t ns, double *mhz);

#ifdef __cplusplus
}
#endif
#endif
