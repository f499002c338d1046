#include "core/capabilities.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "perflab/target.h"

static const char *const status_names[PL_PROBE_STATUS_COUNT] = {"passed", "failed", "not_available"};

const char *pl_probe_status_name(pl_probe_status s)
{
    return pl_name_of(status_names, PL_PROBE_STATUS_COUNT, (int)s);
}

int pl_probe_status_from_name(const char *name)
{
    return pl_index_of(status_names, PL_PROBE_STATUS_COUNT, name);
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *pl_capabilities_to_json(const pl_capabilities *c)
{
    json_t *gpus = json_array();
    for (size_t i = 0; i < c->n_gpus; i++) {
        const pl_gpu_capabilities *g = &c->gpus[i];
        json_t *probes = json_array();
        for (size_t k = 0; k < g->n_probes; k++) {
            const pl_probe_result *p = &g->probes[k];
            json_t *pj = json_pack("{s:s, s:s, s:o}", "name", p->name, "status", pl_probe_status_name(p->status),
                                   "detail", str_or_null(p->detail));
            if (!isnan(p->value))
                json_object_set_new(pj, "value", json_real(p->value));
            json_object_set_new(pj, "ms", pl_json_real(p->ms));
            json_array_append_new(probes, pj);
        }
        json_array_append_new(gpus, json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "ordinal", g->ordinal, "name",
                                              str_or_null(g->name), "pci_bus_id", str_or_null(g->pci_bus_id), "uuid",
                                              str_or_null(g->uuid), "compute_capability",
                                              json_sprintf("%d.%d", g->cc_major, g->cc_minor), "driver_version",
                                              str_or_null(g->driver_version), "probed_at", str_or_null(g->probed_at),
                                              "probes", probes));
    }
    return json_pack("{s:i, s:s, s:o, s:o, s:o}", "schema_version", PL_CAPABILITIES_SCHEMA_VERSION, "kind",
                     "perflab.hardware_capabilities", "updated_at", str_or_null(c->updated_at), "perflab_version",
                     str_or_null(c->perflab_version), "gpus", gpus);
}

/* A string member, required or not; -1 with the key's path in err when it has the wrong type. */
static int get_string(json_t *o, const char *key, const char *path, int required, char **out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if ((!v || json_is_null(v)) && !required)
        return 0;
    if (!json_is_string(v)) {
        pl_snprintf(err, errlen, "%s%s: expected a string, found %s", path, key, v ? "another type" : "nothing");
        return -1;
    }
    *out = pl_strdup(json_string_value(v));
    return 0;
}

static int probe_from_json(json_t *pj, const char *path, pl_probe_result *p, char *err, size_t errlen)
{
    if (!json_is_object(pj)) {
        pl_snprintf(err, errlen, "%s: expected an object", path);
        return -1;
    }
    char *status = NULL;
    char *prefix = pl_strfmt("%s.", path);
    int rc = get_string(pj, "name", prefix, 1, &p->name, err, errlen);
    if (rc == 0)
        rc = get_string(pj, "status", prefix, 1, &status, err, errlen);
    if (rc == 0)
        rc = get_string(pj, "detail", prefix, 0, &p->detail, err, errlen);
    if (rc == 0) {
        int s = pl_probe_status_from_name(status);
        if (s < 0) {
            pl_snprintf(err, errlen, "%s.status: expected passed, failed or not_available, found '%s'", path,
                        PL_ESC(status));
            rc = -1;
        }
        p->status = (pl_probe_status)(s < 0 ? 0 : s);
    }
    json_t *v = json_object_get(pj, "value");
    p->value = json_is_number(v) ? json_number_value(v) : NAN;
    p->ms = pl_json_get_real(pj, "ms");
    free(status);
    free(prefix);
    return rc;
}

static int gpu_from_json(json_t *gj, size_t index, pl_gpu_capabilities *g, char *err, size_t errlen)
{
    char path[64];
    pl_snprintf(path, sizeof path, "gpus[%zu].", index);
    if (!json_is_object(gj)) {
        pl_snprintf(err, errlen, "gpus[%zu]: expected an object", index);
        return -1;
    }
    char *cc = NULL;
    if (get_string(gj, "name", path, 1, &g->name, err, errlen) ||
        get_string(gj, "pci_bus_id", path, 1, &g->pci_bus_id, err, errlen) ||
        get_string(gj, "uuid", path, 0, &g->uuid, err, errlen) ||
        get_string(gj, "driver_version", path, 0, &g->driver_version, err, errlen) ||
        get_string(gj, "probed_at", path, 0, &g->probed_at, err, errlen) ||
        get_string(gj, "compute_capability", path, 0, &cc, err, errlen))
        return -1;
    if (cc && sscanf(cc, "%d.%d", &g->cc_major, &g->cc_minor) != 2)
        g->cc_major = g->cc_minor = 0;
    free(cc);
    g->ordinal = (int)json_integer_value(json_object_get(gj, "ordinal"));
    json_t *probes = json_object_get(gj, "probes");
    if (!json_is_array(probes)) {
        pl_snprintf(err, errlen, "%sprobes: expected an array", path);
        return -1;
    }
    g->n_probes = json_array_size(probes);
    g->probes = pl_xcalloc(g->n_probes ? g->n_probes : 1, sizeof *g->probes);
    for (size_t k = 0; k < g->n_probes; k++) {
        char ppath[96];
        pl_snprintf(ppath, sizeof ppath, "%sprobes[%zu]", path, k);
        if (probe_from_json(json_array_get(probes, k), ppath, &g->probes[k], err, errlen) != 0)
            return -1;
    }
    return 0;
}

int pl_capabilities_from_json(json_t *j, pl_capabilities *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(j)) {
        pl_snprintf(err, errlen, "expected a JSON object");
        return -1;
    }
    json_t *version = json_object_get(j, "schema_version");
    if (!json_is_integer(version) || json_integer_value(version) != PL_CAPABILITIES_SCHEMA_VERSION) {
        pl_snprintf(err, errlen, "schema_version: expected %d (run 'perflab probe' to write a current file)",
                    PL_CAPABILITIES_SCHEMA_VERSION);
        return -1;
    }
    out->schema_version = PL_CAPABILITIES_SCHEMA_VERSION;
    json_t *gpus = json_object_get(j, "gpus");
    if (!json_is_array(gpus)) {
        pl_snprintf(err, errlen, "gpus: expected an array");
        return -1;
    }
    if (get_string(j, "updated_at", "", 0, &out->updated_at, err, errlen) ||
        get_string(j, "perflab_version", "", 0, &out->perflab_version, err, errlen)) {
        pl_capabilities_free(out);
        return -1;
    }
    out->n_gpus = json_array_size(gpus);
    out->gpus = pl_xcalloc(out->n_gpus ? out->n_gpus : 1, sizeof *out->gpus);
    for (size_t i = 0; i < out->n_gpus; i++) {
        if (gpu_from_json(json_array_get(gpus, i), i, &out->gpus[i], err, errlen) != 0) {
            pl_capabilities_free(out);
            return -1;
        }
    }
    return 0;
}

static int read_capabilities(json_t *j, void *out, char *err, size_t errlen)
{
    return pl_capabilities_from_json(j, out, err, errlen);
}

int pl_capabilities_load(const char *path, pl_capabilities *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    return pl_json_load_as(path, read_capabilities, out, err, errlen);
}

int pl_capabilities_save(const pl_capabilities *c, const char *path, char *err, size_t errlen)
{
    json_t *j = pl_capabilities_to_json(c);
    int rc = pl_json_save_file(j, path, err, errlen);
    json_decref(j);
    return rc;
}

static int same_gpu(const pl_gpu_capabilities *g, const char *name, const char *pci_bus_id)
{
    return g->name && name && g->pci_bus_id && pci_bus_id && strcmp(g->name, name) == 0 &&
           strcasecmp(g->pci_bus_id, pci_bus_id) == 0;
}

void pl_capabilities_merge(pl_capabilities *c, pl_gpu_capabilities *gpu)
{
    size_t i = 0;
    while (i < c->n_gpus && !same_gpu(&c->gpus[i], gpu->name, gpu->pci_bus_id))
        i++;
    if (i == c->n_gpus)
        pl_push(&c->gpus, &c->n_gpus, NULL, sizeof *c->gpus);
    else
        pl_gpu_capabilities_free(&c->gpus[i]);
    c->gpus[i] = *gpu;
    memset(gpu, 0, sizeof *gpu);
}

const pl_gpu_capabilities *pl_capabilities_for_gpu(const pl_capabilities *c, const char *name, const char *pci_bus_id)
{
    for (size_t i = 0; i < c->n_gpus; i++)
        if (same_gpu(&c->gpus[i], name, pci_bus_id))
            return &c->gpus[i];
    return NULL;
}

const pl_probe_result *pl_capabilities_probe(const pl_gpu_capabilities *g, const char *probe_name)
{
    for (size_t k = 0; g && probe_name && k < g->n_probes; k++)
        if (g->probes[k].name && strcmp(g->probes[k].name, probe_name) == 0)
            return &g->probes[k];
    return NULL;
}

void pl_gpu_capabilities_free(pl_gpu_capabilities *g)
{
    for (size_t k = 0; k < g->n_probes; k++) {
        free(g->probes[k].name);
        free(g->probes[k].detail);
    }
    free(g->probes);
    free(g->name);
    free(g->pci_bus_id);
    free(g->uuid);
    free(g->driver_version);
    free(g->probed_at);
    memset(g, 0, sizeof *g);
}

void pl_capabilities_free(pl_capabilities *c)
{
    for (size_t i = 0; i < c->n_gpus; i++)
        pl_gpu_capabilities_free(&c->gpus[i]);
    free(c->gpus);
    free(c->updated_at);
    free(c->perflab_version);
    memset(c, 0, sizeof *c);
}

const char *pl_feature_probe_name(unsigned feature_bit)
{
    switch (feature_bit) {
    case PL_FEAT_WGMMA: return "wgmma";
    case PL_FEAT_TMA: return "tma";
    case PL_FEAT_CLUSTERS: return "clusters";
    case PL_FEAT_TCGEN05: return "tcgen05";
    case PL_FEAT_FP8: return "fp8_mma";
    default: return NULL;
    }
}

char *pl_capabilities_path(const char *artifacts_dir)
{
    const char *env = getenv("PERFLAB_CAPABILITIES");
    if (env && *env)
        return pl_strdup(env);
    return pl_path_join(artifacts_dir && *artifacts_dir ? artifacts_dir : "artifacts", PL_CAPABILITIES_FILE);
}

void pl_capabilities_load_for_run(const char *artifacts_dir, pl_capabilities *out)
{
    char *path = pl_capabilities_path(artifacts_dir);
    char err[512];
    if (pl_capabilities_load(path, out, err, sizeof err) < 0) {
        fprintf(stderr, "perflab: ignoring %s (requirements judged from the compute capability)\n", err);
        pl_capabilities_free(out);
    }
    free(path);
}

int pl_capabilities_feature(const pl_capabilities *caps, const pl_device_info *d, unsigned feature_bit, char *why,
                            size_t whylen)
{
    const char *probe = pl_feature_probe_name(feature_bit);
    if (!caps || !d || !probe)
        return -1;
    const pl_probe_result *p =
        pl_capabilities_probe(pl_capabilities_for_gpu(caps, d->name, d->pci_bus_id), probe);
    if (!p)
        return -1;
    if (p->status == PL_PROBE_PASSED)
        return 1;
    pl_snprintf(why, whylen, "the '%s' probe %s on this GPU (%s): %s", probe,
                p->status == PL_PROBE_FAILED ? "failed" : "found it not available",
                caps->updated_at ? caps->updated_at : PL_CAPABILITIES_FILE, p->detail ? p->detail : "");
    return 0;
}
