/* The host side of the split-K kernels that needs no GPU: how many CTAs share an output tile's K. */
#include "gemm/host/splitk.h"

/* S for ctas_per_sm CTAs on each SM: at most that (every cluster in the first wave), or with `nearest` the split
 * nearest it; capped at max_split and at PL_SK_MIN_KBLOCKS k-blocks a split. */
static int split_rule(long long tiles, int k_blocks, int sms, int ctas_per_sm, int max_split, int nearest)
{
    if (tiles < 1 || k_blocks < 1 || sms < 1)
        return 1;
    long long s = ((long long)sms * ctas_per_sm + (nearest ? tiles / 2 : 0)) / tiles;
    if (s > max_split)
        s = max_split;
    if (s > k_blocks / PL_SK_MIN_KBLOCKS)
        s = k_blocks / PL_SK_MIN_KBLOCKS;
    return s < 1 ? 1 : (int)s;
}

int pl_gemm_sk_split(long long tiles, int k_blocks, int sms)
{
    return split_rule(tiles, k_blocks, sms, PL_SK_SPLIT_CTAS_PER_SM, PL_SK_PORTABLE_SPLIT, 1);
}

int pl_gemm_sk_split_w1(long long tiles, int k_blocks, int sms)
{
    return split_rule(tiles, k_blocks, sms, 1, PL_SK_MAX_SPLIT, 0);
}

int pl_gemm_sk_split_deep(long long tiles, int k_blocks, int sms)
{
    return split_rule(tiles, k_blocks, sms, 1, PL_SK_PORTABLE_SPLIT, 0);
}

int pl_gemm_sk_split_waves(long long tiles, int k_blocks, int sms)
{
    if (tiles < 1 || k_blocks < 1 || sms < 1)
        return 1;
    int best = 1;
    long long best_cost = -1;
    for (int s = 1; s <= PL_SK_PORTABLE_SPLIT; s++) {
        if (s > 1 && k_blocks / s < PL_SK_MIN_KBLOCKS)
            break;
        const long long waves = (tiles * s + sms - 1) / sms;
        const long long cost = waves * ((k_blocks + s - 1) / s + PL_SK_WAVE_OVERHEAD_KB);
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best = s;
        }
    }
    return best;
}
