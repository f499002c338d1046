/* The tile order shared by the transpose kernels of transpose_wide.cu and transpose_tma.cu. */
#ifndef PERFLAB_MEMORY_TRANSPOSE_ORDER_CUH
#define PERFLAB_MEMORY_TRANSPOSE_ORDER_CUH

/* Tile (row, column) of linear tile b when the tiles_y × tiles_x tiles are walked band by band (`band` tile rows
 * each), column by column inside a band. band 1 is row-major order. The last band may be shorter. */
__device__ __forceinline__ void band_tile(unsigned b, unsigned tiles_x, unsigned tiles_y, unsigned band, unsigned *tr,
                                          unsigned *tc)
{
    const unsigned per_band = band * tiles_x;
    const unsigned bi = b / per_band, k = b - bi * per_band;
    const unsigned first = bi * band;
    const unsigned h = min(band, tiles_y - first);
    *tr = first + k % h;
    *tc = k / h;
}

#endif
