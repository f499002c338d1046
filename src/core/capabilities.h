/* hardware_capabilities.json: what `perflab probe` found each GPU of this machine can really do (each feature a
 * tiny kernel whose result was checked), and the lookup that lets those measurements, not the compute
 * capability alone, decide a target's feature requirements. The file lives next to the run folders:
 * <artifacts-dir>/hardware_capabilities.json, or wherever $PERFLAB_CAPABILITIES points. */
#ifndef PERFLAB_HW_CAPABILITIES_H
#define PERFLAB_HW_CAPABILITIES_H

#include <jansson.h>
#include <stddef.h>

#include "perflab/ctx.h"

#define PL_CAPABILITIES_FILE           "hardware_capabilities.json"
#define PL_CAPABILITIES_SCHEMA_VERSION 1

typedef enum pl_probe_status {
    PL_PROBE_PASSED,        /* the kernel ran and its result was right */
    PL_PROBE_FAILED,        /* it should work here but did not: launch error, wrong result, crash, hang */
    PL_PROBE_NOT_AVAILABLE, /* this GPU or this build lacks it (the detail says which) */
    PL_PROBE_STATUS_COUNT
} pl_probe_status;

const char *pl_probe_status_name(pl_probe_status s);
int pl_probe_status_from_name(const char *name); /* -1 when unknown */

typedef struct pl_probe_result {
    char *name; /* "clusters", "tma", "wgmma", "tcgen05", "fp8_mma", "cooperative_launch" */
    pl_probe_status status;
    char *detail; /* what was checked and what was found, one line */
    double value; /* a figure the probe found (largest cluster, co-resident blocks), NAN if none */
    double ms;    /* wall time of the probe */
} pl_probe_result;

typedef struct pl_gpu_capabilities {
    int ordinal;
    char *name;
    char *pci_bus_id;
    char *uuid;
    int cc_major, cc_minor;
    char *driver_version;
    char *probed_at; /* ISO 8601 */
    pl_probe_result *probes;
    size_t n_probes;
} pl_gpu_capabilities;

typedef struct pl_capabilities {
    int schema_version;
    char *updated_at;
    char *perflab_version;
    pl_gpu_capabilities *gpus;
    size_t n_gpus;
} pl_capabilities;

json_t *pl_capabilities_to_json(const pl_capabilities *c);
/* -1 with "KEY: what is wrong" (e.g. "gpus[0].probes[2].status: expected passed, failed or not_available,
 * found 'ok'") when the document is not a capabilities file. */
int pl_capabilities_from_json(json_t *j, pl_capabilities *out, char *err, size_t errlen);
/* 0 loaded, 1 no such file (*out empty), -1 malformed (err names the file and the problem). */
int pl_capabilities_load(const char *path, pl_capabilities *out, char *err, size_t errlen);
int pl_capabilities_save(const pl_capabilities *c, const char *path, char *err, size_t errlen);
/* Replace the entry of the same GPU (name and PCI bus id), or append; takes *gpu's contents (zeroed). */
void pl_capabilities_merge(pl_capabilities *c, pl_gpu_capabilities *gpu);
const pl_gpu_capabilities *pl_capabilities_for_gpu(const pl_capabilities *c, const char *name, const char *pci_bus_id);
const pl_probe_result *pl_capabilities_probe(const pl_gpu_capabilities *g, const char *probe_name);
void pl_gpu_capabilities_free(pl_gpu_capabilities *g);
void pl_capabilities_free(pl_capabilities *c);

/* The probe that decides a PL_FEAT_* bit, or NULL. */
const char *pl_feature_probe_name(unsigned feature_bit);

/* $PERFLAB_CAPABILITIES if set, else <artifacts_dir>/hardware_capabilities.json. malloc'd. */
char *pl_capabilities_path(const char *artifacts_dir);
/* The file of <artifacts_dir> (or $PERFLAB_CAPABILITIES) for a run's requirements checks: a missing file gives
 * empty capabilities; a malformed one is said on stderr once and ignored (requirements are then judged from the
 * compute capability). Never fails. */
void pl_capabilities_load_for_run(const char *artifacts_dir, pl_capabilities *out);
/* For the requirements check: 1 when the probe for the feature passed on this GPU, 0 when it did not (why:
 * what it found), -1 when there is no measured answer (caps NULL, no entry for this GPU, no such probe). */
int pl_capabilities_feature(const pl_capabilities *caps, const pl_device_info *d, unsigned feature_bit, char *why,
                            size_t whylen);

#endif
