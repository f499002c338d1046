/* The warp-specialized persistent kernels' rows of the BF16 table (wgmma_ws_sm90a.cu: cooperative and ping-pong, in
 * clusters of 1, 2 and 4; their order in host/kernel_table.c).
 *
 * Mainloop efficiencies measured on an H200 (docs/perf/gemm.md): cooperative 128×256 0.83, 128×128 0.77, ping-pong
 * 0.75; in 2-CTA clusters within 1% (0.99×). Predicted: 128×192 0.80 (between 128×128 and 128×256), 192×176 as
 * 128×192, 128×176 0.78, 128×224 0.81. A fused epilogue costs the cooperative kernels that store D through TMA about
 * 10% (0.95-0.99× with a separate pass); the 176- and 224-wide tiles and the three-consumer tile store a fused D from
 * registers, measured 0.79× at K ≈ 1024 (H200, 2026-11-26): 0.75; the ping-pong kernel and the one whose epilogue
 * warps take the product over lose nothing. */
#include "gemm/host/kernel_row.h"

#define FUSED_TMA_STORE 0.90
#define FUSED_REGISTERS 0.75
#define FUSED_FREE      1.0
#define IN_PAIRS(eff)   ((eff)*0.99) /* a 2- or 4-CTA cluster */
/* A configuration's tile, stages, cluster, threads, needs and model: what its row and its B K×N twin's share */
#define WS_CONFIG(tm, tn, st, cl, needs_, model_)                                                                      \
    .tile_m = (tm), .tile_n = (tn), .tile_k = 64, .stages = (st), .cluster_m = (cl), .threads = 384, .needs = needs_,  \
    .model = model_
#define CFG_WS_128x128    WS_CONFIG(128, 128, 6, 1, PL_GEMM_NEEDS_WGMMA, PL_GEMM_MODEL_PERSISTENT(0.77, FUSED_TMA_STORE))
#define CFG_WS_128x256    WS_CONFIG(128, 256, 4, 1, PL_GEMM_NEEDS_WGMMA, PL_GEMM_MODEL_PERSISTENT(0.83, FUSED_TMA_STORE))
#define CFG_WS_128x256_S3 WS_CONFIG(128, 256, 3, 1, PL_GEMM_NEEDS_WGMMA, PL_GEMM_MODEL_PERSISTENT(0.82, FUSED_FREE))
#define CFG_PP_128x128    WS_CONFIG(128, 128, 5, 1, PL_GEMM_NEEDS_WGMMA, PL_GEMM_MODEL_PERSISTENT(0.75, FUSED_FREE))
#define CFG_WS_128x192    WS_CONFIG(128, 192, 4, 1, PL_GEMM_NEEDS_WGMMA, PL_GEMM_MODEL_PERSISTENT(0.80, FUSED_TMA_STORE))
#define CFG_WS_128x128_C2                                                                                              \
    WS_CONFIG(128, 128, 6, 2, PL_GEMM_NEEDS_CLUSTER, PL_GEMM_MODEL_PERSISTENT(IN_PAIRS(0.77), FUSED_TMA_STORE))
#define CFG_WS_128x256_C2                                                                                              \
    WS_CONFIG(128, 256, 4, 2, PL_GEMM_NEEDS_CLUSTER, PL_GEMM_MODEL_PERSISTENT(IN_PAIRS(0.83), FUSED_TMA_STORE))
#define CFG_PP_128x128_C2                                                                                              \
    WS_CONFIG(128, 128, 5, 2, PL_GEMM_NEEDS_CLUSTER, PL_GEMM_MODEL_PERSISTENT(IN_PAIRS(0.75), FUSED_FREE))
#define CFG_WS_128x192_C2                                                                                              \
    WS_CONFIG(128, 192, 4, 2, PL_GEMM_NEEDS_CLUSTER, PL_GEMM_MODEL_PERSISTENT(IN_PAIRS(0.80), FUSED_TMA_STORE))
/* The B K×N twin of a configuration (the _kn rows at the end): its flag, the K×N conditions and its launcher */
#define KN_TWIN(launcher) .flags = PL_GEMM_KERNEL_B_KN, .supports = pl_gemm_supports_tma_kn, .launch = (launcher)

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x128x64_s6 = {
    .name = "wgmma_ws_128x128x64_s6",
    .rung = "wgmma_ws",
    .technique = "persistent warp-specialized, cooperative: TMA producer warpgroup (setmaxnreg 56), 2 wgmma consumers "
                 "(224) sharing each tile, 6-stage mbarrier ring, TMA-store epilogue",
    CFG_WS_128x128,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x128,
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x256x64_s4 = {
    .name = "wgmma_ws_128x256x64_s4",
    .rung = "wgmma_ws",
    .technique = "persistent warp-specialized, cooperative: 2 wgmma m64n256 consumers sharing each 128×256 tile, 4 "
                 "stages",
    CFG_WS_128x256,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x256,
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x256x64_s3 = {
    .name = "wgmma_ws_128x256x64_s3",
    .rung = "wgmma_ws",
    .technique = "cooperative 128×256 with a whole tile of epilogue buffers (3 stages): fused, the consumers hand the "
                 "product to the epilogue warps and never wait for them",
    CFG_WS_128x256_S3,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x256_s3,
};

const pl_gemm_kernel pl_gemm_row_wgmma_pp_128x128x64_s5 = {
    .name = "wgmma_pp_128x128x64_s5",
    .rung = "wgmma_ws",
    .technique = "persistent warp-specialized, ping-pong: each consumer owns whole 128×128 tiles and stores one while "
                 "the other multiplies, 5 stages",
    CFG_PP_128x128,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_pp_128x128,
};

/* ---- in 2-CTA clusters ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x128x64_s6_c2 = {
    .name = "wgmma_ws_128x128x64_s6_c2",
    .rung = "wgmma_ws_cluster",
    .technique = "cooperative wgmma_ws in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through "
                 "DSMEM",
    CFG_WS_128x128_C2,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x128_c2,
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x256x64_s4_c2 = {
    .name = "wgmma_ws_128x256x64_s4_c2",
    .rung = "wgmma_ws_cluster",
    .technique = "cooperative 128×256 wgmma_ws in 2-CTA clusters: B panel TMA-multicast, stages released through "
                 "DSMEM; a last round at most half full cut into 128×128 halves, one tile a cluster",
    CFG_WS_128x256_C2,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x256_c2,
};

const pl_gemm_kernel pl_gemm_row_wgmma_pp_128x128x64_s5_c2 = {
    .name = "wgmma_pp_128x128x64_s5_c2",
    .rung = "wgmma_ws_cluster",
    .technique = "ping-pong wgmma_ws in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through "
                 "DSMEM",
    CFG_PP_128x128_C2,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_pp_128x128_c2,
};

/* ---- 128×192 tiles for tile counts that 128×256 quantizes badly ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x192x64_s4 = {
    .name = "wgmma_ws_128x192x64_s4",
    .rung = "wgmma_ws",
    .technique = "the cooperative persistent kernel with 128×192 tiles (wgmma m64n192): 3/4 of the 128×256 tile's "
                 "work, for tile counts the wider tile leaves a wave a quarter full",
    CFG_WS_128x192,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x192,
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x192x64_s4_c2 = {
    .name = "wgmma_ws_128x192x64_s4_c2",
    .rung = "wgmma_ws_cluster",
    .technique = "cooperative 128×192 in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through "
                 "DSMEM",
    CFG_WS_128x192_C2,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x192_c2,
};

/* ---- tiles fitted to the shape, as cuBLAS fits them ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_ws_192x176x64_s3_c2 = {
    .name = "wgmma_ws_192x176x64_s3_c2",
    .rung = "wgmma_ws_cluster",
    .technique = "three consumer warpgroups on 192×176 tiles (wgmma m64n176, the last 48 columns stored through a "
                 "dense TMA map) in 2-CTA clusters sharing B, 3 stages and a whole tile of epilogue buffers: 4104² in "
                 "four whole rounds",
    .tile_m = 192,
    .tile_n = 176,
    .tile_k = 64,
    .stages = 3,
    .cluster_m = 2,
    .threads = 512,
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_192x176_c2,
    .model = PL_GEMM_MODEL_PERSISTENT(IN_PAIRS(0.80), FUSED_REGISTERS),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x176x64_s5 = {
    .name = "wgmma_ws_128x176x64_s5",
    .rung = "wgmma_ws",
    .technique = "the cooperative kernel with 128×176 tiles (wgmma m64n176, 5 stages): tile counts between 128×128 "
                 "and 128×192",
    .tile_m = 128,
    .tile_n = 176,
    .tile_k = 64,
    .stages = 5,
    .cluster_m = 1,
    .threads = 384,
    .needs = PL_GEMM_NEEDS_WGMMA,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x176,
    .model = PL_GEMM_MODEL_PERSISTENT(0.78, FUSED_REGISTERS),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x224x64_s4_c4 = {
    .name = "wgmma_ws_128x224x64_s4_c4",
    .rung = "wgmma_ws_cluster",
    .technique = "128×224 tiles in 4-CTA clusters: four tile rows share each B panel, a quarter loaded and multicast "
                 "by each CTA",
    .tile_m = 128,
    .tile_n = 224,
    .tile_k = 64,
    .stages = 4,
    .cluster_m = 4,
    .threads = 384,
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x224_c4,
    .model = PL_GEMM_MODEL_PERSISTENT(IN_PAIRS(0.81), FUSED_REGISTERS),
};

/* ---- 128×224 tiles without clusters of four: at M ≈ 200 two tile rows over N = 224·k fill 128 SMs in one
 * wave ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x224x64_s4 = {
    .name = "wgmma_ws_128x224x64_s4",
    .rung = "wgmma_ws",
    .technique = "the cooperative kernel with 128×224 tiles (wgmma m64n224, the last 32 columns through a dense TMA "
                 "map), 4 stages",
    .tile_m = 128,
    .tile_n = 224,
    .tile_k = 64,
    .stages = 4,
    .cluster_m = 1,
    .threads = 384,
    .needs = PL_GEMM_NEEDS_WGMMA,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x224,
    .model = PL_GEMM_MODEL_PERSISTENT(0.81, FUSED_REGISTERS),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x224x64_s4_c2 = {
    .name = "wgmma_ws_128x224x64_s4_c2",
    .rung = "wgmma_ws_cluster",
    .technique = "128×224 tiles in 2-CTA clusters: two tile rows share each B panel, half loaded and multicast by "
                 "each CTA",
    .tile_m = 128,
    .tile_n = 224,
    .tile_k = 64,
    .stages = 4,
    .cluster_m = 2,
    .threads = 384,
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_ws_128x224_c2,
    .model = PL_GEMM_MODEL_PERSISTENT(IN_PAIRS(0.81), FUSED_REGISTERS),
};

/* ---- B K×N: the twins of the rows above that read B N-major (wgmma_ws_sm90a.cu's _kn launchers). They move the
 * same bytes and issue the same wgmma as their N×K twins, so the model gives them their twins' efficiencies:
 * predicted, not yet run on a GPU. Tile widths of whole 64-column boxes only (no 176- or 224-wide twin). ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x128x64_s6_kn = {
    .name = "wgmma_ws_128x128x64_s6_kn",
    .rung = "wgmma_ws",
    .technique = "the cooperative 128×128 kernel reading B K×N: 64-column TMA boxes, the MN-major descriptor, wgmma "
                 "imm-trans-b 1",
    CFG_WS_128x128,
    KN_TWIN(pl_gemm_wgmma_ws_128x128_kn),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x256x64_s4_kn = {
    .name = "wgmma_ws_128x256x64_s4_kn",
    .rung = "wgmma_ws",
    .technique = "the cooperative 128×256 kernel reading B K×N (four 64-column boxes a stage)",
    CFG_WS_128x256,
    KN_TWIN(pl_gemm_wgmma_ws_128x256_kn),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x256x64_s3_kn = {
    .name = "wgmma_ws_128x256x64_s3_kn",
    .rung = "wgmma_ws",
    .technique = "cooperative 128×256 with a whole tile of epilogue buffers reading B K×N: fused, the epilogue warps "
                 "take the product",
    CFG_WS_128x256_S3,
    KN_TWIN(pl_gemm_wgmma_ws_128x256_s3_kn),
};

const pl_gemm_kernel pl_gemm_row_wgmma_pp_128x128x64_s5_kn = {
    .name = "wgmma_pp_128x128x64_s5_kn",
    .rung = "wgmma_ws",
    .technique = "the ping-pong 128×128 kernel reading B K×N",
    CFG_PP_128x128,
    KN_TWIN(pl_gemm_wgmma_pp_128x128_kn),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x192x64_s4_kn = {
    .name = "wgmma_ws_128x192x64_s4_kn",
    .rung = "wgmma_ws",
    .technique = "the cooperative 128×192 kernel reading B K×N (three 64-column boxes a stage)",
    CFG_WS_128x192,
    KN_TWIN(pl_gemm_wgmma_ws_128x192_kn),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x128x64_s6_c2_kn = {
    .name = "wgmma_ws_128x128x64_s6_c2_kn",
    .rung = "wgmma_ws_cluster",
    .technique =
        "cooperative 128×128 in 2-CTA clusters reading B K×N: each CTA multicasts one of the panel's two boxes",
    CFG_WS_128x128_C2,
    KN_TWIN(pl_gemm_wgmma_ws_128x128_c2_kn),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x256x64_s4_c2_kn = {
    .name = "wgmma_ws_128x256x64_s4_c2_kn",
    .rung = "wgmma_ws_cluster",
    .technique = "cooperative 128×256 in 2-CTA clusters reading B K×N: two boxes multicast by each CTA; the split tail "
                 "of its twin",
    CFG_WS_128x256_C2,
    KN_TWIN(pl_gemm_wgmma_ws_128x256_c2_kn),
};

const pl_gemm_kernel pl_gemm_row_wgmma_pp_128x128x64_s5_c2_kn = {
    .name = "wgmma_pp_128x128x64_s5_c2_kn",
    .rung = "wgmma_ws_cluster",
    .technique = "ping-pong 128×128 in 2-CTA clusters reading B K×N",
    CFG_PP_128x128_C2,
    KN_TWIN(pl_gemm_wgmma_pp_128x128_c2_kn),
};

const pl_gemm_kernel pl_gemm_row_wgmma_ws_128x192x64_s4_c2_kn = {
    .name = "wgmma_ws_128x192x64_s4_c2_kn",
    .rung = "wgmma_ws_cluster",
    .technique = "cooperative 128×192 in 2-CTA clusters reading B K×N: three boxes a stage, two multicast by one CTA, "
                 "one by the other",
    CFG_WS_128x192_C2,
    KN_TWIN(pl_gemm_wgmma_ws_128x192_c2_kn),
};
