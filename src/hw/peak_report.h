/* The parent side of `perflab peak`: every figure the tasks sent, judged against the datasheet, the same-run
 * comparisons the numbers must pass to be trusted, the table, peak.json and the ceilings file. */
#ifndef PERFLAB_HW_PEAK_REPORT_H
#define PERFLAB_HW_PEAK_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "core/ceilings.h"
#include "hw/datasheet.h"
#include "hw/peak.h"
#include "perflab/results.h"

#define PL_PEAK_SCHEMA_VERSION 1

/* A new document for the run (provenance copied in). */
json_t *pl_peak_doc_new(const char *run_id, const pl_provenance *prov, const pl_peak_options *o,
                        const pl_device_info *dev);
/* One message from a task: a figure, or {"task", "lost"} for a task whose process died or hung. */
void pl_peak_doc_add(json_t *doc, json_t *msg);
/* Attach the datasheet figure and % of it to every figure, and compute the checks. */
void pl_peak_doc_judge(json_t *doc, const pl_datasheet *sheet);
/* The datasheet figure a figure's "datasheet_key" names (NAN when the table has none). */
double pl_peak_datasheet_value(const pl_datasheet *sheet, const char *key);
/* 1 when a figure failed or a task was lost, else 0. */
int pl_peak_doc_failed(json_t *doc);
void pl_peak_print(json_t *doc, FILE *out);
/* Overwrite the ceilings this run measured (ok figures only): a partial run keeps the others as stored. */
void pl_peak_fill_ceilings(json_t *doc, pl_ceilings *c);

/* peak.json and summary.md into run_dir (created first), each atomically. */
int pl_peak_report_write(const char *run_dir, json_t *doc, char *err, size_t errlen);

#endif
