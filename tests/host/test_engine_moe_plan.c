/* The MoE layer's workspace (engine/moe_layer.h, pl_moe_workspace_bytes) within the activations the memory plan
 * reserves for a step (pl_activation_bytes), at every MoE config of the table and batches 1 to 64 on a GPU of 132
 * SMs (the fast decode kernel's partial results are sized by the SMs); and growing with the batch. Host only: the
 * sizes need no GPU. */
#include "engine/memory_plan.h"
#include "engine/moe_layer.h"
#include "testutil.h"

START_TEST(workspace_within_plan)
{
    int moe_models = 0;
    for (size_t i = 0; i < pl_model_count; i++) {
        const pl_model_config *m = &pl_models[i];
        if (!pl_model_is_moe(m))
            continue;
        moe_models++;
        size_t last = 0;
        for (int batch = 1; batch <= 64; batch++) {
            const size_t ws = pl_moe_workspace_bytes(m, batch, 132);
            const uint64_t act = pl_activation_bytes(m, batch, batch, 2048);
            ck_assert_msg(ws <= act, "%s batch %d: the workspace's %zu bytes exceed the plan's %llu", m->name, batch,
                          ws, (unsigned long long)act);
            ck_assert_msg(ws > last, "%s batch %d: the workspace does not grow with the batch", m->name, batch);
            last = ws;
        }
    }
    ck_assert_int_ge(moe_models, 4); /* qwen3-30b-a3b, mixtral-8x7b, tiny-moe, tiny-moe-gqa8 */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_moe_plan");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, workspace_within_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
