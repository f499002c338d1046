/* The stored ceilings of a GPU for the floor executor (serve_ceilings.h). */
#include "serve/serve_ceilings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ceilings.h"
#include "core/provenance.h"
#include "core/util.h"
#include "serve/perflab_child.h"

int pl_serve_ceil_load(const char *artifacts_dir, const char *gpu_name, int fp8, pl_serve_ceil *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *names[] = {gpu_name};
    char *key = pl_hardware_key(names, 1), *path = pl_ceilings_path(artifacts_dir, key);
    pl_ceilings c;
    int rc = pl_ceilings_load(path, &c, err, errlen);
    if (rc == 1)
        pl_snprintf(err, errlen, "no ceilings stored for %s (%s)", key, path);
    if (rc == 0) {
        const pl_ceiling_id t = fp8 ? PL_CEIL_FP8_TFLOPS : PL_CEIL_BF16_TFLOPS;
        out->hbm_gbps = c.value[PL_CEIL_HBM_GBPS];
        out->tensor_tflops = c.value[t];
        if (!(isfinite(out->hbm_gbps) && out->hbm_gbps > 0 && isfinite(out->tensor_tflops) && out->tensor_tflops > 0)) {
            pl_snprintf(err, errlen, "%s holds no %s figure: measure it with perflab peak --only memory,tensor", path,
                        isfinite(out->hbm_gbps) && out->hbm_gbps > 0 ? (fp8 ? "FP8 tensor" : "BF16 tensor")
                                                                     : "device-memory");
            rc = 1;
        } else {
            pl_snprintf(out->source, sizeof out->source, "measured by perflab peak on %s at %s (run %s; %s)",
                        c.gpu_name ? c.gpu_name : key, c.measured_at ? c.measured_at : "?", c.run_id ? c.run_id : "?",
                        path);
        }
    }
    pl_ceilings_free(&c);
    free(key);
    free(path);
    return rc;
}

int pl_serve_ceil_measure(const char *artifacts_dir, const char *gpu_name, int device, int fp8, const char *log_path,
                          pl_serve_ceil *out, char *err, size_t errlen)
{
    char why[512];
    int rc = pl_serve_ceil_load(artifacts_dir, gpu_name, fp8, out, why, sizeof why);
    if (rc == 0)
        return 0;
    if (rc < 0) {
        pl_snprintf(err, errlen, "%s", why);
        return -1;
    }
    char dev[16];
    pl_snprintf(dev, sizeof dev, "%d", device);
    const char *args[] = {"peak",     "--quick", "--quiet",         "--only",      "memory,tensor",
                          "--device", dev,       "--artifacts-dir", artifacts_dir, NULL};
    pl_child_end end;
    /* exit 1: a figure failed its check; the others are stored, and the load below says whether these two are */
    if (pl_perflab_child_run(args, NULL, log_path, 900, &end) != 0 || !end.exited || end.exit_code > 1) {
        pl_snprintf(err, errlen,
                    "%s; measuring them with perflab peak %s (log: %s): give --hbm-gbps and "
                    "--tensor-tflops instead",
                    why, end.description, log_path ? log_path : "none");
        return -1;
    }
    if (pl_serve_ceil_load(artifacts_dir, gpu_name, fp8, out, why, sizeof why) != 0) {
        pl_snprintf(err, errlen, "after perflab peak: %s", why);
        return -1;
    }
    return 0;
}
