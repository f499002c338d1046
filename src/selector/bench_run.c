/* The parent side of the GPU providers: children walk the shapes and report one message per cell; a child that
 * dies, hangs past the per-shape timeout or loses its CUDA context costs the cells of the shape it was on, and a
 * new child goes on from the next shape. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/piped_child.h"
#include "core/util.h"
#include "selector/bench.h"

/* The comparison's column of each GPU provider (-1 when not asked for). */
static int column_of(const pl_gemm_comparison *cmp, const char *label)
{
    for (size_t p = 0; p < cmp->n_providers; p++)
        if (cmp->providers[p].kind != PL_PROV_JSON && strcmp(cmp->providers[p].label, label) == 0)
            return (int)p;
    return -1;
}

static void fail_shape(pl_gemm_comparison *cmp, size_t shape, const char *why)
{
    for (size_t p = 0; p < cmp->n_providers; p++) {
        pl_gemm_cell *cell = pl_gemm_cell_at(cmp, shape, p);
        if (pl_gemm_provider_needs_gpu(&cmp->providers[p]) && cell->status == PL_GEMM_MISSING)
            pl_gemm_cell_set(cell, PL_GEMM_FAILED, why);
    }
}

static void on_cell(const pl_gemm_bench_request *req, pl_gemm_comparison *cmp, json_t *msg)
{
    const size_t i = (size_t)json_integer_value(json_object_get(msg, "i"));
    const char *provider = json_string_value(json_object_get(msg, "provider"));
    const char *fallback = json_string_value(json_object_get(msg, "fallback"));
    const char *reason = json_string_value(json_object_get(msg, "reason"));
    int col = provider ? column_of(cmp, provider) : -1;
    if (i >= cmp->n_shapes || col < 0)
        return;
    pl_gemm_record_list tried = {0};
    json_t *records = json_object_get(msg, "records");
    for (size_t r = 0; r < json_array_size(records); r++) {
        pl_gemm_record rec;
        char err[256];
        if (pl_gemm_record_from_json(json_array_get(records, r), "record", &rec, err, sizeof err) == 0)
            pl_gemm_record_list_push(&tried, &rec);
    }
    int fb = fallback ? pl_gemm_status_from_name(fallback) : -1;
    pl_gemm_cell *cell = pl_gemm_cell_at(cmp, i, (size_t)col);
    pl_gemm_cell_settle(cell, &tried, fb < 0 ? PL_GEMM_FAILED : (pl_gemm_status)fb, reason && *reason ? reason : NULL);
    pl_gemm_cell_set_pick(cell, json_string_value(json_object_get(msg, "pick")));
    json_t *conf = json_object_get(msg, "confirm");
    pl_gemm_cell_set_confirm(cell, json_string_value(json_object_get(conf, "best")),
                             json_number_value(json_object_get(conf, "pick_ms")),
                             json_number_value(json_object_get(conf, "best_ms")),
                             (int)json_integer_value(json_object_get(conf, "rounds")));
    pl_gemm_record_list_free(&tried);
    if (req->progress) {
        if (cell->status == PL_GEMM_OK)
            fprintf(stderr, "perflab gemm: [%zu/%zu] %s %s: %.1f TFLOP/s (%s)\n", i + 1, cmp->n_shapes,
                    cmp->shapes[i].name, provider, cell->best.tflops, cell->best.kernel);
        else
            fprintf(stderr, "perflab gemm: [%zu/%zu] %s %s: %s: %s\n", i + 1, cmp->n_shapes, cmp->shapes[i].name,
                    provider, pl_gemm_status_name(cell->status), cell->reason);
    }
}

int pl_gemm_bench_run(const pl_gemm_bench_request *req, pl_gemm_comparison *cmp, const char *log_path)
{
    size_t next = 0;
    while (next < req->n_shapes) {
        pl_child c;
        if (pl_child_spawn(&c, log_path) != 0) {
            for (size_t s = next; s < req->n_shapes; s++)
                fail_shape(cmp, s, "cannot start the measuring process (fork failed)");
            return 0;
        }
        if (c.pid == 0) {
            pl_gemm_bench_child(req, next, c.fd);
            _exit(0);
        }
        size_t current = next;
        int done = 0, fatal = 0, lost = 0, r;
        char reason[700] = "";
        double deadline = pl_now_s() + req->timeout_s;
        json_t *msg;
        while ((r = pl_child_next(&c, deadline, &msg)) == 1) {
            const char *t = json_string_value(json_object_get(msg, "t"));
            if (t && strcmp(t, "shape") == 0) {
                current = (size_t)json_integer_value(json_object_get(msg, "i"));
                deadline = pl_now_s() + req->timeout_s;
            } else if (t && strcmp(t, "cell") == 0) {
                on_cell(req, cmp, msg);
            } else if (t && strcmp(t, "fatal") == 0) {
                fatal = 1;
                pl_snprintf(reason, sizeof reason, "%s", json_string_value(json_object_get(msg, "reason")));
            } else if (t && strcmp(t, "lost") == 0) {
                lost = 1;
            } else if (t && strcmp(t, "done") == 0) {
                done = 1;
            }
            json_decref(msg);
        }
        pl_child_end end;
        pl_child_finish(&c, r != 0, &end);
        if (r == -2)
            return -2;
        if (done)
            break;
        if (fatal) { /* the child could not even start on the GPU: nothing later would fare better */
            for (size_t s = current; s < req->n_shapes; s++)
                fail_shape(cmp, s, reason);
            break;
        }
        if (r == -1)
            pl_snprintf(reason, sizeof reason, "timed out after %.0f s on this shape (--timeout-s)", req->timeout_s);
        else if (lost)
            pl_snprintf(reason, sizeof reason, "not run: the CUDA context was lost by an earlier configuration");
        else
            pl_snprintf(reason, sizeof reason, "the measuring process %s", end.description);
        fail_shape(cmp, current, reason);
        next = current + 1;
    }
    return 0;
}
