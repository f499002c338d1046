/* The native GEMM kernel table (its rows' shapes and the problems each takes), the split-K rule, and the heuristic
 * behind pl_gemm_bf16 (the model's choices, the measured table's precedence and its limits, the committed table), all
 * without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/fp8.h"
#include "gemm/gemm.h"
#include "gemm/grouped.h"
#include "gemm/host/heuristic.h"
#include "gemm/host/splitk.h"
#include "gemm/host/tensor_map.h"
#include "testutil.h"

#define SWAP16 "wgmma_sk_swap_16x64x64"

static const pl_gemm_gpu h200 = {90, 132, 1, 0, 0, 0};
static const pl_gemm_gpu a100 = {80, 108, 0, 0, 0, 0};

/* A problem whose pointers are aligned but never dereferenced (the pick only checks them). */
static pl_gemm_problem problem(int m, int n, int k, pl_gemm_b_layout layout)
{
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.n = n;
    p.k = k;
    p.b_layout = layout;
    p.a = (const uint16_t *)(uintptr_t)0x100000;
    p.b = (const uint16_t *)(uintptr_t)0x200000;
    p.d = (uint16_t *)(uintptr_t)0x300000;
    return p;
}

/* The model's pick (no table). */
static const char *pick_name(const pl_gemm_problem *p, const pl_gemm_gpu *g)
{
    pl_gemm_pick pick;
    ck_assert_msg(pl_gemm_bf16_pick_from(p, g, NULL, 0, &pick) == 0, "no pick for %dx%dx%d: %s", p->m, p->n, p->k,
                  pick.why);
    ck_assert_ptr_nonnull(pick.kernel);
    return pick.kernel->name;
}

static void expect_pick(int m, int n, int k, pl_gemm_b_layout layout, const pl_gemm_gpu *g, const char *want)
{
    const pl_gemm_problem p = problem(m, n, k, layout);
    const char *got = pick_name(&p, g);
    ck_assert_msg(strcmp(got, want) == 0, "%dx%dx%d %s: picked %s, expected %s", m, n, k, pl_gemm_layout_name(layout),
                  got, want);
}

START_TEST(kernel_table)
{
    const size_t all = pl_gemm_kernel_count();
    /* 11 from naive to the cooperative and ping-pong kernels in clusters; 6 + 4 (_w1) + 2 (deep) + 2 (two warpgroups)
     * split-K, 2 128×192, 3 fitted tiles (192×176, 128×176, 128×224 in fours), 3 decode GEMV, 2 128×224 (alone,
     * pairs), 3 swapped split-K (200 tokens, two deep rings); B K×N: 9 warp-specialized and 11 split-K twins */
    ck_assert_int_eq((int)all, 58);
    ck_assert_ptr_nonnull(pl_gemm_kernel_find("wgmma_ws_192x176x64_s3_c2"));
    ck_assert_ptr_nonnull(pl_gemm_kernel_find(SWAP16));
    ck_assert_ptr_nonnull(pl_gemm_kernel_find("gemv_mma_t16"));
    ck_assert_ptr_null(pl_gemm_kernel_at(all));
    ck_assert_ptr_null(pl_gemm_kernel_find("no_such_kernel"));
    ck_assert_str_eq(pl_gemm_kernel_fallback()->name, "mma_sync_128x128x32_s4");
    ck_assert_int_eq((int)pl_gemm_kernel_index(pl_gemm_fp8_kernel_at(0)), (int)all); /* not a BF16 row */
    ck_assert_int_le((int)all, 64); /* the labs' fallback notes: one bit per kernel in 64 */
    int names_ok = 1, gemv = 0, kn = 0;
    for (size_t i = 0; i < all; i++) {
        const pl_gemm_kernel *k = pl_gemm_kernel_at(i);
        /* every row carries the model's figures: an efficiency in (0, 1], a fused one no higher, CTAs an SM */
        ck_assert_msg(k->model.eff > 0 && k->model.eff <= 1 && k->model.fused_eff > 0 &&
                          k->model.fused_eff <= k->model.eff && k->model.mem_eff > 0 && k->model.resident >= 1,
                      "%s", k->name);
        for (size_t j = 0; j < i; j++)
            names_ok &= strcmp(pl_gemm_kernel_at(j)->name, k->name) != 0;
        ck_assert_int_eq((int)pl_gemm_kernel_index(k), (int)i); /* the labs' per-kernel bit */
        /* the consumer warpgroups' 64 rows each: of A, or swapped of B (N) */
        const int x_rows = (k->flags & PL_GEMM_KERNEL_SWAP_AB) ? k->tile_n : k->tile_m;
        if (k->flags & PL_GEMM_KERNEL_SPLIT_WAVES) {
            /* two consumer warpgroups and the producer warp; the stages that fit 227 KB */
            ck_assert_int_eq(k->cluster_m, 0);
            ck_assert_int_eq(k->threads, 2 * 128 + 32);
            ck_assert_int_eq(x_rows, 2 * PL_SK_ROWS);
            ck_assert_int_eq(k->stages, (232448 - 1024 - 256) / ((k->tile_m + k->tile_n) * PL_SK_BK * 2));
            ck_assert(k->flags & PL_GEMM_KERNEL_SPLIT_K);
        } else if (k->flags & PL_GEMM_KERNEL_SPLIT_DEEP) {
            /* one consumer warpgroup, one CTA an SM: the stages that fit 227 KB, at most 16 */
            ck_assert_int_eq(k->threads, PL_SK_THREADS);
            ck_assert_int_eq(x_rows, PL_SK_ROWS);
            const int fit = (232448 - 1024 - 256) / ((k->tile_m + k->tile_n) * PL_SK_BK * 2);
            ck_assert_int_eq(k->stages, fit > 16 ? 16 : fit);
        } else if (k->flags & PL_GEMM_KERNEL_SPLIT_K) {
            ck_assert_int_eq(k->cluster_m, 0); /* the split is chosen at launch */
            ck_assert_int_eq(k->threads, PL_SK_THREADS);
            ck_assert_int_eq(k->stages, PL_SK_STAGES((k->flags & PL_GEMM_KERNEL_SWAP_AB) ? k->tile_m : k->tile_n));
        }
        if (k->flags & PL_GEMM_KERNEL_B_KN) {
            /* a B K×N row is its N×K twin's configuration and model, read through the other layout of B */
            kn++;
            char twin[96];
            const size_t len = strlen(k->name);
            ck_assert_msg(len > 3 && strcmp(k->name + len - 3, "_kn") == 0, "%s", k->name);
            snprintf(twin, sizeof twin, "%.*s", (int)(len - 3), k->name);
            const pl_gemm_kernel *t = pl_gemm_kernel_find(twin);
            ck_assert_msg(t != NULL && !(t->flags & PL_GEMM_KERNEL_B_KN), "%s has no N×K twin", k->name);
            ck_assert_int_eq(t->flags | PL_GEMM_KERNEL_B_KN, k->flags);
            ck_assert(t->tile_m == k->tile_m && t->tile_n == k->tile_n && t->tile_k == k->tile_k);
            ck_assert(t->stages == k->stages && t->cluster_m == k->cluster_m && t->threads == k->threads);
            ck_assert_int_eq(t->needs.features, k->needs.features);
            ck_assert(memcmp(&t->model, &k->model, sizeof t->model) == 0);
            /* the MN-major panel of B is whole 64-column boxes (swapped: B is X, 64 rows a warpgroup) */
            ck_assert_int_eq(((k->flags & PL_GEMM_KERNEL_SWAP_AB) ? 64 : k->tile_n) % 64, 0);
        }
        if (k->flags & PL_GEMM_KERNEL_SMALL_M) {
            gemv++;
            ck_assert_int_eq(k->needs.min_cc, 80); /* mma.sync: no wgmma, TMA nor clusters */
            ck_assert_int_eq((int)k->needs.features, 0);
        }
    }
    ck_assert(names_ok);
    ck_assert_int_eq(gemv, 3);
    ck_assert_int_eq(kn, 20);

    /* the swapped kernels refuse large M with the reason; the plain split-K ones take it */
    char why[256];
    pl_gemm_problem p = problem(65, 4096, 4096, PL_GEMM_B_NK);
    ck_assert(!pl_gemm_kernel_find(SWAP16)->supports(&p, why, sizeof why));
    ck_assert_msg(strstr(why, "takes M <= 64") != NULL, "%s", why);
    ck_assert(pl_gemm_kernel_find("wgmma_sk_64x128x64")->supports(&p, why, sizeof why));
    p.d = (uint16_t *)(uintptr_t)0x300002; /* bf16 pairs need D 4-byte aligned */
    ck_assert(!pl_gemm_kernel_find("wgmma_sk_64x128x64")->supports(&p, why, sizeof why));
    ck_assert_msg(strstr(why, "4-byte aligned") != NULL, "%s", why);
    /* the decode kernels take M up to their token tile, B N×K, K % 8 == 0, 16-byte aligned A and B, any D */
    const char *gv[] = {"gemv_mma_t8", "gemv_mma_t16", "gemv_mma_t32"};
    for (int i = 0; i < 3; i++) {
        const pl_gemm_kernel *k = pl_gemm_kernel_find(gv[i]);
        const int tokens = 8 << i;
        ck_assert_int_eq(k->tile_m, tokens);
        p = problem(tokens, 4100, 4104, PL_GEMM_B_NK);
        p.d = (uint16_t *)(uintptr_t)0x300002;
        ck_assert_msg(k->supports(&p, why, sizeof why), "%s: %s", gv[i], why);
        p.m = tokens + 1;
        ck_assert(!k->supports(&p, why, sizeof why));
        ck_assert_msg(strstr(why, "takes M <=") != NULL, "%s", why);
        p = problem(1, 4096, 4100, PL_GEMM_B_NK);
        ck_assert(!k->supports(&p, why, sizeof why));
        p = problem(1, 4096, 4096, PL_GEMM_B_KN);
        ck_assert(!k->supports(&p, why, sizeof why));
        p = problem(1, 4096, 4096, PL_GEMM_B_NK);
        p.a = (const uint16_t *)(uintptr_t)0x100008;
        ck_assert(!k->supports(&p, why, sizeof why));
    }
}
END_TEST

/* B K×N: the N×K TMA kernels refuse it with the reason and their _kn twins take it (N % 8 == 0; else only mma_sync);
 * the _kn rows refuse B N×K. Where the model's pick for B N×K has a twin, its pick for B K×N is a _kn row as fast by
 * the model within the tie (the twins' figures are the same; the rows without a twin, such as the _w1 split-K ones,
 * move the tie window), mostly that twin. */
START_TEST(kn_problems)
{
    char why[256];
    pl_gemm_problem p = problem(1001, 4104, 1000, PL_GEMM_B_KN);
    ck_assert(!pl_gemm_kernel_find("wgmma_ws_128x256x64_s4")->supports(&p, why, sizeof why));
    ck_assert_msg(strstr(why, "B N×K") != NULL, "%s", why);
    ck_assert_msg(pl_gemm_kernel_find("wgmma_ws_128x256x64_s4_kn")->supports(&p, why, sizeof why), "%s", why);
    ck_assert(pl_gemm_kernel_fallback()->supports(&p, why, sizeof why));
    p.n = 4100;
    ck_assert(!pl_gemm_kernel_find("wgmma_ws_128x256x64_s4_kn")->supports(&p, why, sizeof why));
    ck_assert_msg(strstr(why, "N % 8 == 0") != NULL, "%s", why);
    ck_assert(!pl_gemm_kernel_find("wgmma_sk_swap_16x64x64_kn")->supports(&p, why, sizeof why));
    p = problem(1001, 4104, 1000, PL_GEMM_B_NK);
    ck_assert(!pl_gemm_kernel_find("wgmma_sk_64x128x64_kn")->supports(&p, why, sizeof why));
    ck_assert_msg(strstr(why, "B K×N only") != NULL, "%s", why);
    expect_pick(8192, 8192, 8192, PL_GEMM_B_KN, &h200, "wgmma_ws_128x256x64_s4_kn");
    expect_pick(8192, 8192, 8192, PL_GEMM_B_KN, &a100, "mma_sync_128x128x32_s4");

    const int ms[] = {1, 7, 16, 33, 64, 77, 128, 200, 333, 1000, 4096, 16384},
              ns[] = {256, 576, 1000, 4096, 14336, 65536}, ks[] = {256, 1032, 4096, 65536};
    int bad = 0, twins = 0, same = 0;
    char first[320] = "";
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
            for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++) {
                const pl_gemm_problem nk = problem(ms[a], ns[b], ks[c], PL_GEMM_B_NK);
                const pl_gemm_problem kn = problem(ms[a], ns[b], ks[c], PL_GEMM_B_KN);
                pl_gemm_pick pn, pk;
                ck_assert(pl_gemm_bf16_pick_from(&nk, &h200, NULL, 0, &pn) == 0);
                ck_assert(pl_gemm_bf16_pick_from(&kn, &h200, NULL, 0, &pk) == 0);
                char twin[96];
                snprintf(twin, sizeof twin, "%s_kn", pn.kernel->name);
                const int has_twin = pl_gemm_kernel_find(twin) != NULL;
                twins += has_twin;
                same += has_twin && strcmp(pk.kernel->name, twin) == 0;
                const int ok = !has_twin || ((pk.kernel->flags & PL_GEMM_KERNEL_B_KN) &&
                                             pk.model_us <= pn.model_us * (1 + PL_GEMM_MODEL_TIE));
                if (!ok && bad++ == 0)
                    snprintf(first, sizeof first, "%dx%dx%d: B N×K %s %.1f us, B K×N %s %.1f us", ms[a], ns[b], ks[c],
                             pn.kernel->name, pn.model_us, pk.kernel->name, pk.model_us);
            }
    ck_assert_msg(bad == 0, "%d B K×N picks off the N×K pick; the first: %s", bad, first);
    printf("B K×N picks: %d of the 288 N×K picks have a twin, %d of them the same twin\n", twins, same);
    ck_assert_int_ge(twins, 150); /* most N×K picks have a twin (not: the GEMVs, _w1, 176- and 224-wide tiles) */
    ck_assert_int_ge(same, twins * 9 / 10);
}
END_TEST

START_TEST(split_rule)
{
    ck_assert_int_eq(pl_gemm_sk_split(64, 64, 132), 4);   /* 264 CTAs (2 an SM) / 64 tiles */
    ck_assert_int_eq(pl_gemm_sk_split(72, 56, 132), 4);   /* 3.67: the nearest (16×4608×3584 swapped) */
    ck_assert_int_eq(pl_gemm_sk_split(128, 64, 132), 2);  /* 264 / 128 */
    ck_assert_int_eq(pl_gemm_sk_split(400, 64, 132), 1);  /* 0.66 rounds to 1 */
    ck_assert_int_eq(pl_gemm_sk_split(2004, 64, 132), 1); /* the tiles alone fill the GPU */
    ck_assert_int_eq(pl_gemm_sk_split(10, 1000, 132), 8); /* the portable cluster size */
    ck_assert_int_eq(pl_gemm_sk_split(1, 8, 132), 2);     /* at least 4 k-blocks per split */
    ck_assert_int_eq(pl_gemm_sk_split(1, 3, 132), 1);
    ck_assert_int_eq(pl_gemm_sk_split(0, 64, 132), 1);
    ck_assert_int_eq(pl_gemm_sk_split(64, 64, 0), 1);
    ck_assert_int_eq(pl_gemm_sk_split_w1(32, 56, 132), 4);  /* 512×512×3584 in 64×128: 132 / 32 */
    ck_assert_int_eq(pl_gemm_sk_split_w1(9, 112, 132), 14); /* 32×576×7168 swapped: 9 tiles */
    ck_assert_int_eq(pl_gemm_sk_split_w1(4, 64, 132), 16);  /* the router 128×8×4096: a non-portable cluster */
    ck_assert_int_eq(pl_gemm_sk_split_w1(200, 64, 132), 1);
    /* by waves (the two-warpgroup tiles): few tiles split up to 8; a last wave nearly empty split to fill it */
    ck_assert_int_eq(pl_gemm_sk_split_waves(16, 56, 132), 8);  /* 512×512×3584 in 128×128: 128 CTAs */
    ck_assert_int_eq(pl_gemm_sk_split_waves(28, 296, 132), 4); /* 128×3584×18944: 112 CTAs */
    ck_assert_int_eq(pl_gemm_sk_split_waves(168, 64, 132), 3); /* 384×14336×4096 in 128×256: 4 waves of thirds */
    ck_assert_int_eq(pl_gemm_sk_split_waves(561, 17, 132), 1); /* 4104²×1032: splitting would not pay */
    ck_assert_int_eq(pl_gemm_sk_split_waves(4, 12, 132), 3);   /* at least 4 k-blocks a split */
    ck_assert_int_eq(pl_gemm_sk_split_waves(0, 64, 132), 1);
    /* the rules' bounds over 20163 (tiles, k-blocks) pairs, judged here and asserted once: a passing ck_assert still
     * sends Check a message, and 180,000 of them took this test past two minutes under ASan (CI, 2026-11-27) */
    long long bad = 0, bad_tiles = 0;
    int bad_kb = 0;
    for (long long tiles = 1; tiles < 3000; tiles += 7)
        for (int kb = 1; kb < 600; kb += 13) {
            const int s = pl_gemm_sk_split(tiles, kb, 132);
            const int w1 = pl_gemm_sk_split_w1(tiles, kb, 132), deep = pl_gemm_sk_split_deep(tiles, kb, 132);
            const int wv = pl_gemm_sk_split_waves(tiles, kb, 132);
            const int ok = s >= 1 && s <= PL_SK_PORTABLE_SPLIT &&
                           (deep >= 1 && deep <= PL_SK_PORTABLE_SPLIT && (deep == 1 || tiles * deep <= 132LL)) &&
                           w1 >= 1 && w1 <= PL_SK_MAX_SPLIT && (w1 == 1 || tiles * w1 <= 132LL) &&
                           (w1 == 1 || kb / w1 >= PL_SK_MIN_KBLOCKS) &&
                           (s == 1 || tiles * s <= 132LL * PL_SK_SPLIT_CTAS_PER_SM + tiles / 2) &&
                           (s == 1 || kb / s >= PL_SK_MIN_KBLOCKS) && wv >= 1 && wv <= PL_SK_PORTABLE_SPLIT &&
                           (wv == 1 || kb / wv >= PL_SK_MIN_KBLOCKS);
            if (!ok && bad++ == 0) {
                bad_tiles = tiles;
                bad_kb = kb;
            }
        }
    ck_assert_msg(bad == 0, "%lld (tiles, k-blocks) pairs out of the rules' bounds; the first: %lld tiles, %d k-blocks",
                  bad, bad_tiles, bad_kb);
}
END_TEST

START_TEST(validated_choices)
{
    expect_pick(8192, 8192, 8192, PL_GEMM_B_NK, &h200, "wgmma_ws_128x256x64_s4");
    expect_pick(8192, 16384, 4096, PL_GEMM_B_NK, &h200, "wgmma_ws_128x256x64_s4");
    /* B K×N: the twin of the N×K pick; with N % 8 != 0, K % 8 != 0 or a misaligned operand only mma_sync takes it */
    expect_pick(8192, 8192, 8192, PL_GEMM_B_KN, &h200, "wgmma_ws_128x256x64_s4_kn");
    expect_pick(8192, 8193, 8192, PL_GEMM_B_KN, &h200, "mma_sync_128x128x32_s4");
    expect_pick(1000, 3000, 65, PL_GEMM_B_NK, &h200, "mma_sync_128x128x32_s4");
    expect_pick(1000, 3000, 65, PL_GEMM_B_KN, &h200, "mma_sync_128x128x32_s4");
    pl_gemm_problem p = problem(4096, 4096, 4096, PL_GEMM_B_NK);
    p.a = (const uint16_t *)(uintptr_t)0x100002;
    ck_assert_str_eq(pick_name(&p, &h200), "mma_sync_128x128x32_s4");
    /* no wgmma before Hopper */
    expect_pick(8192, 8192, 8192, PL_GEMM_B_NK, &a100, "mma_sync_128x128x32_s4");
    /* decode before Hopper: the mma.sync GEMV streams the weight, where 128×128 tiles would leave most SMs idle */
    expect_pick(16, 4096, 4096, PL_GEMM_B_NK, &a100, "gemv_mma_t16");
    /* a fused epilogue goes to the kernel whose epilogue warps take it off the consumers */
    p = problem(8192, 16384, 4096, PL_GEMM_B_NK);
    p.epi.gelu = 1;
    ck_assert_str_eq(pick_name(&p, &h200), "wgmma_ws_128x256x64_s3");

    /* never a teaching rung, always one that takes the problem: the 384 problems judged here
     * and asserted once (a passing ck_assert still sends Check a message, as in split_rule) */
    const int ms[] = {1, 16, 64, 128, 256, 1000, 4096, 8192}, ns[] = {8, 256, 576, 4096, 28672, 128256},
              ks[] = {64, 520, 4096, 16384};
    int bad = 0;
    char first[256] = "";
    for (size_t a = 0; a < 8; a++)
        for (size_t b = 0; b < 6; b++)
            for (size_t c = 0; c < 4; c++)
                for (int l = 0; l < 2; l++) {
                    p = problem(ms[a], ns[b], ks[c], (pl_gemm_b_layout)l);
                    pl_gemm_pick pick;
                    char why[256];
                    const char *wrong = NULL;
                    if (pl_gemm_bf16_pick_from(&p, &h200, NULL, 0, &pick) != 0)
                        wrong = "no pick";
                    else if (pick.kernel->flags & PL_GEMM_KERNEL_TEACHING)
                        wrong = "a teaching kernel";
                    else if (!pick.kernel->supports(&p, why, sizeof why))
                        wrong = "a kernel that does not take the problem";
                    else if (pick.from_table || !isfinite(pick.model_us) || pick.model_us <= 0)
                        wrong = "no modelled time";
                    if (wrong && bad++ == 0)
                        snprintf(first, sizeof first, "%dx%dx%d (B layout %d): %s", ms[a], ns[b], ks[c], l, wrong);
                }
    ck_assert_msg(bad == 0, "%d of 384 problems picked wrongly; the first: %s", bad, first);
    /* a bad problem has no pick, and says why */
    p = problem(0, 16, 16, PL_GEMM_B_NK);
    pl_gemm_pick pick;
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, NULL, 0, &pick) != 0);
    ck_assert_msg(strstr(pick.why, "at least 1") != NULL, "%s", pick.why);
}
END_TEST

START_TEST(fitted_and_split_choices)
{
    /* decode: the streaming GEMV whose token tile holds M (memory-bound: all of them stream B once; the one that
     * pads M the least) */
    expect_pick(16, 4096, 4096, PL_GEMM_B_NK, &h200, "gemv_mma_t16");
    expect_pick(1, 6144, 4096, PL_GEMM_B_NK, &h200, "gemv_mma_t8");
    /* a long K: the swapped split-K kernel, 128 tiles × 1 (one CTA per SM) */
    expect_pick(32, 4096, 14336, PL_GEMM_B_NK, &h200, "wgmma_sk_swap_32x64x64_w1");
    /* M = 64 fills the plain kernel's 64 rows: no padding either way, and its 64×128 tiles load fewer bytes (32
     * tiles: a split of 4 by the one-CTA-per-SM rule) */
    expect_pick(64, 4096, 14336, PL_GEMM_B_NK, &h200, "wgmma_sk_64x128x64_w1");
    /* small prefill: 32 tiles of 128×256 split by 4 fill the GPU with the cooperative kernels' tile (the model's
     * efficiency for it is predicted, not measured; the sweep's table overrides it where measured) */
    expect_pick(256, 4096, 4096, PL_GEMM_B_NK, &h200, "wgmma_sk_128x256x64");
    /* large problems stay on the persistent kernel; decode with B K×N (no K×N GEMV) on the swapped split-K kernel */
    expect_pick(8192, 8192, 8192, PL_GEMM_B_NK, &h200, "wgmma_ws_128x256x64_s4");
    expect_pick(16, 4096, 4096, PL_GEMM_B_KN, &h200, "wgmma_sk_swap_16x64x64_kn");
    /* without clusters the split-K kernels cannot run; past M = 64 neither the GEMV: the 128-row tiles */
    const pl_gemm_gpu no_clusters = {90, 132, 0, 0, 0, 0};
    expect_pick(100, 4096, 4096, PL_GEMM_B_NK, &no_clusters, "wgmma_ws_128x128x64_s6");
    /* the model: memory-bound decode is faster at the H200's bandwidth; compute grows with K */
    const pl_gemm_kernel *k = pl_gemm_kernel_find(SWAP16);
    pl_gemm_problem p = problem(16, 4096, 4096, PL_GEMM_B_NK), q = problem(16, 4096, 8192, PL_GEMM_B_NK);
    pl_gemm_gpu fast = h200;
    fast.hbm_gbps = 4200;
    ck_assert(pl_gemm_model_us(k, &p, &fast) < pl_gemm_model_us(k, &p, &h200));
    ck_assert(pl_gemm_model_us(k, &q, &h200) > pl_gemm_model_us(k, &p, &h200));
    q = problem(4096, 4096, 4096, PL_GEMM_B_NK); /* M over 4 tiles: the swapped kernel does not take it */
    ck_assert(isinf(pl_gemm_model_us(k, &q, &h200)));
}
END_TEST

/* The fitted tiles: clusters of four fill 10/11 of the SMs, and a fused D through registers costs the
 * 176-wide and 192-row tiles more than the 128×256 tile whose epilogue warps take it. */
START_TEST(fitted_tiles_model)
{
    const pl_gemm_kernel *c4 = pl_gemm_kernel_find("wgmma_ws_128x224x64_s4_c4");
    const pl_gemm_kernel *t176 = pl_gemm_kernel_find("wgmma_ws_192x176x64_s3_c2");
    const pl_gemm_kernel *t256 = pl_gemm_kernel_find("wgmma_ws_128x256x64_s4");
    ck_assert(c4 && t176 && t256);
    /* 8 × 14 = 112 tiles fit the 120 SMs four-CTA clusters fill at once; 8 × 16 = 128 take a second round */
    const pl_gemm_problem one = problem(1024, 14 * 224, 8192, PL_GEMM_B_NK);
    const pl_gemm_problem two = problem(1024, 16 * 224, 8192, PL_GEMM_B_NK);
    const double t1 = pl_gemm_model_us(c4, &one, &h200), t2 = pl_gemm_model_us(c4, &two, &h200);
    ck_assert_msg(t2 > 1.6 * t1, "112 tiles %.1f us, 128 tiles %.1f us", t1, t2);
    /* a fused epilogue: 0.75× through registers, 0.90× through TMA */
    pl_gemm_problem plain = problem(4104, 4104, 1032, PL_GEMM_B_NK), fused = plain;
    fused.epi.gelu = 1;
    const double r176 = pl_gemm_model_us(t176, &fused, &h200) / pl_gemm_model_us(t176, &plain, &h200);
    const double r256 = pl_gemm_model_us(t256, &fused, &h200) / pl_gemm_model_us(t256, &plain, &h200);
    ck_assert_msg(r176 > r256 && r256 > 1.0, "fused / plain: 192x176 %.3f, 128x256 %.3f", r176, r256);
}
END_TEST

/* TMA tensor maps: a bad argument is cudaErrorInvalidValue before the driver is asked, on any machine */
START_TEST(tensor_map_limits)
{
    CUtensorMap m;
    const void *base = (const void *)(uintptr_t)0x100000;
    ck_assert_int_eq(pl_tensor_map_bf16(&m, base, 64, 64, 64, 65), cudaErrorInvalidValue); /* 130-byte swizzled rows */
    ck_assert_int_eq(pl_tensor_map_bf16(&m, base, 64, 64, 0, 64), cudaErrorInvalidValue);
    ck_assert_int_eq(pl_tensor_map_bf16(&m, base, 64, 64, 257, 64), cudaErrorInvalidValue);
    ck_assert_int_eq(pl_tensor_map_bf16(&m, (const void *)(uintptr_t)0x100008, 64, 64, 64, 64), cudaErrorInvalidValue);
    ck_assert_int_eq(pl_tensor_map_bf16(&m, base, 64, 60, 64, 64), cudaErrorInvalidValue); /* 120-byte row pitch */
    ck_assert_int_eq(pl_tensor_map_bf16_dense(&m, base, 64, 64, 64, 44), cudaErrorInvalidValue); /* 88 bytes */
    ck_assert_int_eq(pl_tensor_map_bf16_dense(&m, base, 64, 512, 64, 264), cudaErrorInvalidValue);
    /* an operand stored K × rows (B K×N): its rows are the stored matrix's columns */
    ck_assert_int_eq(pl_tensor_map_operand_bf16(&m, base, 60, 64, 64, 1), cudaErrorInvalidValue);
    ck_assert_int_eq(pl_tensor_map_operand_bf16(&m, base, 64, 60, 64, 0), cudaErrorInvalidValue);
}
END_TEST

/* The grouped GEMM's problem checks, on any machine: the cluster field (0 the measured choice, 1, 2) */
START_TEST(grouped_problem_checks)
{
    char why[200];
    const void *dev = (const void *)(uintptr_t)0x100000;
    const int *offsets = (const int *)dev;
    pl_grouped_gemm_problem p = {.groups = 8,
                                 .n = 14336,
                                 .k = 4096,
                                 .rows = 16384,
                                 .offsets = offsets,
                                 .a = dev,
                                 .b = dev,
                                 .d = (uint16_t *)(uintptr_t)0x200000};
    for (int c = 0; c <= 2; c++) {
        p.cluster = c;
        ck_assert_msg(pl_grouped_gemm_supports(&p, 0, why, sizeof why), "cluster %d: %s", c, why);
    }
    /* the measured choice: pairs for bf16 experts of 1024 rows or more on average, never for fp8 */
    p.cluster = 0;
    ck_assert_int_eq(pl_grouped_gemm_cluster_of(&p, 0), 2); /* E = 8, 16384 rows */
    ck_assert_int_eq(pl_grouped_gemm_cluster_of(&p, 1), 1);
    p.groups = 64;
    ck_assert_int_eq(pl_grouped_gemm_cluster_of(&p, 0), 1); /* E = 64: 256 rows an expert */
    p.groups = 16;
    ck_assert_int_eq(pl_grouped_gemm_cluster_of(&p, 0), 2); /* 1024 rows an expert: the edge */
    p.rows = 16383;
    ck_assert_int_eq(pl_grouped_gemm_cluster_of(&p, 0), 1);
    p.cluster = 1;
    ck_assert_int_eq(pl_grouped_gemm_cluster_of(&p, 0), 1);
    p.cluster = 3;
    ck_assert(!pl_grouped_gemm_supports(&p, 0, why, sizeof why));
    ck_assert_msg(strstr(why, "cluster") != NULL, "%s", why);
    ck_assert_int_eq(pl_grouped_gemm_bf16(&p, 0), cudaErrorInvalidValue); /* refused before any launch */
    p.cluster = -1;
    ck_assert(!pl_grouped_gemm_supports(&p, 1, why, sizeof why));
}
END_TEST

START_TEST(table_precedence)
{
    const pl_gemm_heuristic_entry t[] = {
        {"nk", 0, 16, 4096, 4096, "wgmma_ws_128x256x64_s4", 0},
        {"nk", 0, 16, 4096, 8192, "wgmma_pp_128x128x64_s5", 0},
        {"kn", 0, 64, 4096, 4096, "wgmma_ws_128x128x64_s6", 0},     /* cannot take B K×N: ignored */
        {"nk", 114, 128, 4096, 4096, "wgmma_tma_128x128x64_s3", 0}, /* another GPU's (114 SMs) */
        {"nk", 0, 1024, 1024, 1024, "no_such_kernel", 0},
        {"nk", 0, 2048, 2048, 2048, SWAP16, 0},
    };
    const size_t n = sizeof t / sizeof t[0];
    pl_gemm_pick pick;
    pl_gemm_problem p = problem(16, 4096, 4096, PL_GEMM_B_NK);
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, t, n, &pick) == 0);
    ck_assert_str_eq(pick.kernel->name, "wgmma_ws_128x256x64_s4");
    ck_assert(pick.from_table && isnan(pick.model_us));
    ck_assert_msg(strstr(pick.why, "16x4096x4096") != NULL, "%s", pick.why);
    p = problem(20, 4096, 5000, PL_GEMM_B_NK); /* within √2 of both: the nearer (K 4096) decides */
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, t, n, &pick) == 0);
    ck_assert_str_eq(pick.kernel->name, "wgmma_ws_128x256x64_s4");
    p = problem(16, 4096, 7000, PL_GEMM_B_NK);
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, t, n, &pick) == 0);
    ck_assert_str_eq(pick.kernel->name, "wgmma_pp_128x128x64_s5");
    p = problem(32, 4096, 4096, PL_GEMM_B_NK); /* M twice the entry's: beyond √2, the model decides */
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, t, n, &pick) == 0);
    ck_assert(!pick.from_table);
    p = problem(64, 4096, 4096, PL_GEMM_B_KN);
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, t, n, &pick) == 0);
    ck_assert(!pick.from_table && (pick.kernel->flags & PL_GEMM_KERNEL_B_KN));
    p = problem(128, 4096, 4096, PL_GEMM_B_NK);
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, t, n, &pick) == 0);
    ck_assert(!pick.from_table); /* the 114-SM entry is not this GPU's */
    const pl_gemm_gpu other = {90, 114, 1, 0, 0, 0};
    ck_assert(pl_gemm_bf16_pick_from(&p, &other, t, n, &pick) == 0);
    ck_assert(pick.from_table && strcmp(pick.kernel->name, "wgmma_tma_128x128x64_s3") == 0);
    p = problem(1024, 1024, 1024, PL_GEMM_B_NK);
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, t, n, &pick) == 0);
    ck_assert(!pick.from_table); /* an unknown kernel name */
    /* an entry whose kernel refuses the problem (the swapped kernel takes M <= 64) leaves it to the model */
    p = problem(2048, 2048, 2048, PL_GEMM_B_NK);
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, t, n, &pick) == 0);
    ck_assert(!pick.from_table);
    const pl_gemm_heuristic_entry u[] = {{"nk", 0, 16, 4096, 4096, SWAP16, 0}};
    p = problem(16, 4096, 4096, PL_GEMM_B_NK);
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, u, 1, &pick) == 0);
    ck_assert(pick.from_table && strcmp(pick.kernel->name, SWAP16) == 0);
    /* an entry measured on a GPU of this L2 size comes before one of any L2 size, even a nearer one; on a GPU of
     * another L2 size (or one that does not say), the one of any L2 size decides */
    const pl_gemm_heuristic_entry w[] = {{"nk", 132, 16, 4096, 4096, "wgmma_ws_128x256x64_s4", 0},
                                         {"nk", 132, 20, 4096, 4096, SWAP16, 60},
                                         {"nk", 132, 16, 4096, 4096, "wgmma_pp_128x128x64_s5", 50}};
    /* the L2 sizes the devices report (bytes) as the table keys them: H200 60 MiB, H100 SXM 50 MiB, unknown 0 */
    ck_assert_int_eq(pl_gemm_l2_mib(62914560), 60);
    ck_assert_int_eq(pl_gemm_l2_mib(52428800), 50);
    ck_assert_int_eq(pl_gemm_l2_mib(0), 0);
    pl_gemm_gpu g60 = h200, g40 = h200;
    g60.l2_mib = 60;
    g40.l2_mib = 40;
    ck_assert(pl_gemm_bf16_pick_from(&p, &g60, w, 3, &pick) == 0);
    ck_assert(pick.from_table && strcmp(pick.kernel->name, SWAP16) == 0);
    ck_assert_msg(strstr(pick.why, "L2 size") != NULL, "%s", pick.why);
    ck_assert(pl_gemm_bf16_pick_from(&p, &g40, w, 3, &pick) == 0);
    ck_assert(pick.from_table && strcmp(pick.kernel->name, "wgmma_ws_128x256x64_s4") == 0);
    ck_assert(pl_gemm_bf16_pick_from(&p, &h200, w, 3, &pick) == 0);
    ck_assert(pick.from_table && strcmp(pick.kernel->name, "wgmma_ws_128x256x64_s4") == 0);
    /* this L2 size's entry naming a kernel that refuses the problem: the one of any L2 size decides */
    const pl_gemm_heuristic_entry v[] = {{"nk", 132, 16, 4096, 4096, "wgmma_ws_128x256x64_s4", 0},
                                         {"nk", 132, 16, 4096, 4096, "no_such_kernel", 60}};
    ck_assert(pl_gemm_bf16_pick_from(&p, &g60, v, 2, &pick) == 0);
    ck_assert(pick.from_table && strcmp(pick.kernel->name, "wgmma_ws_128x256x64_s4") == 0);
    /* nor on a GPU it cannot run on (no clusters): the model decides */
    const pl_gemm_gpu no_clusters = {90, 132, 0, 0, 0, 0};
    ck_assert(pl_gemm_bf16_pick_from(&p, &no_clusters, u, 1, &pick) == 0);
    ck_assert(!pick.from_table);
}
END_TEST

/* The committed (generated) table names kernels of the kernel table and layouts that exist. */
START_TEST(committed_table_is_valid)
{
    size_t n;
    const pl_gemm_heuristic_entry *t = pl_gemm_heuristic_table(&n);
    ck_assert_ptr_nonnull(t);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(t[i].layout && pl_gemm_layout_from_name(t[i].layout) >= 0, "entry %zu: layout", i);
        ck_assert_msg(t[i].m >= 1 && t[i].n >= 1 && t[i].k >= 1, "entry %zu: sizes", i);
        ck_assert_msg(pl_gemm_kernel_find(t[i].kernel) != NULL, "entry %zu: unknown kernel %s", i, t[i].kernel);
    }
    ck_assert_ptr_null(t[n].layout); /* the terminator */
    /* on the GPU it was measured on, each entry decides its own shape */
    for (size_t i = 0; i < n; i++) {
        const pl_gemm_gpu g = {90, t[i].sms ? t[i].sms : 132, 1, 0, 0, t[i].l2_mib};
        const pl_gemm_problem p =
            problem(t[i].m, t[i].n, t[i].k, (pl_gemm_b_layout)pl_gemm_layout_from_name(t[i].layout));
        pl_gemm_pick pick;
        ck_assert(pl_gemm_bf16_pick(&p, &g, &pick) == 0);
        ck_assert_msg(pick.from_table && strcmp(pick.kernel->name, t[i].kernel) == 0, "entry %zu (%dx%dx%d): %s", i,
                      t[i].m, t[i].n, t[i].k, pick.why);
    }
}
END_TEST

/* The committed points name kernels of the kernel table, layouts that exist, a GPU, and positive times. */
START_TEST(committed_points_are_valid)
{
    size_t n;
    const pl_gemm_point *q = pl_gemm_heuristic_points(&n);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_gt(n, 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(q[i].layout && pl_gemm_layout_from_name(q[i].layout) >= 0, "point %zu: layout", i);
        ck_assert_msg(q[i].m >= 1 && q[i].n >= 1 && q[i].k >= 1 && q[i].sms > 0 && q[i].us > 0, "point %zu", i);
        ck_assert_msg(pl_gemm_kernel_find(q[i].kernel) != NULL, "point %zu: unknown kernel %s", i, q[i].kernel);
    }
    ck_assert_ptr_null(q[n].layout); /* the terminator */
}
END_TEST

/* A kernel's only point sets its time there exactly, scales the model near it, fades with distance, and counts only
 * on a GPU of its SM count and L2 size. */
START_TEST(points_scale_the_model)
{
    const pl_gemm_gpu g = {90, 132, 1, 0, 0, 60}, other = {90, 132, 1, 0, 0, 50};
    const pl_gemm_kernel *k = pl_gemm_kernel_find("wgmma_ws_128x256x64_s4");
    ck_assert_ptr_nonnull(k);
    const pl_gemm_problem at = problem(4096, 4096, 4096, PL_GEMM_B_NK);
    const double model = pl_gemm_model_us(k, &at, &g);
    const pl_gemm_point pt = {"nk", 132, 60, 4096, 4096, 4096, "wgmma_ws_128x256x64_s4", 2.0 * model};
    ck_assert_double_eq_tol(pl_gemm_model_measured_us(k, &at, &g, &pt, 1), 2.0 * model, 1e-9 * model);
    /* another GPU, another kernel, another layout: the model alone */
    ck_assert_double_eq_tol(pl_gemm_model_measured_us(k, &at, &other, &pt, 1), model, 1e-9 * model);
    const pl_gemm_kernel *k2 = pl_gemm_kernel_find("wgmma_ws_128x128x64_s6");
    ck_assert_ptr_nonnull(k2);
    ck_assert_double_eq_tol(pl_gemm_model_measured_us(k2, &at, &g, &pt, 1), pl_gemm_model_us(k2, &at, &g), 1e-6);
    /* a point alone scales the model by its error wherever it is; two points weigh by distance */
    const pl_gemm_problem near = problem(2048, 4096, 4096, PL_GEMM_B_NK);
    const double near_model = pl_gemm_model_us(k, &near, &g);
    ck_assert_double_eq_tol(pl_gemm_model_measured_us(k, &near, &g, &pt, 1), 2.0 * near_model, 1e-9 * near_model);
    const pl_gemm_problem far_shape = problem(256, 4096, 4096, PL_GEMM_B_NK);
    const pl_gemm_point two[2] = {
        pt, {"nk", 132, 60, 256, 4096, 4096, "wgmma_ws_128x256x64_s4", pl_gemm_model_us(k, &far_shape, &g)}};
    const double mid = pl_gemm_model_measured_us(k, &near, &g, two, 2) / near_model;
    ck_assert_msg(mid > 1.0 && mid < 2.0, "between the points' errors: %.3f", mid);
    ck_assert_msg(mid > sqrt(2.0), "the nearer point (1 octave) weighs more than the farther (3): %.3f", mid);
}
END_TEST

/* The measured points generalize: each measured shape of the committed points, left out in turn, is picked with the
 * others' points (and no table); the pick's measured time against the fastest measured configuration there, as a
 * geometric mean over each GPU's shapes, beats the model alone's by 0.05, and reaches 0.94 (H200, 134 shapes with a
 * figure: 0.945 against 0.870; its 80 random shapes alone 0.932 against 0.837: docs/gemm.md). */
START_TEST(points_generalize_to_shapes_left_out)
{
    size_t n;
    const pl_gemm_point *q = pl_gemm_heuristic_points(&n);
    pl_gemm_point *rest = malloc(n * sizeof *rest);
    ck_assert_ptr_nonnull(rest);
    /* per GPU (L2 size): the H200's 60 MiB, the H100 SXM's 50 */
    enum { GPUS = 2 };
    const int l2_of[GPUS] = {60, 50};
    double log_model[GPUS] = {0}, log_points[GPUS] = {0};
    int shapes[GPUS] = {0}, within_model[GPUS] = {0}, within_points[GPUS] = {0};
    for (size_t i = 0; i < n; i++) {
        int first = 1; /* each (GPU, layout, shape) once: at its first point */
        for (size_t j = 0; j < i && first; j++)
            first = !(q[j].sms == q[i].sms && q[j].l2_mib == q[i].l2_mib && strcmp(q[j].layout, q[i].layout) == 0 &&
                      q[j].m == q[i].m && q[j].n == q[i].n && q[j].k == q[i].k);
        if (!first)
            continue;
        size_t kept = 0;
        double best = INFINITY;
        for (size_t j = 0; j < n; j++) {
            const int same = q[j].sms == q[i].sms && q[j].l2_mib == q[i].l2_mib &&
                             strcmp(q[j].layout, q[i].layout) == 0 && q[j].m == q[i].m && q[j].n == q[i].n &&
                             q[j].k == q[i].k;
            if (same)
                best = q[j].us < best ? q[j].us : best;
            else
                rest[kept++] = q[j];
        }
        const pl_gemm_gpu g = {90, q[i].sms, 1, 0, 0, q[i].l2_mib};
        const pl_gemm_problem p =
            problem(q[i].m, q[i].n, q[i].k, (pl_gemm_b_layout)pl_gemm_layout_from_name(q[i].layout));
        pl_gemm_pick alone, scaled;
        ck_assert(pl_gemm_bf16_pick_from(&p, &g, NULL, 0, &alone) == 0);
        ck_assert(pl_gemm_bf16_pick_measured(&p, &g, NULL, 0, rest, kept, &scaled) == 0);
        double t_alone = NAN, t_scaled = NAN;
        for (size_t j = 0; j < n; j++)
            if (q[j].sms == q[i].sms && q[j].l2_mib == q[i].l2_mib && strcmp(q[j].layout, q[i].layout) == 0 &&
                q[j].m == q[i].m && q[j].n == q[i].n && q[j].k == q[i].k) {
                t_alone = strcmp(q[j].kernel, alone.kernel->name) == 0 ? q[j].us : t_alone;
                t_scaled = strcmp(q[j].kernel, scaled.kernel->name) == 0 ? q[j].us : t_scaled;
            }
        if (isnan(t_alone) || isnan(t_scaled))
            continue; /* a pick that shape's sweep did not time: no figure */
        const int u = q[i].l2_mib == l2_of[0] ? 0 : 1;
        ck_assert_msg(q[i].l2_mib == l2_of[u], "a point of a GPU this test does not know (L2 %d MiB)", q[i].l2_mib);
        shapes[u]++;
        log_model[u] += log(best / t_alone);
        log_points[u] += log(best / t_scaled);
        within_model[u] += best / t_alone >= 1 / 1.03;
        within_points[u] += best / t_scaled >= 1 / 1.03;
    }
    free(rest);
    for (int u = 0; u < GPUS; u++) {
        ck_assert_int_gt(shapes[u], 20);
        const double gm_model = exp(log_model[u] / shapes[u]), gm_points = exp(log_points[u] / shapes[u]);
        printf("points of the %d-MiB-L2 GPU left out in turn: %d shapes; the fastest over the pick, geometric mean: "
               "model alone %.3f (%d within 3%%), scaled by the other shapes' points %.3f (%d within 3%%)\n",
               l2_of[u], shapes[u], gm_model, within_model[u], gm_points, within_points[u]);
        ck_assert_msg(gm_points >= gm_model + 0.05 && gm_points >= 0.94, "L2 %d MiB: scaled %.3f, model alone %.3f",
                      l2_of[u], gm_points, gm_model);
    }
}
END_TEST

static pl_gemm_fp8_problem fp8_problem(int m, int n, int k, pl_fp8_scaling scaling, int promote)
{
    pl_gemm_fp8_problem q;
    memset(&q, 0, sizeof q);
    q.m = m, q.n = n, q.k = k, q.scaling = scaling, q.promote = promote;
    q.a = (const uint8_t *)(uintptr_t)0x100000;
    q.b = (const uint8_t *)(uintptr_t)0x200000;
    q.d = (uint16_t *)(uintptr_t)0x300000;
    static const float scales[4] __attribute__((aligned(16))) = {1, 1, 1, 1};
    if (scaling == PL_FP8_SCALING_BLOCK)
        q.scale_a = q.scale_b = scales;
    return q;
}

static const char *fp8_pick(int m, int n, int k, pl_fp8_scaling scaling, int promote, const pl_gemm_gpu *g)
{
    const pl_gemm_fp8_problem q = fp8_problem(m, n, k, scaling, promote);
    pl_gemm_pick pick;
    ck_assert_msg(pl_gemm_fp8_pick(&q, g, &pick) == 0, "no FP8 pick for %dx%dx%d: %s", m, n, k, pick.why);
    return pick.kernel->name;
}

/* The FP8 pick chooses what the measured sweep found fastest (tensor scaling, H100 SXM, 2026-11-27, df4439a:
 * docs/perf/gemm.md, "Other tile widths"), where the winner was clear by more than 1%: 128×192 at the large shapes,
 * 128×176 where 192-wide columns leave a short last round, the two-accumulator 128×128 at 2048³. */
START_TEST(fp8_pick_follows_the_measured_winners)
{
    static const struct {
        int m, n, k;
        const char *want;
    } cases[] = {
        {8192, 8192, 8192, "fp8_ws_128x192x128_s4"},    {4096, 4096, 4096, "fp8_ws_128x176x128_s5"},
        {2048, 2048, 2048, "fp8_ws_128x128x128_s6_2p"}, {4096, 14336, 4096, "fp8_ws_128x192x128_s4"},
        {8192, 4096, 14336, "fp8_ws_128x192x128_s4"},   {6144, 6144, 6144, "fp8_ws_128x192x128_s4"},
        {2048, 8192, 8192, "fp8_ws_128x176x128_s5"},
    };
    const pl_gemm_gpu h100 = {90, 132, 1, 0, 0, 50};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = fp8_pick(cases[i].m, cases[i].n, cases[i].k, PL_FP8_SCALING_TENSOR, 0, &h100);
        ck_assert_msg(strcmp(got, cases[i].want) == 0, "%dx%dx%d: picked %s, measured fastest %s", cases[i].m,
                      cases[i].n, cases[i].k, got, cases[i].want);
    }
    /* block scaling: never the tensor-only 128×176; promotion every 512 K: only the 128×192 kernels run it, and the
     * less accurate row is never picked for itself */
    ck_assert_str_ne(fp8_pick(4096, 4096, 4096, PL_FP8_SCALING_BLOCK, 0, &h100), "fp8_ws_128x176x128_s5");
    ck_assert_str_eq(fp8_pick(2048, 2048, 2048, PL_FP8_SCALING_TENSOR, 4, &h100), "fp8_ws_128x192x128_s4");
    ck_assert_str_ne(fp8_pick(8192, 8192, 8192, PL_FP8_SCALING_TENSOR, 0, &h100), "fp8_ws_128x192x128_s4_p4");
    /* refusals: K not a multiple of 16; a GPU without wgmma */
    const pl_gemm_fp8_problem bad = fp8_problem(256, 256, 200, PL_FP8_SCALING_TENSOR, 0);
    pl_gemm_pick pick;
    ck_assert_int_eq(pl_gemm_fp8_pick(&bad, &h100, &pick), -1);
    ck_assert_msg(strlen(pick.why) > 0, "a refusal says why");
    const pl_gemm_fp8_problem good = fp8_problem(256, 256, 256, PL_FP8_SCALING_TENSOR, 0);
    ck_assert_int_eq(pl_gemm_fp8_pick(&good, &a100, &pick), -1);
}
END_TEST

/* At decode sizes the FP8 pick goes to the swapped split-K kernels with no opt-in (the model alone, predicted rows):
 * the 128-row kernels give the Llama-3-8B layer's QKV, O and down 22-48 CTAs at M = 64, the split-K ones 192-288, so
 * B streams at the HBM rate. Both scalings, promotion every 128 K as the engine asks; one token too. Past 4 token
 * tiles the decode rows refuse. */
START_TEST(fp8_pick_goes_to_split_k_at_decode)
{
    static const int shapes[][2] = {{6144, 4096}, {4096, 4096}, {4096, 14336}, {28672, 4096}};
    for (int sc = 0; sc < 2; sc++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const int n = shapes[i][0], k = shapes[i][1];
            const char *one = fp8_pick(1, n, k, (pl_fp8_scaling)sc, 1, &h200);
            ck_assert_msg(strncmp(one, "fp8_sk_swap_16x", 15) == 0, "1x%dx%d: picked %s", n, k, one);
            const char *m64 = fp8_pick(64, n, k, (pl_fp8_scaling)sc, 1, &h200);
            if (n < 28672) /* gate/up fills the GPU with either family: the model's tie */
                ck_assert_msg(strncmp(m64, "fp8_sk_swap_", 12) == 0, "64x%dx%d: picked %s", n, k, m64);
            ck_assert_msg(strncmp(fp8_pick(512, n, k, (pl_fp8_scaling)sc, 1, &h200), "fp8_ws_", 7) == 0,
                          "512x%dx%d: a decode row past its 4 token tiles", n, k);
        }
    /* the decode rows never run promotion every 512 K */
    ck_assert_msg(strncmp(fp8_pick(64, 4096, 4096, PL_FP8_SCALING_TENSOR, 4, &h200), "fp8_ws_128x192", 14) == 0,
                  "promote = 4 is the 128×192 kernels' only");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_heuristic");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 60); /* room for ASan on a loaded 2-core machine; a hang is a failure too */
    tcase_add_test(tc, kernel_table);
    tcase_add_test(tc, kn_problems);
    tcase_add_test(tc, split_rule);
    tcase_add_test(tc, validated_choices);
    tcase_add_test(tc, fitted_and_split_choices);
    tcase_add_test(tc, fitted_tiles_model);
    tcase_add_test(tc, tensor_map_limits);
    tcase_add_test(tc, grouped_problem_checks);
    tcase_add_test(tc, table_precedence);
    tcase_add_test(tc, committed_table_is_valid);
    tcase_add_test(tc, committed_points_are_valid);
    tcase_add_test(tc, points_scale_the_model);
    tcase_add_test(tc, points_generalize_to_shapes_left_out);
    tcase_add_test(tc, fp8_pick_follows_the_measured_winners);
    tcase_add_test(tc, fp8_pick_goes_to_split_k_at_decode);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
