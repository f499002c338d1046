/* The heatmap moved into the chart module (report/chart.h: pl_chart_heatmap, pl_svg_heatmap, pl_xml_escape); this
 * header stays for the code that includes it by its old name. */
#ifndef PERFLAB_COMM_SVG_H
#define PERFLAB_COMM_SVG_H

#include "report/chart.h"

#endif
