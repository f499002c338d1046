/* The launch shape of the row kernels, from the row length alone (rows.h). */
#include "common/rows.h"

static int pow2_at_least(int v)
{
    int p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static int ceil_div(int a, int b)
{
    return (a + b - 1) / b;
}

int pl_rows_vectors(int cols, int rows_aligned)
{
    return rows_aligned ? cols / PL_ROWS_VEC : (cols + 2 * PL_ROWS_VEC - 2) / PL_ROWS_VEC;
}

int pl_rows_aligned(const void *x, int cols)
{
    return (uintptr_t)x % 16 == 0 && cols % PL_ROWS_VEC == 0;
}

/* Threads for nvec vectors at nv per thread: a power of two inside a warp, whole warps beyond. */
static int group_for(int nvec, int nv)
{
    const int need = ceil_div(nvec, nv);
    return need <= 32 ? pow2_at_least(need) : ceil_div(need, 32) * 32;
}

int pl_rows_pick_shape(int rows, int cols, int rows_aligned, int nv_request, int nv_max, pl_rows_shape *out)
{
    if (rows < 1 || cols < 1)
        return -1;
    const int nvec = pl_rows_vectors(cols, rows_aligned);
    int nv = nv_request;
    if (nv == 0) {
        if (nvec <= 32)
            nv = 1; /* short rows: a part of a warp, one vector each */
        else if (nvec <= 128)
            nv = pow2_at_least(ceil_div(nvec, 32)); /* a warp per row, no shared memory, no barrier */
        else if (nvec <= 4 * PL_ROWS_MAX_GROUP)
            nv = 4; /* a block per row: 64 bytes in flight per thread */
        else if (nvec <= nv_max * PL_ROWS_MAX_GROUP)
            nv = nv_max;
        else
            nv = -1; /* looped */
    } else if (nv > nv_max || (nv & (nv - 1)) != 0 || group_for(nvec, nv) > PL_ROWS_MAX_GROUP) {
        return -1;
    }
    if (nv < 0) {
        out->nv = 0;
        out->group = PL_ROWS_MAX_GROUP;
    } else {
        out->nv = nv;
        out->group = group_for(nvec, nv);
    }
    out->rows_per_block = out->group >= PL_ROWS_BLOCK_GOAL ? 1 : PL_ROWS_BLOCK_GOAL / out->group;
    out->threads = out->group * out->rows_per_block;
    out->blocks = (unsigned)ceil_div(rows, out->rows_per_block);
    return 0;
}

int pl_rows_launch_shape(const void *x, const void *y, int rows, int cols, int nv_request, int nv_max,
                         pl_rows_shape *out)
{
    if (!x || !y || (((uintptr_t)x ^ (uintptr_t)y) & 15u) != 0 || ((uintptr_t)x & 1u) != 0)
        return -1;
    return pl_rows_pick_shape(rows, cols, pl_rows_aligned(x, cols), nv_request, nv_max, out);
}
