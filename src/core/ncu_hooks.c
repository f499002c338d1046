/* ncu in a roofline run: the replays in the target's process, the counters onto the parent's results, and the
 * findings `perflab profile` prints (see ncu.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/piped_child.h"
#include "core/ncu.h"
#include "core/results_json.h"
#include "perflab/target_registry.h"

struct pl_ncu_replays {
    const pl_target *t;
    const pl_run_settings *s;
    char *ncu, *exe, *dir, *rel_dir;
    char **variants; /* verified and timed: the ones replayed */
    size_t n, cap;
};

pl_ncu_replays *pl_ncu_replays_new(const pl_target *t, const pl_run_settings *s, const char *run_dir)
{
    if (!s->profile || strcmp(s->profile, "roofline") != 0 || !t->req.needs_gpu || s->verify_only || !run_dir)
        return NULL;
    char *ncu = pl_ncu_find();
    if (!ncu)
        return NULL;
    pl_ncu_replays *r = pl_xcalloc(1, sizeof *r);
    r->t = t;
    r->s = s;
    r->ncu = ncu;
    r->exe = pl_self_exe();
    r->rel_dir = pl_strdup("ncu");
    r->dir = pl_path_join(run_dir, r->rel_dir);
    return r;
}

void pl_ncu_replays_note(pl_ncu_replays *r, const pl_variant_result *v)
{
    if (!r || (v->status != PL_STATUS_OK && v->status != PL_STATUS_UNVERIFIED))
        return;
    pl_reserve(&r->variants, &r->cap, r->n + 1, sizeof *r->variants);
    r->variants[r->n++] = pl_strdup(v->name);
}

static void send(int fd, json_t *m)
{
    pl_child_send(fd, m);
    json_decref(m);
}

void pl_ncu_replays_run(pl_ncu_replays *r, const pl_params *p, int fd)
{
    if (!r || r->n == 0)
        return;
    char full[256], err[512];
    pl_target_full_name(r->t, full, sizeof full);
    char *args = pl_ncu_params_args(p);
    int dir_ok = pl_mkdir_p(r->dir, err, sizeof err) == 0;
    for (size_t i = 0; i < r->n; i++) {
        send(fd, json_pack("{s:s, s:s, s:s}", "t", "progress", "variant", r->variants[i], "phase", "ncu replay"));
        pl_ncu_metrics m;
        pl_ncu_metrics_init(&m);
        char *name = pl_strfmt("%s_%s_%s", r->t->group, r->t->name, r->variants[i]);
        char *base = pl_path_join(r->dir, name);
        if (!dir_ok || !r->exe) {
            m.error = pl_strdup(!dir_ok ? err : "cannot find perflab's own executable (/proc/self/exe)");
        } else {
            pl_ncu_job job = {.ncu = r->ncu,
                              .exe = r->exe,
                              .target = full,
                              .variant = r->variants[i],
                              .params = args,
                              .device = r->s->device,
                              .seed = r->s->seed,
                              .out_base = base,
                              .timeout_s = 0};
            if (pl_ncu_profile(&job, &m, err, sizeof err) == 0)
                m.report = pl_strfmt("%s/%s.ncu-rep", r->rel_dir, name);
            else
                fprintf(stderr, "perflab: ncu replay of %s / %s: %s\n", full, r->variants[i], err);
        }
        json_t *msg =
            json_pack("{s:s, s:s, s:o}", "t", "ncu", "variant", r->variants[i], "metrics", pl_ncu_metrics_to_json(&m));
        send(fd, msg);
        pl_ncu_metrics_free(&m);
        free(name);
        free(base);
    }
    free(args);
}

void pl_ncu_replays_free(pl_ncu_replays *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->variants[i]);
    free(r->variants);
    free(r->ncu);
    free(r->exe);
    free(r->dir);
    free(r->rel_dir);
    free(r);
}

void pl_ncu_attach(json_t *msg, pl_target_result *r)
{
    const char *name = json_string_value(json_object_get(msg, "variant"));
    for (size_t i = 0; name && i < r->n_variants; i++) {
        pl_variant_result *v = &r->variants[i];
        if (strcmp(v->name, name) != 0)
            continue;
        pl_ncu_metrics m;
        char err[256];
        if (pl_ncu_metrics_from_json(json_object_get(msg, "metrics"), &m, err, sizeof err) != 0) {
            pl_ncu_metrics_free(&m);
            return;
        }
        if (v->has_ncu)
            pl_ncu_metrics_free(&v->ncu);
        v->ncu = m;
        v->has_ncu = 1;
        return;
    }
}

/* ---- findings ---- */

typedef struct unit {
    const char *name;
    double pct;
} unit;

void pl_ncu_findings(const pl_ncu_metrics *m, double counted_bytes, pl_buf *out)
{
    if (m->error) {
        pl_buf_printf(out, "no counters: %s\n", m->error);
        return;
    }
    const double measured = m->dram_bytes_read + m->dram_bytes_write;
    const double ratio = pl_ncu_dram_ratio(m, counted_bytes);
    if (!isnan(ratio)) {
        if (ratio > 1.25)
            pl_buf_printf(out,
                          "DRAM traffic is %.2fx the bytes the work must move (%.4g of %.4g MB): accesses that "
                          "fetch more than they use (uncoalesced, strided, or re-read after eviction)\n",
                          ratio, measured / 1e6, counted_bytes / 1e6);
        else if (ratio < 0.8)
            pl_buf_printf(out,
                          "DRAM traffic is %.2fx the counted bytes (%.4g of %.4g MB): part of the data was served "
                          "from L2, or the counters overstate what the work must move\n",
                          ratio, measured / 1e6, counted_bytes / 1e6);
        else
            pl_buf_printf(out, "DRAM traffic matches the counted bytes: %.2fx (%.4g of %.4g MB)\n", ratio,
                          measured / 1e6, counted_bytes / 1e6);
    }
    const unit units[] = {{"DRAM", m->dram_pct}, {"L2", m->l2_pct},
                          {"L1", m->l1_pct},     {"shared memory", m->shared_pct},
                          {"SM", m->sm_pct},     {"tensor pipe", m->tensor_pct}};
    const unit *top = NULL;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!isnan(units[i].pct) && (!top || units[i].pct > top->pct))
            top = &units[i];
    if (top && top->pct >= 60)
        pl_buf_printf(out, "bound by %s: %.1f%% of its peak throughput (the busiest unit)\n", top->name, top->pct);
    else if (top)
        pl_buf_printf(out,
                      "no unit near its peak (the busiest, %s, at %.1f%%): latency-bound: too little work in "
                      "flight, dependent accesses, or too short a kernel\n",
                      top->name, top->pct);
    if (!isnan(m->occupancy_pct) && m->occupancy_pct < 25)
        pl_buf_printf(out, "low achieved occupancy: %.1f%% of the warps an SM can hold\n", m->occupancy_pct);
    if (!isnan(m->bank_conflicts) && m->bank_conflicts > 0 && m->shared_wavefronts > 0 &&
        m->bank_conflicts / m->shared_wavefronts > 0.05)
        pl_buf_printf(out, "shared-memory bank conflicts: %.4g of %.4g wavefronts (%.0f%%)\n", m->bank_conflicts,
                      m->shared_wavefronts, 100 * m->bank_conflicts / m->shared_wavefronts);
    if (m->kernels > 0)
        pl_buf_printf(out,
                      "%d kernel%s profiled, %.4g ms in all (one replay; ncu flushes the caches before each "
                      "pass)\n",
                      m->kernels, m->kernels == 1 ? "" : "s", m->duration_ms);
}
