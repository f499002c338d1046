#include "hw/datasheet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/provenance.h"

#define NA          NAN

#define HOPPER_NOTE "tensor figures published with sparsity; stored dense (half)"
#define H100_SRC    "NVIDIA H100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h100/"
#define H200_SRC    "NVIDIA H200 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h200/"
#define A100_SRC                                                                                                       \
    "NVIDIA A100 Tensor Core GPU datasheet, "                                                                          \
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-" \
    "r4-web.pdf"
#define BLACKWELL_SRC                                                                                                  \
    "NVIDIA GB200 NVL72 / HGX B200 specifications, individual Blackwell GPU, "                                         \
    "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
#define BLACKWELL_NOTE "tensor figures published with sparsity; stored dense (half)"

/* Order matters only within a key: the larger memory variant first. */
static const pl_datasheet table[] = {
    {"h100_sxm", "NVIDIA H100 SXM5 80GB", 0, 3350, 67, 34, 67, 494.5, 989.5, 989.5, 1979, 64, "PCIe Gen5 x16", 900,
     H100_SRC, HOPPER_NOTE "; PCIe 128 GB/s published for both directions together"},
    {"h100_pcie", "NVIDIA H100 PCIe 80GB", 0, 2000, 51, 26, 51, 378, 756.5, 756.5, 1513, 64, "PCIe Gen5 x16", 600,
     H100_SRC, HOPPER_NOTE "; NVLink through a 2-GPU bridge"},
    {"h100_nvl", "NVIDIA H100 NVL 94GB", 0, 3900, 60, 30, 60, 417.5, 835.5, 835.5, 1670.5, 64, "PCIe Gen5 x16", 600,
     H100_SRC, HOPPER_NOTE},
    {"h200", "NVIDIA H200 SXM 141GB", 0, 4800, 67, 34, 67, 494.5, 989.5, 989.5, 1979, 64, "PCIe Gen5 x16", 900,
     H200_SRC, HOPPER_NOTE "; PCIe 128 GB/s published for both directions together"},
    {"h200_nvl", "NVIDIA H200 NVL 141GB", 0, 4800, 60, 30, 60, 417.5, 835.5, 835.5, 1670.5, 64, "PCIe Gen5 x16", 900,
     H200_SRC, HOPPER_NOTE "; NVLink through 2- or 4-GPU bridges"},
    {"a100_sxm", "NVIDIA A100 SXM4 80GB", 60, 2039, 19.5, 9.7, 19.5, 156, 312, 312, NA, 32, "PCIe Gen4 x16", 600,
     A100_SRC, "TF32/BF16/FP16 published dense and with sparsity; dense stored; no FP8 tensor cores"},
    {"a100_sxm", "NVIDIA A100 SXM4 40GB", 0, 1555, 19.5, 9.7, 19.5, 156, 312, 312, NA, 32, "PCIe Gen4 x16", 600,
     A100_SRC, "TF32/BF16/FP16 published dense and with sparsity; dense stored; no FP8 tensor cores"},
    {"a100_pcie", "NVIDIA A100 PCIe 80GB", 60, 1935, 19.5, 9.7, 19.5, 156, 312, 312, NA, 32, "PCIe Gen4 x16", 600,
     A100_SRC, "dense stored; NVLink through a 2-GPU bridge; no FP8 tensor cores"},
    {"a100_pcie", "NVIDIA A100 PCIe 40GB", 0, 1555, 19.5, 9.7, 19.5, 156, 312, 312, NA, 32, "PCIe Gen4 x16", 600,
     A100_SRC, "dense stored; NVLink through a 2-GPU bridge; no FP8 tensor cores"},
    {"l40s", "NVIDIA L40S 48GB", 0, 864, 91.6, NA, NA, 183, 362, 362, 733, 32, "PCIe Gen4 x16", NA,
     "NVIDIA L40S datasheet, https://www.nvidia.com/en-us/data-center/l40s/",
     "tensor figures published dense and with sparsity; dense stored; FP64 not published; no NVLink"},
    {"b200", "NVIDIA B200 (HGX B200) 180GB", 0, 7700, 75, 37, 37, 1100, 2250, 2250, 4500, 64, "PCIe Gen5 x16", 1800,
     BLACKWELL_SRC, BLACKWELL_NOTE},
    {"gb200", "NVIDIA GB200 (one Blackwell GPU) 186GB", 0, 8000, 80, 40, 40, 1250, 2500, 2500, 5000, NA,
     "NVLink-C2C to Grace", 1800, BLACKWELL_SRC,
     BLACKWELL_NOTE "; the host link is NVLink-C2C, 900 GB/s per superchip shared by its two GPUs"},
    {"gb10", "NVIDIA GB10 (DGX Spark) 128GB unified", 0, 273, NA, NA, NA, NA, NA, NA, NA, NA,
     "NVLink-C2C (unified memory)", NA,
     "NVIDIA DGX Spark, https://www.nvidia.com/en-us/products/workstations/dgx-spark/",
     "only the LPDDR5x bandwidth and the FP4 figure (1 PFLOP with sparsity) are published; the others are unknown"},
};

const pl_datasheet *pl_datasheet_find(const char *gpu_name, double memory_gib)
{
    if (!gpu_name || !*gpu_name)
        return NULL;
    char *key = pl_hardware_key_from_names(&gpu_name, 1);
    const pl_datasheet *found = NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0] && !found; i++)
        if (strcmp(table[i].key, key) == 0 && (isnan(memory_gib) || memory_gib >= table[i].min_memory_gib))
            found = &table[i];
    free(key);
    return found;
}
