/* The scenario's page: summary.md and report.json (scenario.h). */
#include <stdlib.h>

#include "core/results_json.h"
#include "core/table.h"
#include "core/util.h"
#include "serve/scenario.h"

static const char *exit_meaning(int code)
{
    return code == 0   ? "every phase that could run passed"
           : code == 1 ? "a phase failed"
                       : "nothing could run on a GPU";
}

char *pl_scenario_summary_md(const pl_scenario *s)
{
    pl_buf b = {0};
    pl_buf_printf(&b, "# perflab scenario fullstack\n\n- run id: %s\n", s->run_id);
    if (s->inv.usable && s->inv.device_count > 0)
        pl_buf_printf(&b, "- GPUs: %d x %s\n", s->inv.device_count, s->inv.devices[0].name);
    else
        pl_buf_printf(&b, "- GPUs: none usable (%s)\n", s->inv.error[0] ? s->inv.error : "unknown reason");
    pl_buf_printf(&b, "- exit code %d: %s\n\n", s->exit_code, exit_meaning(s->exit_code));
    static const char *const cols[] = {"phase", "status", ">seconds", "headline, or why not"};
    pl_table *t = pl_table_new(4, cols);
    for (int i = 0; i < PL_SCENARIO_PHASES; i++) {
        const pl_scenario_phase *p = &s->phases[i];
        size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "%s", p->name);
        pl_table_set(t, row, 1, "%s", pl_phase_status_name(p->status));
        if (p->command)
            pl_table_set(t, row, 2, "%.1f", p->seconds);
        else
            pl_table_set(t, row, 2, "-");
        pl_table_set(t, row, 3, "%s%s%s", p->headline_text, p->headline_text[0] && p->reason[0] ? "; " : "", p->reason);
    }
    pl_table_markdown(t, &b);
    pl_table_free(t);
    for (int i = 0, first = 1; i < PL_SCENARIO_PHASES; i++) {
        if (!s->phases[i].command)
            continue;
        if (first)
            pl_buf_append(&b, "\nEach phase ran as a perflab process of its own; its folder and its log "
                              "(logs/<phase>.log) are beside this page:\n\n");
        first = 0;
        pl_buf_printf(&b, "- %s: `%s`\n", s->phases[i].name, s->phases[i].command);
    }
    return b.data;
}

json_t *pl_scenario_report_json(const pl_scenario *s)
{
    json_t *phases = json_array();
    for (int i = 0; i < PL_SCENARIO_PHASES; i++) {
        const pl_scenario_phase *p = &s->phases[i];
        json_array_append_new(phases,
                              json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:o, s:o, s:O, s:s, s:b}", "name", p->name,
                                        "status", pl_phase_status_name(p->status), "reason", p->reason, "command",
                                        p->command, "folder", p->command ? p->folder : NULL, "exit_code",
                                        p->exit_code >= 0 ? json_integer(p->exit_code) : json_null(), "seconds",
                                        p->command ? pl_json_real(p->seconds) : json_null(), "headline", p->headline,
                                        "headline_text", p->headline_text, "needs_gpu", p->needs_gpu));
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:i, s:s}", "schema", PL_SCENARIO_SCHEMA, "kind", "scenario",
                     "scenario", "fullstack", "run_id", s->run_id, "gpus",
                     s->inv.usable
                         ? json_pack("{s:i, s:s}", "count", s->inv.device_count, "name", s->inv.devices[0].name)
                         : json_pack("{s:i, s:s}", "count", 0, "why_none", s->inv.error),
                     "phases", phases, "exit_code", s->exit_code, "exit_meaning", exit_meaning(s->exit_code));
}
