/* Each scenario phase's headline figures, read from what the phase wrote in its folder (internal to src/serve). */
#ifndef PERFLAB_SERVE_SCENARIO_HEADLINE_H
#define PERFLAB_SERVE_SCENARIO_HEADLINE_H

#include "serve/scenario.h"

/* Sets p->headline and p->headline_text from `folder` (absolute or relative to the cwd). */
void pl_scenario_headline_hw(const pl_scenario *s, pl_scenario_phase *p, const char *folder);
void pl_scenario_headline_peak(const pl_scenario *s, pl_scenario_phase *p, const char *folder);
void pl_scenario_headline_run(const pl_scenario *s, pl_scenario_phase *p, const char *folder);
void pl_scenario_headline_moe(const pl_scenario *s, pl_scenario_phase *p, const char *folder);
void pl_scenario_headline_serve(const pl_scenario *s, pl_scenario_phase *p, const char *folder);

#endif
