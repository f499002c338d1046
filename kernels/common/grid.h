/* One-dimensional grids for the families' launchers: gridDim.x's limit, and the grid of a grid-stride kernel. Host
 * code only. */
#ifndef PERFLAB_KERNELS_COMMON_GRID_H
#define PERFLAB_KERNELS_COMMON_GRID_H

#include <stddef.h>

#define PL_MAX_GRID_X 2147483647u /* gridDim.x's limit */

/* ⌈items / per_block⌉ blocks, at least one and at most PL_MAX_GRID_X (a grid-stride kernel loops past it). */
static inline unsigned pl_grid_1d(size_t items, size_t per_block)
{
    const size_t blocks = (items + per_block - 1) / per_block;
    return blocks == 0 ? 1u : blocks > PL_MAX_GRID_X ? PL_MAX_GRID_X : (unsigned)blocks;
}

#endif
