/* The HTML and SVG perflab writes, checked with expat (a conforming XML parser): well-formed XML, and no NaN or
 * infinity in any numeric attribute (a coordinate, a size, a path: what a browser would drop). Shared by test_report
 * and test_fuzz. */
#ifndef PERFLAB_TESTS_XMLCHECK_H
#define PERFLAB_TESTS_XMLCHECK_H

#include <stddef.h>

typedef struct pl_xml_stats {
    int elements, svgs, depth, max_depth;
} pl_xml_stats;

/* 0 when text is well-formed with clean attributes; else -1 with what and where in why. */
int pl_xml_check(const char *text, pl_xml_stats *stats, char *why, size_t len);

#endif
