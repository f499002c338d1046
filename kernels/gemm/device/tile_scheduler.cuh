/* The tile scheduler of the persistent GEMM kernels: the order in which they walk their output tiles (tile_of, which
 * every persistent kernel uses), the row ranges of a grouped GEMM's groups (group_rows), and the walk of the
 * warp-specialized BF16 kernels with its split tail (ws_item_of, ws_items). The grouped kernels' cursors over their
 * device-side offsets (sm90_ws_scaled.cuh's sw_walk, grouped_t's token plan) build on tile_of and group_rows. */
#ifndef PERFLAB_GEMM_DEVICE_TILE_SCHEDULER_CUH
#define PERFLAB_GEMM_DEVICE_TILE_SCHEDULER_CUH

/* Tile t of a walk over rows × cols tiles -> (tile row, tile column): rows advance fastest inside a band of `group`
 * tile rows, then columns, then the next band (the tiles running at once share A and B panels in L2). */
__device__ __forceinline__ void tile_of(int t, int rows, int cols, int group, int &row, int &col)
{
    const int per_group = group * cols;
    const int first = (t / per_group) * group;
    const int size = min(rows - first, group);
    const int r = t % per_group;
    row = first + r % size;
    col = r / size;
}

/* Rows start .. end - 1 of group g of a grouped GEMM of `rows` rows, from its groups + 1 offsets in device memory,
 * clamped so that a bad offsets array stays inside D. */
__device__ __forceinline__ void group_rows(const int *offsets, int g, int rows, int &start, int &end)
{
    start = min(__ldg(offsets + g), rows);
    end = min(max(__ldg(offsets + g + 1), start), rows);
}

/* The split tail's tiles (wgmma_ws_sm90a.cu: the 2-CTA cooperative 128×256 kernels) are 128 rows. */
#define PL_SPLIT_TAIL_ROWS 128

/* Item i of a cluster's walk: tile t = cluster + i·clusters (tile_of), this CTA's bm rows of the cluster's; or, past
 * `rounds` with the split tail, half the columns of one 128-row half of a last-round pair. */
struct ws_item {
    int m0, n0;
    bool split;
};

__device__ __forceinline__ ws_item ws_item_of(int i, int cluster, int clusters, int rounds, int tail_split, int rank,
                                              int cluster_size, int tile_rows, int tile_cols, int group, int bm, int bn)
{
    ws_item it;
    int tr, tc;
    it.split = tail_split && i >= rounds;
    if (!it.split) {
        tile_of(cluster + i * clusters, tile_rows, tile_cols, group, tr, tc);
        it.m0 = (tr * cluster_size + rank) * bm;
        it.n0 = tc * bn;
    } else {
        tile_of(rounds * clusters + cluster / 2, tile_rows, tile_cols, group, tr, tc);
        it.m0 = (tr * 2 + cluster % 2) * bm;
        it.n0 = tc * bn + rank * (bn / 2);
    }
    return it;
}

/* Items in a cluster's walk: with the split tail, the whole rounds and, for the first 2·(last round's pairs)
 * clusters, one half pair (none where that half lies wholly past M: both CTAs skip it alike). */
__device__ __forceinline__ int ws_items(int cluster, int clusters, int tiles, int rounds, int tail_split, int tile_rows,
                                        int tile_cols, int group, int m)
{
    if (!tail_split)
        return (tiles - cluster + clusters - 1) / clusters;
    if (cluster >= 2 * (tiles - rounds * clusters))
        return rounds;
    int tr, tc;
    tile_of(rounds * clusters + cluster / 2, tile_rows, tile_cols, group, tr, tc);
    return (tr * 2 + cluster % 2) * PL_SPLIT_TAIL_ROWS < m ? rounds + 1 : rounds;
}

#endif
