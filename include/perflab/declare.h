/* A target's parameters and variants, one line each: initializers of pl_param_def and pl_variant
 * (perflab/params.h, perflab/target.h) that name the fields every entry has, in a fixed order, and take the rest
 * as designated initializers after the help or technique line:
 *
 *   static const pl_param_def copy_params[] = {
 *       PL_INT_PARAM("n", "256m", 1, 1e12, "fp32 elements to copy", .small_value = "100003"),
 *       PL_PARAMS_END,
 *   };
 *   PL_LAUNCH_RUN(run_scalar, copy_state, pl_copy_f32_scalar(s->src, s->dst, s->n, ctx->stream))
 *   static const pl_variant copy_variants[] = {
 *       PL_VARIANT("baseline", run_scalar, "scalar 4-byte loads and stores, one element per thread"),
 *       PL_VARIANT("cuda_memcpy", run_memcpy, "cudaMemcpyAsync device-to-device", .flags = PL_VARIANT_REFERENCE),
 *       PL_VARIANTS_END,
 *   };
 *
 * The variadic part always holds the help or technique text, so a call never passes an empty `...`. */
#ifndef PERFLAB_DECLARE_H
#define PERFLAB_DECLARE_H

#include "perflab/params.h"
#include "perflab/target.h"

/* Parameters: name, default (text, parsed like a command-line value), bounds where the type has them, then the
 * help line and any of .small_value, .choices. Bounds both 0: none; max <= min: a lower bound only. */
#define PL_INT_PARAM(pname, def, lo, hi, ...)                                                                          \
    {.name = (pname), .type = PL_PARAM_INT, .default_value = (def), .min = (lo), .max = (hi), .help = __VA_ARGS__}
#define PL_FLOAT_PARAM(pname, def, lo, hi, ...)                                                                        \
    {.name = (pname), .type = PL_PARAM_FLOAT, .default_value = (def), .min = (lo), .max = (hi), .help = __VA_ARGS__}
#define PL_BOOL_PARAM(pname, def, ...) {.name = (pname), .type = PL_PARAM_BOOL, .default_value = (def), .help = __VA_ARGS__}
/* One of `options` ("bf16|fp16"); PL_TEXT_PARAM: free text. */
#define PL_CHOICE_PARAM(pname, def, options, ...)                                                                      \
    {.name = (pname), .type = PL_PARAM_STRING, .default_value = (def), .choices = (options), .help = __VA_ARGS__}
#define PL_TEXT_PARAM(pname, def, ...) {.name = (pname), .type = PL_PARAM_STRING, .default_value = (def), .help = __VA_ARGS__}
#define PL_PARAMS_END {.name = NULL}

/* A variant: name, run function, then the technique line and any of .flags, .req. */
#define PL_VARIANT(vname, run_fn, ...) {.name = (vname), .run = (run_fn), .technique = __VA_ARGS__}
#define PL_VARIANTS_END {.name = NULL}

/* A variant's run function that makes one call returning cudaError_t (a kernel's launcher, a cudaMemcpyAsync),
 * checked with PL_CUDA. In `call`, `s` is the target's state (a `state_type *`) and `ctx` the context: enqueue on
 * ctx->stream. */
#define PL_LAUNCH_RUN(fn, state_type, call)                                                                            \
    static int fn(pl_ctx *ctx, void *state)                                                                            \
    {                                                                                                                  \
        state_type *s = state;                                                                                         \
        PL_CUDA(ctx, call);                                                                                            \
        return 0;                                                                                                      \
    }

#endif
