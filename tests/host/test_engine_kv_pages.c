/* The paged KV cache's host side: random appends and finishes against a simple model (every page owned once, page
 * counts ceil(len / page_size), the free count), odd lengths, exhaustion (nothing taken, the sequence unchanged) and
 * reuse, the block table's padding, and the layout: K/V written through pl_kv_slot and read back through the block
 * table by the paged decode kernels' host reference match attention over the same tokens stored contiguously. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/attention_host.h"
#include "engine/kv_pages.h"
#include "testutil.h"

/* Every page is free or held by exactly one sequence; each sequence holds ceil(len / page_size) pages. NULL, or
 * what is wrong (plain checks: Check records every ck_assert, too slow for thousands of steps). */
static const char *invariants(const pl_kv_pool *pool, const pl_kv_seq *seqs, int n)
{
    static int owner[1024];
    const char *bad = NULL;
    memset(owner, 0, sizeof owner);
    for (int i = 0; i < pool->free_count && !bad; i++) {
        const int pg = pool->free_stack[i];
        if (pg < 0 || pg >= pool->num_pages || owner[pg]++)
            bad = "a free page is out of range or free twice";
    }
    int held = 0;
    for (int s = 0; s < n && !bad; s++) {
        if (seqs[s].npages != pl_kv_pages_for(seqs[s].len, pool->page_size))
            bad = "a sequence holds a page count other than ceil(len / page_size)";
        for (int i = 0; i < seqs[s].npages && !bad; i++)
            if (owner[seqs[s].pages[i]]++)
                bad = "a page is held twice, or held and free";
        held += seqs[s].npages;
    }
    if (!bad && held + pool->free_count != pool->num_pages)
        bad = "a page is lost: held + free != pages";
    return bad;
}

static void random_ops(int num_pages, int page_size, unsigned seed)
{
    enum { N = 9 };
    pl_kv_pool pool;
    pl_kv_seq seqs[N];
    int model_len[N] = {0};
    memset(seqs, 0, sizeof seqs);
    ck_assert_int_le(num_pages, 1024); /* invariants()'s table */
    ck_assert_int_eq(pl_kv_pool_init(&pool, num_pages, page_size), 0);
    srand(seed);
    int refused = 0, finished = 0;
    for (int step = 0; step < 4000; step++) {
        const int s = rand() % N;
        if (rand() % 8 == 0) {
            pl_kv_seq_release(&pool, &seqs[s]);
            model_len[s] = 0;
            finished++;
        } else {
            const int add = 1 + rand() % (rand() % 4 == 0 ? 3 * page_size : 5);
            const int need = pl_kv_pages_for(model_len[s] + add, page_size) - pl_kv_pages_for(model_len[s], page_size);
            const int free_before = pool.free_count, rc = pl_kv_seq_append(&pool, &seqs[s], add);
            if (need > free_before) {
                if (rc != PL_KV_OUT_OF_PAGES || pool.free_count != free_before)
                    ck_abort_msg("step %d: %d pages needed, %d free: not refused as out of pages with nothing taken",
                                 step, need, free_before);
                refused++;
            } else {
                if (rc != PL_KV_OK || pool.free_count != free_before - need)
                    ck_abort_msg("step %d: appending %d tokens took other than %d pages (rc %d)", step, add, need, rc);
                model_len[s] += add;
            }
        }
        const char *bad = invariants(&pool, seqs, N);
        if (bad || seqs[s].len != model_len[s])
            ck_abort_msg("step %d (page size %d): %s", step, page_size, bad ? bad : "the length is not the model's");
    }
    ck_assert_msg(refused > 0 && finished > 0, "the walk never ran out of pages (%d) or finished (%d)", refused,
                  finished);
    for (int s = 0; s < N; s++)
        pl_kv_seq_destroy(&pool, &seqs[s]);
    ck_assert_int_eq(pool.free_count, num_pages);
    pl_kv_pool_destroy(&pool);
}

START_TEST(random_appends_and_finishes)
{
    random_ops(40, 16, 1);
    random_ops(23, 7, 2); /* a page size no power of two */
    random_ops(64, 1, 3);
}
END_TEST

START_TEST(exhaustion_and_reuse)
{
    pl_kv_pool pool;
    ck_assert_int_eq(pl_kv_pool_init(&pool, 5, 16), 0);
    pl_kv_seq a = {0}, b = {0};
    ck_assert_int_eq(pl_kv_seq_append(&pool, &a, 33), PL_KV_OK); /* 3 pages, 15 rows free in the last */
    ck_assert_int_eq(a.npages, 3);
    ck_assert_int_eq(a.pages[0], 0);
    ck_assert_int_eq(pl_kv_seq_append(&pool, &a, 15), PL_KV_OK); /* fills page 3's rows: no new page */
    ck_assert_int_eq(a.npages, 3);
    ck_assert_int_eq(pl_kv_pages_needed(&pool, &b, 33), 3);
    ck_assert_int_eq(pl_kv_pages_needed(&pool, &a, 1), 1);
    ck_assert_int_eq(pl_kv_seq_append(&pool, &b, 33), PL_KV_OUT_OF_PAGES); /* needs 3, 2 are free */
    ck_assert_int_eq(pl_kv_seq_append(&pool, &b, -1), PL_KV_BAD_COUNT);
    ck_assert_int_eq(b.len, 0);
    ck_assert_int_eq(b.npages, 0);
    ck_assert_int_eq(pool.free_count, 2);
    ck_assert_int_eq(pl_kv_seq_append(&pool, &b, 32), PL_KV_OK); /* exactly the last two */
    ck_assert_int_eq(pl_kv_page_alloc(&pool), -1);
    ck_assert_int_eq(pl_kv_seq_append(&pool, &a, 1), PL_KV_OUT_OF_PAGES);
    ck_assert_int_eq(a.len, 48);
    const int a_pages[3] = {a.pages[0], a.pages[1], a.pages[2]};
    pl_kv_seq_release(&pool, &a);
    ck_assert_int_eq(pool.free_count, 3);
    ck_assert_int_eq(pl_kv_seq_append(&pool, &a, 40), PL_KV_OK); /* the finished sequence's pages, in order */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(a.pages[i], a_pages[i]);
    /* the block table: page ids then -1; a table too narrow is refused */
    pl_kv_seq seqs[2] = {a, b};
    int table[2 * 4], lens[2];
    ck_assert_int_eq(pl_kv_block_table(seqs, 2, 4, table, lens), 0);
    ck_assert_int_eq(lens[0], 40);
    ck_assert_int_eq(lens[1], 32);
    ck_assert_int_eq(table[3], -1);
    ck_assert_int_eq(table[4], b.pages[0]);
    ck_assert_int_eq(table[6], -1);
    ck_assert_int_eq(pl_kv_block_table(seqs, 2, 2, table, lens), -1);
    pl_kv_seq_destroy(&pool, &a);
    pl_kv_seq_destroy(&pool, &b);
    ck_assert_int_eq(pool.free_count, 5);
    pl_kv_pool_destroy(&pool);
    ck_assert_int_eq(pl_kv_pool_init(&pool, 0, 16), -1);
}
END_TEST

/* A value exact in bf16 (a multiple of 1/16 in [-1, 1]), a function of its indices. */
static float value(int a, int b, int c, int d)
{
    return (float)((a * 131 + b * 17 + c * 7 + d * 3) % 33 - 16) / 16.0f;
}

static uint16_t bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16);
}

START_TEST(decode_layout)
{
    enum { BATCH = 3, HEADS = 8, KV = 2, HD = 64, PS = 16, PAGES = 12, MAXP = 4 };
    const int final_len[BATCH] = {1, 17, 45}; /* no multiple of the page but 1 */
    pl_kv_pool pool;
    pl_kv_seq seqs[BATCH];
    memset(seqs, 0, sizeof seqs);
    ck_assert_int_eq(pl_kv_pool_init(&pool, PAGES, PS), 0);
    /* appends interleaved across sequences (5 tokens at a time), so that a sequence's pages are not contiguous */
    for (int more = 1; more;) {
        more = 0;
        for (int s = 0; s < BATCH; s++) {
            const int add = final_len[s] - seqs[s].len < 5 ? final_len[s] - seqs[s].len : 5;
            if (add > 0) {
                ck_assert_int_eq(pl_kv_seq_append(&pool, &seqs[s], add), PL_KV_OK);
                more = 1;
            }
        }
    }
    ck_assert_int_ne(seqs[2].pages[1], seqs[2].pages[0] + 1);
    const size_t elems = (size_t)PAGES * PS * KV * HD;
    uint16_t *k = malloc(elems * sizeof *k), *v = malloc(elems * sizeof *v), q[BATCH * HEADS * HD];
    ck_assert(k && v);
    for (size_t i = 0; i < elems; i++)
        k[i] = v[i] = 0x7fc0; /* NaN in every slot no sequence holds: a read of one shows in the result */
    for (int s = 0; s < BATCH; s++)
        for (int t = 0; t < final_len[s]; t++)
            for (int g = 0; g < KV; g++)
                for (int d = 0; d < HD; d++) {
                    const size_t at = ((size_t)pl_kv_slot(&seqs[s], t, PS) * KV + g) * HD + d;
                    k[at] = bf16(value(s, t, g, d));
                    v[at] = bf16(value(t, s, d, g));
                }
    for (int i = 0; i < BATCH * HEADS * HD; i++)
        q[i] = bf16(value(i, 3, 1, 0));
    int table[BATCH * MAXP], lens[BATCH];
    ck_assert_int_eq(pl_kv_block_table(seqs, BATCH, MAXP, table, lens), 0);
    pl_decode_problem p = {0};
    pl_kv_decode_geometry(&pool, BATCH, HEADS, KV, HD, MAXP, &p);
    double out[BATCH * HEADS * HD];
    pl_decode_reference_host(&p, q, k, v, table, lens, out);
    /* attention over the same tokens held contiguously */
    for (int s = 0; s < BATCH; s++)
        for (int h = 0; h < HEADS; h++) {
            const int g = h / (HEADS / KV), L = final_len[s];
            double w[64], mx = -INFINITY, sum = 0.0;
            for (int t = 0; t < L; t++) {
                double dot = 0.0;
                for (int d = 0; d < HD; d++)
                    dot += (double)value((s * HEADS + h) * HD + d, 3, 1, 0) * value(s, t, g, d);
                w[t] = dot * p.scale;
                mx = w[t] > mx ? w[t] : mx;
            }
            for (int t = 0; t < L; t++)
                sum += (w[t] = exp(w[t] - mx));
            for (int d = 0; d < HD; d++) {
                double o = 0.0;
                for (int t = 0; t < L; t++)
                    o += w[t] / sum * value(t, s, d, g);
                const double got = out[(s * HEADS + h) * HD + d];
                ck_assert_msg(fabs(got - o) <= 1e-9, "sequence %d head %d dim %d: %.12g, not %.12g", s, h, d, got, o);
            }
        }
    free(k);
    free(v);
    for (int s = 0; s < BATCH; s++)
        pl_kv_seq_destroy(&pool, &seqs[s]);
    pl_kv_pool_destroy(&pool);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine_kv_pages");
    TCase *tc = tcase_create("kv_pages");
    tcase_add_test(tc, random_appends_and_finishes);
    tcase_add_test(tc, exhaustion_and_reuse);
    tcase_add_test(tc, decode_layout);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
