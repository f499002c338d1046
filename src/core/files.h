/* One way of writing a report's files: into a folder (created first), each file atomically (temp + rename), text or
 * JSON (indented, keys in order). Every writer of artifacts goes through here. */
#ifndef PERFLAB_CORE_FILES_H
#define PERFLAB_CORE_FILES_H

#include <jansson.h>
#include <stddef.h>

typedef struct pl_report_file {
    const char *name; /* a plain file name inside the folder: no '/' and no "..", never taken from input */
    char *text;       /* the contents, or NULL when json is given */
    json_t *json;
} pl_report_file;

/* Writes every file into dir, stopping at the first failure (-1 with err naming the file). */
int pl_report_write_files(const char *dir, const pl_report_file *files, size_t n, char *err, size_t errlen);
/* A file name from a label that may come from a file or the command line: letters, digits, '.', '-' and '_' kept,
 * anything else '_' (so no '/' and no leading '.'), at most 96 characters, then `suffix`. malloc'd. */
char *pl_report_safe_name(const char *label, const char *suffix);

#endif
