/* SplitMix64 and its finaliser (a well-mixed 64-bit value of a 64-bit counter), on the host and the device: the
 * engine's seeded values (weights, prompt tokens, the serving workload's generator) and the labs' seeded bytes and
 * routings come from them. */
#ifndef PERFLAB_ENGINE_MIX64_H
#define PERFLAB_ENGINE_MIX64_H

#include <stdint.h>

#ifdef __CUDACC__
#define PL_MIX64_HD __host__ __device__
#else
#define PL_MIX64_HD
#endif

static inline PL_MIX64_HD uint64_t pl_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* SplitMix64: the next value of the sequence whose state is *state. */
static inline PL_MIX64_HD uint64_t pl_splitmix64(uint64_t *state)
{
    return pl_mix64(*state += 0x9e3779b97f4a7c15ull);
}

#endif
