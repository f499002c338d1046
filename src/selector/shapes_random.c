/* `--shapes random:N[:SEED]`: N GEMM shapes from the distribution docs/gemm.md states ("Random shapes"), drawn by
 * splitmix64 and integer arithmetic alone, so that a seed names the same shapes on every machine and compiler. */
#include "selector/shapes_random.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

uint64_t pl_splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* 2^(2^-i) for i = 1..16, times 2^31, rounded to nearest (from 60-digit decimal arithmetic). */
static const uint32_t exp2_frac_q31[16] = {
    3037000500u, 2553802834u, 2341847524u, 2242560872u, 2194507417u, 2170868212u, 2159144272u, 2153306067u,
    2150392887u, 2148937775u, 2148210589u, 2147847087u, 2147665360u, 2147574502u, 2147529075u, 2147506361u,
};

long long pl_gemm_random_exp2_q16(uint32_t q)
{
    const unsigned whole = q >> 16;
    uint64_t r = 1ull << 31; /* 1.0 in Q31; every product stays below 2^64 since each factor is below 2^32 */
    for (unsigned i = 0; i < 16; i++)
        if (q & (0x8000u >> i))
            r = (r * exp2_frac_q31[i]) >> 31;
    return (long long)((r << whole) >> 31);
}

/* An integer uniform in [0, bound] (the output modulo bound + 1: a bias below 2^-40 for these bounds). */
static uint32_t uniform(uint64_t *st, uint32_t bound)
{
    return (uint32_t)(pl_splitmix64_next(st) % ((uint64_t)bound + 1));
}

/* N or K: 2^x with x uniform over [8, 16] in steps of 2^-16, floored; then, with probability 1/4 (the top two bits of
 * one output both 0), a multiple of 8 that is none of 64 (rounded down to 8, and 8 more, or 8 less at the top, where
 * that lands on a multiple of 64), else rounded down to a multiple of 64. */
static long long draw_nk(uint64_t *st)
{
    const uint32_t lo = PL_GEMM_RANDOM_NK_LOG2_MIN << 16, hi = PL_GEMM_RANDOM_NK_LOG2_MAX << 16;
    long long v = pl_gemm_random_exp2_q16(lo + uniform(st, hi - lo));
    const int off64 = (pl_splitmix64_next(st) >> 62) == 0;
    if (!off64)
        return v / 64 * 64;
    v = v / 8 * 8;
    if (v % 64 == 0)
        v += v + 8 <= (1LL << PL_GEMM_RANDOM_NK_LOG2_MAX) ? 8 : -8;
    return v;
}

void pl_gemm_random_shapes(unsigned count, uint64_t seed, int seed_given, pl_gemm_shape_list *out)
{
    size_t first = 1; /* the index of this draw's first shape among the list's random shapes */
    for (size_t i = 0; i < out->n_random; i++)
        first += out->random[i].count;
    pl_reserve(&out->random, &out->cap_random, out->n_random + 1, sizeof *out->random);
    out->random[out->n_random++] = (pl_gemm_random_draw){.count = count, .seed = seed, .seed_given = seed_given};
    uint64_t st = seed;
    for (unsigned i = 0; i < count; i++) {
        pl_gemm_shape s;
        memset(&s, 0, sizeof s);
        /* M: 2^x with x uniform over [0, 14] in steps of 2^-16, floored: 1 to 16384 */
        s.m = pl_gemm_random_exp2_q16(uniform(&st, PL_GEMM_RANDOM_M_LOG2_MAX << 16));
        s.n = draw_nk(&st);
        s.k = draw_nk(&st);
        pl_snprintf(s.name, sizeof s.name, "rnd%zu_m%lld_n%lld_k%lld", first + i, s.m, s.n, s.k);
        pl_gemm_shape_list_add(out, &s);
    }
}

uint64_t pl_gemm_random_fresh_seed(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, &v, sizeof v) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t mix = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 32);
        v = pl_splitmix64_next(&mix);
    }
    if (fd >= 0)
        close(fd);
    return v & 0xFFFFFFFFull;
}

/* Decimal digits alone, from lo to hi: 0 with *out set, or -1 (empty, a sign, other characters, or overflow). */
static int parse_u64(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    for (const char *c = s; *c; c++)
        if (!isdigit((unsigned char)*c))
            return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int pl_gemm_random_item(const char *item, pl_gemm_shape_list *out, char *err, size_t errlen)
{
    const char *p = strncmp(item, "random", 6) == 0 ? item + 6 : item;
    char count_s[32] = "", seed_s[32] = "";
    const char *colon = *p == ':' ? strchr(p + 1, ':') : NULL;
    unsigned long long count = 0, seed = 0;
    if (*p == ':') {
        const size_t len = colon ? (size_t)(colon - p - 1) : strlen(p + 1);
        pl_snprintf(count_s, sizeof count_s, "%.*s", (int)(len < sizeof count_s ? len : sizeof count_s - 1), p + 1);
        if (len >= sizeof count_s)
            count_s[0] = 'x'; /* too long to be a count */
    }
    if (parse_u64(count_s, 1, PL_GEMM_MAX_SHAPES, &count) != 0) {
        pl_snprintf(err, errlen,
                    "'%s': the count of random shapes must be a whole number from 1 to %d; write random:N or "
                    "random:N:SEED, e.g. random:40",
                    PL_ESC(item), PL_GEMM_MAX_SHAPES);
        return -1;
    }
    int given = colon != NULL;
    if (given) {
        const size_t len = strlen(colon + 1);
        pl_snprintf(seed_s, sizeof seed_s, "%s", len < sizeof seed_s ? colon + 1 : "x");
        if (parse_u64(seed_s, 0, PL_GEMM_RANDOM_SEED_MAX, &seed) != 0) {
            pl_snprintf(err, errlen,
                        "'%s': the seed must be a whole number from 0 to %lld; write random:N:SEED with the seed "
                        "a run printed, or random:N for a fresh one",
                        PL_ESC(item), (long long)PL_GEMM_RANDOM_SEED_MAX);
            return -1;
        }
    } else
        seed = pl_gemm_random_fresh_seed();
    if (pl_gemm_shape_list_room(out, (size_t)count, PL_ESC(item), err, errlen) != 0)
        return -1;
    pl_gemm_random_shapes((unsigned)count, seed, given, out);
    return 0;
}
