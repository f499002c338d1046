/* Random GEMM shapes for `--shapes random:N[:SEED]`: a set no table was tuned to, drawn from a documented
 * distribution (docs/gemm.md, "Random shapes") by a generator of its own, so a seed gives the same shapes on every
 * machine. */
#ifndef PERFLAB_SELECTOR_SHAPES_RANDOM_H
#define PERFLAB_SELECTOR_SHAPES_RANDOM_H

#include <stdint.h>

#include "selector/shapes.h"

#define PL_GEMM_RANDOM_M_LOG2_MAX  14 /* M from 1 to 2^14 = 16384 */
#define PL_GEMM_RANDOM_NK_LOG2_MIN 8  /* N and K from 2^8 = 256 ... */
#define PL_GEMM_RANDOM_NK_LOG2_MAX 16 /* ... to 2^16 = 65536 */
#define PL_GEMM_RANDOM_SEED_MAX    INT64_MAX /* comparison.json states seeds as JSON integers */

/* splitmix64 (Steele, Lea and Flood 2014; the generator Java's SplittableRandom uses): the state advances by
 * 0x9E3779B97F4A7C15 and each output is that state through the mix13 finaliser. */
uint64_t pl_splitmix64_next(uint64_t *state);

/* floor(2^(q / 65536)) for q < 17·65536, in integers only (the fraction as a product of Q31 constants, each
 * 2^(2^-i) rounded to 31 bits), so it is the same on every machine. */
long long pl_gemm_random_exp2_q16(uint32_t q);

/* Appends `count` shapes drawn from the seed, named rnd<i>_m<M>_n<N>_k<K> (i counting on from the random shapes
 * already in the list), and records the draw in out->random. */
void pl_gemm_random_shapes(unsigned count, uint64_t seed, int seed_given, pl_gemm_shape_list *out);

/* A seed from /dev/urandom (the clock where it cannot be read), below 2^32 so that it is short to type again. */
uint64_t pl_gemm_random_fresh_seed(void);

/* One `random:N[:SEED]` item of --shapes (the text after "random"): 0 with the shapes appended, -1 with one line in
 * err naming what is wrong and the fix. */
int pl_gemm_random_item(const char *item, pl_gemm_shape_list *out, char *err, size_t errlen);

#endif
