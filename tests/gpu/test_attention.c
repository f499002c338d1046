/* On a GPU: perflab verify of attention:flash_fwd, attention:flash_bwd and attention:decode_paged on odd shapes —
 * sequence lengths 1, 77, 129, 333, 1000, 2049 and 4097 (no multiple of any tile), causal and not, GQA groups of 1 to
 * 8 (3 included, which the decode kernel pads), batches of 1 and 3, both layouts, every head dimension, both
 * reference paths (float64 host, unfused fp32 on the device), the backward's --deterministic run twice to the same
 * bits, page sizes 8, 16, 24, 40 and 64 with mixed lengths; for the balanced decode kernels, a pair cut among every
 * CTA, fewer tiles than CTAs, a batch over one scan block, kv-head blocks of 5 and 6; for the FP8 kernels, rows
 * whose scales span 2^16 (--row-spread). attention:mla_decode (every
 * variant against its float64 host reference): one cached token, lengths no multiple of the 32-token tile or the
 * 64-token page, batches of 1 and 3, head counts that fill no block of 16/32/64 rows (1, 20, 100), pages of 16, 48
 * (not a power of two) and 64, one-page chunks (many splits merged) and one chunk a sequence. Exits 77 with the
 * reason without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

static void verify_one(const char *tag, const char *target, const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "verify --targets %s --timeout-s 240 --target-extra-arg '%s=%s'", target, target, args);
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load(tag, cmd, &run, &r);
    ck_assert_msg(code == 0, "%s %s: exit %d\n%s%s", target, args, code, r.out, r.err);
    ck_assert_int_eq(pl_test_expect_all_ok(&run, 0), 1);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}

/* one row per case: every variant of the target against the reference (a loop test each, so that one failure
 * does not hide the others) */
static const char *const fwd_cases[] = {
    "--batch 2 --heads 4 --kv-heads 2 --seq 1 --head-dim 128 --causal true --layout bhsd",
    "--batch 3 --heads 6 --kv-heads 2 --seq 77 --head-dim 64 --layout bshd",
    "--batch 2 --heads 8 --kv-heads 2 --seq 77 --head-dim 128 --causal true --layout bhsd --scale 0.2",
    "--batch 2 --heads 2 --kv-heads 1 --seq 129 --head-dim 64 --causal true --layout bshd",
    "--batch 1 --heads 4 --kv-heads 4 --seq 1000 --head-dim 64 --causal true --layout bhsd",
    "--batch 1 --heads 4 --kv-heads 1 --seq 1000 --head-dim 128 --layout bshd",
    "--batch 1 --heads 2 --kv-heads 1 --seq 4097 --head-dim 128 --causal true --layout bshd",
    "--batch 1 --heads 2 --kv-heads 2 --seq 4097 --head-dim 64 --layout bhsd",
    /* head_dim 256 (flash_wgmma's 80-key tiles, flash_mma's 32-key tiles): lengths no multiple of 80, 128 or 32
     * (160 is two whole 80-key tiles and one and a quarter 128-query tiles), GQA groups of 4, batches 1 and 3, both
     * layouts and schedules; the float64 host reference up to 128 Mi multiply-adds (the first four), then the fp32
     * unfused one */
    "--batch 2 --heads 4 --kv-heads 1 --seq 1 --head-dim 256 --causal true --layout bshd",
    "--batch 3 --heads 8 --kv-heads 2 --seq 77 --head-dim 256 --layout bshd",
    "--batch 3 --heads 4 --kv-heads 1 --seq 160 --head-dim 256 --causal true --layout bhsd --wgmma-schedule pingpong",
    "--batch 1 --heads 4 --kv-heads 1 --seq 333 --head-dim 256 --causal true --layout bshd --scale 0.2",
    "--batch 3 --heads 4 --kv-heads 1 --seq 1000 --head-dim 256 --causal true --layout bhsd",
    "--batch 1 --heads 8 --kv-heads 2 --seq 1000 --head-dim 256 --layout bhsd --wgmma-schedule pingpong",
    "--batch 1 --heads 8 --kv-heads 2 --seq 2049 --head-dim 256 --layout bshd",
    "--batch 3 --heads 4 --kv-heads 1 --seq 2049 --head-dim 256 --causal true --layout bshd --wgmma-schedule pingpong",
    "--batch 1 --heads 4 --kv-heads 1 --seq 4097 --head-dim 256 --causal true --layout bhsd",
};

/* the backward: odd lengths (2, 77, 129, 333, 1000, 2049, 4097; not 1, where dQ and dK are exactly 0 and only
 * rounding noise remains to compare), batches 1 and 3, GQA groups 1, 2 and 4, causal and
 * not, both layouts and head dims, both reference paths (float64 host up to 32 Mi multiply-adds: the first four),
 * and --deterministic, under which the check runs flash_mma twice and requires the same bits */
static const char *const bwd_cases[] = {
    "--batch 1 --heads 4 --kv-heads 1 --seq 77 --head-dim 128 --causal true --layout bhsd",
    "--batch 3 --heads 2 --kv-heads 2 --seq 77 --head-dim 64 --layout bshd --deterministic true",
    "--batch 3 --heads 4 --kv-heads 1 --seq 129 --head-dim 64 --causal true --layout bshd",
    "--batch 3 --heads 2 --kv-heads 1 --seq 2 --head-dim 128 --deterministic true",
    "--batch 3 --heads 8 --kv-heads 2 --seq 333 --head-dim 128 --causal true --layout bhsd",
    "--batch 1 --heads 4 --kv-heads 4 --seq 333 --head-dim 64 --layout bshd --deterministic true --scale 0.2",
    "--batch 1 --heads 8 --kv-heads 2 --seq 1000 --head-dim 128 --causal true --layout bshd --deterministic true",
    "--batch 3 --heads 4 --kv-heads 1 --seq 1000 --head-dim 64 --causal true",
    "--batch 1 --heads 4 --kv-heads 1 --seq 2049 --head-dim 64 --deterministic true --causal true",
    "--batch 1 --heads 2 --kv-heads 2 --seq 4097 --head-dim 128",
};

static const char *const decode_cases[] = {
    "--batch 3 --heads 8 --kv-heads 2 --head-dim 128 --kv-len 1 --len-spread 0 --page-size 16",
    "--batch 5 --heads 4 --kv-heads 4 --head-dim 64 --kv-len 77 --len-spread 1 --page-size 64",
    "--batch 7 --heads 6 --kv-heads 2 --head-dim 128 --kv-len 1000 --len-spread 1 --page-size 16",
    "--batch 3 --heads 32 --kv-heads 4 --head-dim 128 --kv-len 4097 --len-spread 0.5 --page-size 64",
    "--batch 4 --heads 16 --kv-heads 8 --head-dim 64 --kv-len 4097 --len-spread 0 --page-size 16",
    /* balanced_mma: one pair cut among every CTA (evict-first loads); a batch over one scan block of 128, chunked
     * split; fewer tiles than CTAs (empty ranges between a cut pair's CTAs) */
    "--batch 1 --heads 8 --kv-heads 1 --head-dim 128 --kv-len 30001 --len-spread 0 --page-size 16 --evict-first 1",
    "--batch 300 --heads 6 --kv-heads 3 --head-dim 64 --kv-len 700 --len-spread 1 --page-size 64 --chunk 192",
    "--batch 1 --heads 24 --kv-heads 8 --head-dim 128 --kv-len 2500 --len-spread 0 --page-size 16 --chunk 64",
    /* balanced_pages: two blocks of 6 kv heads, page 8 (a stage spans two pages); 5 kv heads, one block */
    "--batch 9 --heads 24 --kv-heads 12 --head-dim 64 --kv-len 2049 --len-spread 1 --page-size 8",
    "--batch 6 --heads 10 --kv-heads 5 --head-dim 128 --kv-len 3000 --len-spread 0.7 --page-size 64 --evict-first 1",
    /* rows_deep and balanced_pages' full-block loader: page 24 (a 16-token stage crosses a page at any offset),
     * lengths 1 to 999, three CTAs a slot (--waves 3); head_dim 64 with 4 kv heads (one full block of rows_deep,
     * four tokens a pass) */
    "--batch 5 --heads 32 --kv-heads 8 --head-dim 128 --kv-len 999 --len-spread 1 --page-size 24 --waves 3",
    "--batch 4 --heads 8 --kv-heads 4 --head-dim 64 --kv-len 333 --len-spread 1 --page-size 40 --evict-first 1 "
    "--read-heads 4",
    /* rows_deep in CTAs of 8 warps (one block of all 8 kv heads); the read reference over whole token rows */
    "--batch 3 --heads 24 --kv-heads 8 --head-dim 128 --kv-len 1500 --len-spread 1 --page-size 16 --rows-warps 8 "
    "--read-heads 8",
    /* the FP8 kernels (rows_deep_fp8, rows_frag_fp8) on rows whose scales differ: K's rows 2^-4..2^4 apart, V's
     * 2^-8..2^8 (a scale applied to the wrong token, or rows_frag_fp8's running unit of P·V, fails the check); both
     * head dims (their different swizzles and V loads), a group of 3, pages of 24 */
    "--batch 3 --heads 16 --kv-heads 4 --head-dim 128 --kv-len 700 --len-spread 1 --page-size 16 --row-spread 8",
    "--batch 5 --heads 12 --kv-heads 4 --head-dim 64 --kv-len 1500 --len-spread 0.5 --page-size 24 --row-spread 8 "
    "--scale 0.3",
};

static const char *const mla_cases[] = {
    /* one cached token, one sequence */
    "--batch 1 --heads 16 --kv-len 1 --len-spread 0",
    /* lengths 1..77 (most shorter than a tile), three sequences */
    "--batch 3 --heads 16 --kv-len 77 --len-spread 1",
    /* 20 heads: a 32-row block, 12 rows of padding; 333 is no multiple of the tile */
    "--batch 3 --heads 20 --kv-len 333 --len-spread 1 --page-size 64",
    /* 128 heads in two 64-row blocks, 64-token chunks: up to 16 splits of each sequence merged */
    "--batch 3 --heads 128 --kv-len 1000 --len-spread 0.5 --chunk 64",
    /* 100 heads (the second block 36 rows), one sequence, the chosen chunk */
    "--batch 1 --heads 100 --kv-len 2049 --len-spread 0",
    /* one head, pages of 48 tokens (the page of a token by division), chunk 128 */
    "--batch 7 --heads 1 --kv-len 129 --len-spread 1 --page-size 48 --chunk 128",
    /* 16-token pages (a tile spans two), 64 heads, a chunk longer than every sequence */
    "--batch 2 --heads 64 --kv-len 4097 --len-spread 0 --page-size 16 --chunk 8192",
    /* 16 heads (one 16-row block; 48 rows of padding in split_wgmma), long sequences: the stage rings wrap many
     * times within a 4096-token chunk */
    "--batch 3 --heads 16 --kv-len 5000 --len-spread 0.3 --chunk 4096",
    /* 32 heads, 192-token chunks (a chunk ends inside a page), a larger softmax scale (peaked weights) */
    "--batch 3 --heads 32 --kv-len 3000 --len-spread 0.9 --chunk 192 --scale 0.3",
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

START_TEST(flash_fwd_edges)
{
    char tag[32];
    snprintf(tag, sizeof tag, "attn-fwd-%d", _i);
    verify_one(tag, "attention:flash_fwd", fwd_cases[_i]);
}
END_TEST

START_TEST(flash_bwd_edges)
{
    char tag[32];
    snprintf(tag, sizeof tag, "attn-bwd-%d", _i);
    verify_one(tag, "attention:flash_bwd", bwd_cases[_i]);
}
END_TEST

START_TEST(decode_paged_edges)
{
    char tag[32];
    snprintf(tag, sizeof tag, "attn-dec-%d", _i);
    verify_one(tag, "attention:decode_paged", decode_cases[_i]);
}
END_TEST

START_TEST(mla_decode_edges)
{
    char tag[32];
    snprintf(tag, sizeof tag, "attn-mla-%d", _i);
    verify_one(tag, "attention:mla_decode", mla_cases[_i]);
}
END_TEST

/* PL_TEST_ATTENTION=fwd, bwd, decode or mla runs one target's cases only (to spend less GPU time); unset: all */
static int wanted(const char *which)
{
    const char *only = getenv("PL_TEST_ATTENTION");
    return !only || !*only || strcmp(only, which) == 0;
}

static Suite *suite(void)
{
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 900);
    if (wanted("fwd"))
        tcase_add_loop_test(tc, flash_fwd_edges, 0, COUNT(fwd_cases));
    if (wanted("bwd"))
        tcase_add_loop_test(tc, flash_bwd_edges, 0, COUNT(bwd_cases));
    if (wanted("decode"))
        tcase_add_loop_test(tc, decode_paged_edges, 0, COUNT(decode_cases));
    if (wanted("mla"))
        tcase_add_loop_test(tc, mla_decode_edges, 0, COUNT(mla_cases));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
