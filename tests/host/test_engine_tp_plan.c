/* The tensor-parallel layer's host side (engine/tp_layer.h): which models split over how many GPUs (a kv head is never
 * split: kv_heads, heads and the MLP width must be multiples of the count), the refusals' one-line reasons, and a
 * rank's workspace within the single-GPU layer's (the rank's share of the heads and of the MLP). */
#include <string.h>

#include "engine/dense_layer.h"
#include "engine/tp_layer.h"
#include "testutil.h"

static const pl_model_config *model(const char *name)
{
    char err[512];
    const pl_model_config *m = pl_model_find(name, err, sizeof err);
    ck_assert_msg(m, "%s", err);
    return m;
}

START_TEST(which_models_split)
{
    char why[256];
    static const char *const dense[] = {"llama3-8b", "llama3-70b", "tiny-dense-tp"};
    for (int i = 0; i < 3; i++)
        for (int n = 1; n <= 8; n *= 2)
            ck_assert_msg(pl_tp_splits(model(dense[i]), n, why, sizeof why), "%s at %d: %s", dense[i], n, why);
    ck_assert(!pl_tp_splits(model("llama3-70b"), 3, why, sizeof why));
    ck_assert_msg(strstr(why, "llama3-70b has 8 kv heads") && strstr(why, "multiples of 3") && !strchr(why, '\n'), "%s",
                  why);
    ck_assert(!pl_tp_splits(model("tiny-dense"), 4, why, sizeof why)); /* 2 kv heads */
    ck_assert_msg(strstr(why, "tiny-dense has 2 kv heads"), "%s", why);
    ck_assert(pl_tp_splits(model("tiny-dense"), 2, why, sizeof why));
    ck_assert(!pl_tp_splits(model("tiny-moe"), 2, why, sizeof why));
    ck_assert_msg(strstr(why, "qk-norm model"), "%s", why);
    ck_assert(!pl_tp_splits(model("mixtral-8x7b"), 2, why, sizeof why));
    ck_assert_msg(strstr(why, "MoE model"), "%s", why);
    ck_assert(!pl_tp_splits(model("llama3-8b"), 9, why, sizeof why));
    ck_assert_msg(strstr(why, "use 1 to 8"), "%s", why);
    ck_assert(!pl_tp_splits(model("llama3-8b"), 0, why, sizeof why));
}
END_TEST

/* A rank's workspace (its shard as a model of its own) is no larger than the whole layer's, and shrinks with the
 * count. */
START_TEST(rank_workspace)
{
    const pl_model_config *m = model("llama3-70b");
    size_t last = pl_dense_workspace_bytes(m, 64, 132);
    for (int n = 2; n <= 8; n *= 2) {
        pl_tp_weights w;
        memset(&w, 0, sizeof w);
        w.model = m;
        w.shard = *m;
        w.shard.heads /= n, w.shard.kv_heads /= n, w.shard.intermediate /= n;
        w.rank = 0, w.nranks = n;
        const size_t b = pl_tp_workspace_bytes(&w, 64, 132);
        ck_assert_msg(b > 0 && b < last, "TP %d: %zu bytes, not below %zu", n, b, last);
        last = b;
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_tp_plan");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, which_models_split);
    tcase_add_test(tc, rank_workspace);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
