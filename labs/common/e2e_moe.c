/* The MoE parts of the e2e: layer glue (e2e_layer.h): the floor's weight regions and the routing checks. */
#include <string.h>

#include "common/e2e_layer.h"
#include "common/layer_ref.h"

int e2e_moe_floor_regions(pl_ctx *ctx, e2e_layer *L)
{
    const pl_moe_weights *w = &L->mw;
    const pl_model_config *m = L->m;
    const size_t touched = (size_t)(L->touched > 0 ? L->touched : 0);
    const size_t expert_elems = (size_t)m->expert_intermediate * m->hidden; /* down's; gate_up has twice as many */
    /* the fixed part (everything before the experts), then as many experts' gate_up and down as the batch touched */
    PL_TRY(e2e_floor_add(ctx, &L->floor, w->block, (size_t)((const char *)w->gate_up - (const char *)w->block)));
    PL_TRY(e2e_floor_add(ctx, &L->floor, w->gate_up, touched * 2 * expert_elems * 2));
    return e2e_floor_add(ctx, &L->floor, w->down, touched * expert_elems * 2);
}

int e2e_moe_read_ids(pl_ctx *ctx, e2e_layer *L, int base)
{
    pl_moe_routing_view v;
    pl_moe_routing_in(L->m, L->rows, ctx->device->sm_count, L->ws, &v);
    PL_CUDA(ctx, cudaMemcpyAsync(base ? L->ids_base : L->ids_run, v.ids, (size_t)L->rows * L->m->top_k * sizeof(int),
                                 cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

/* 1 when the k ids at a and at b are the same set. */
static int same_experts(const int *a, const int *b, int k)
{
    for (int i = 0; i < k; i++) {
        int found = 0;
        for (int j = 0; j < k && !found; j++)
            found = a[i] == b[j];
        if (!found)
            return 0;
    }
    return 1;
}

int e2e_moe_route_diff(const e2e_layer *L, unsigned char *differs, int *bad_ref)
{
    const int k = L->m->top_k;
    int n = 0;
    *bad_ref = 0;
    for (int r = 0; r < L->rows; r++) {
        differs[r] = !same_experts(L->ids_run + (size_t)r * k, L->ids_base + (size_t)r * k, k);
        n += differs[r];
    }
    for (int i = 0; i < L->ref_n; i++) {
        const int r = L->ref_rows[i];
        if (same_experts(L->ids_run + (size_t)r * k, L->ids_ref + (size_t)i * k, k))
            continue;
        differs[r] |= 2;
        if (!(L->margin_ref[i] < PL_LAYER_REF_NEAR_TIE))
            *bad_ref = 1;
    }
    return n;
}
