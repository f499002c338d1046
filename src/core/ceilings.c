#include "core/ceilings.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ncu.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"

static const char *const names[PL_CEIL_COUNT] = {
    "hbm_gbps",    "l2_gbps",     "smem_gbps",  "fp32_tflops", "fp64_tflops", "bf16_tflops",
    "fp16_tflops", "tf32_tflops", "fp8_tflops", "h2d_gbps",    "d2h_gbps",
};

void pl_ceilings_init(pl_ceilings *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < PL_CEIL_COUNT; i++)
        c->value[i] = NAN;
}

void pl_ceilings_free(pl_ceilings *c)
{
    free(c->hardware_key);
    free(c->gpu_name);
    free(c->run_id);
    free(c->measured_at);
    for (int i = 0; i < PL_CEIL_COUNT; i++)
        free(c->source[i]);
    pl_ceilings_init(c);
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *pl_ceilings_to_json(const pl_ceilings *c)
{
    json_t *values = json_object();
    for (int i = 0; i < PL_CEIL_COUNT; i++)
        if (!isnan(c->value[i]))
            json_object_set_new(values, names[i],
                                json_pack("{s:f, s:o}", "value", c->value[i], "from", str_or_null(c->source[i])));
    return json_pack("{s:i, s:s, s:o, s:o, s:o, s:o, s:o}", "schema_version", PL_CEILINGS_SCHEMA_VERSION, "kind",
                     "perflab.ceilings", "hardware_key", str_or_null(c->hardware_key), "gpu_name",
                     str_or_null(c->gpu_name), "run_id", str_or_null(c->run_id), "measured_at",
                     str_or_null(c->measured_at), "ceilings", values);
}

static char *dup_string(json_t *o, const char *key)
{
    return pl_strdup(json_string_value(json_object_get(o, key)));
}

int pl_ceilings_from_json(json_t *j, pl_ceilings *out, char *err, size_t errlen)
{
    pl_ceilings_init(out);
    json_t *version = json_object_get(j, "schema_version");
    if (!json_is_object(j) || !json_is_integer(version) || json_integer_value(version) != PL_CEILINGS_SCHEMA_VERSION) {
        pl_snprintf(err, errlen, "schema_version: expected %d (run 'perflab peak' to write a current file)",
                    PL_CEILINGS_SCHEMA_VERSION);
        return -1;
    }
    json_t *values = json_object_get(j, "ceilings");
    if (!json_is_object(values)) {
        pl_snprintf(err, errlen, "ceilings: expected an object");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(values, key, v)
    {
        int id = pl_index_of(names, PL_CEIL_COUNT, key);
        json_t *value = json_object_get(v, "value");
        if (id < 0)
            continue; /* a newer perflab's ceiling: not ours to judge */
        if (!json_is_number(value) || json_number_value(value) <= 0) {
            pl_snprintf(err, errlen, "ceilings.%s.value: expected a positive number", key);
            pl_ceilings_free(out);
            return -1;
        }
        out->value[id] = json_number_value(value);
        out->source[id] = dup_string(v, "from");
    }
    out->hardware_key = dup_string(j, "hardware_key");
    out->gpu_name = dup_string(j, "gpu_name");
    out->run_id = dup_string(j, "run_id");
    out->measured_at = dup_string(j, "measured_at");
    return 0;
}

static int read_ceilings(json_t *j, void *out, char *err, size_t errlen)
{
    return pl_ceilings_from_json(j, out, err, errlen);
}

int pl_ceilings_load(const char *path, pl_ceilings *out, char *err, size_t errlen)
{
    pl_ceilings_init(out);
    return pl_json_load_as(path, read_ceilings, out, err, errlen);
}

int pl_ceilings_save(const pl_ceilings *c, const char *path, char *err, size_t errlen)
{
    json_t *j = pl_ceilings_to_json(c);
    int rc = pl_json_save_file(j, path, err, errlen);
    json_decref(j);
    return rc;
}

char *pl_ceilings_path(const char *artifacts_dir, const char *hardware_key)
{
    const char *env = getenv("PERFLAB_CEILINGS");
    if (env && *env)
        return pl_strdup(env);
    char *file = pl_strfmt("ceilings-%s.json", hardware_key);
    char *path = pl_path_join(artifacts_dir && *artifacts_dir ? artifacts_dir : "artifacts", file);
    free(file);
    return path;
}

/* A roofline run records the ceilings `perflab peak` stored for this GPU kind, so that its report never reads
 * them from disk later (they may have changed, or be elsewhere). */
void pl_run_load_ceilings(pl_run *run, const char *artifacts_dir, const char *verb)
{
    const pl_run *r = run;
    if (strcmp(r->settings.profile, "roofline") != 0 || r->prov.n_gpus == 0)
        return;
    run->profiler = pl_ncu_describe(); /* the counters' tool, or the line saying there are none */
    const char *name = pl_run_gpu(r)->name;
    char *key = pl_hardware_key_from_names(&name, 1);
    char *path = pl_ceilings_path(artifacts_dir, key);
    pl_ceilings *c = pl_xcalloc(1, sizeof *c);
    char err[512];
    int rc = pl_ceilings_load(path, c, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "perflab %s: ignoring %s (no %% of ceilings in this run)\n", verb, err);
    if (rc == 0) {
        run->ceilings = c;
    } else {
        pl_ceilings_free(c);
        free(c);
    }
    free(path);
    free(key);
}
