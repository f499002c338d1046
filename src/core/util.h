/* Small helpers the whole code base shares: allocation that cannot fail silently, strings, a growable buffer,
 * files written atomically, and "did you mean" suggestions. */
#ifndef PERFLAB_CORE_UTIL_H
#define PERFLAB_CORE_UTIL_H

#include <stdarg.h>
#include <stddef.h>

#include "perflab/text.h" /* pl_snprintf */
#include "core/escape.h"

/* Abort with a message on out-of-memory: there is no sensible way on for a benchmark harness. */
void *pl_xmalloc(size_t n);
void *pl_xcalloc(size_t count, size_t size);
void *pl_xrealloc(void *p, size_t n);
char *pl_strdup(const char *s); /* NULL stays NULL */
char *pl_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *pl_vstrfmt(const char *fmt, va_list ap);

/* Make room for `need` elements of `size` bytes in *arr (capacity *cap, doubled as needed). */
void pl_reserve(void *arr, size_t *cap, size_t need, size_t size);
/* The one way to grow a list: append a zeroed element to *arr (*n used of *cap; pass cap NULL when the list keeps
 * no capacity: it then grows by one) and return it. */
void *pl_push(void *arr, size_t *n, size_t *cap, size_t size);

/* Enum <-> name through a table indexed by the enum: "unknown" / -1 when out of range or not found. */
const char *pl_name_of(const char *const *names, int count, int value);
int pl_index_of(const char *const *names, int count, const char *name);

/* A growable string. */
typedef struct pl_buf {
    char *data;
    size_t len, cap;
} pl_buf;
void pl_buf_append(pl_buf *b, const char *s);
void pl_buf_appendn(pl_buf *b, const char *s, size_t n);
void pl_buf_printf(pl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pl_buf_free(pl_buf *b);

/* Seconds on a monotonic clock. */
double pl_now_s(void);
void pl_sleep_s(double s);

/* Write a whole file through a temporary name in the same folder and rename(2) it into place, so a reader
 * never sees half a file. Returns -1 with a one-line message on failure. */
int pl_write_file_atomic(const char *path, const char *data, size_t len, char *err, size_t errlen);
/* The whole of a regular file, NUL-terminated (*len counts its bytes, NULs inside included); NULL with a message
 * on failure, for anything that is not a regular file (a device such as /dev/zero, a FIFO, a socket, a directory;
 * a symbolic link is followed) and for a file larger than max_bytes (PL_READ_FILE_MAX for pl_read_file). */
#define PL_READ_FILE_MAX ((size_t)256 << 20)
char *pl_read_file(const char *path, size_t *len, char *err, size_t errlen);
char *pl_read_file_max(const char *path, size_t max_bytes, size_t *len, char *err, size_t errlen);
/* mkdir -p. */
int pl_mkdir_p(const char *path, char *err, size_t errlen);
int pl_path_exists(const char *path);
int pl_is_dir(const char *path);
/* Would creating files under dir work (it is a writable directory, or the nearest existing ancestor is)? Checked
 * without creating anything, so that a command that stops early leaves nothing behind. `what` names the directory
 * and `flag` the option that sets it, for the one-line message ("artifacts directory", "--artifacts-dir"). */
int pl_dir_usable(const char *dir, const char *what, const char *flag, char *err, size_t errlen);
/* Join two path parts with one '/'. malloc'd. */
char *pl_path_join(const char *a, const char *b);
/* folder/<sub>/file for the first sub-folder (in readdir's order, dot entries skipped) that holds `file`: a run
 * folder under an artifacts directory. malloc'd, or NULL. */
char *pl_file_in_subfolder(const char *folder, const char *file);

/* Levenshtein distance, for "did you mean". */
size_t pl_edit_distance(const char *a, const char *b);
/* Up to `max` of `candidates` closest to `word` (distance <= max(2, len/3), or a prefix/substring match),
 * joined as "'a', 'b'" into out. Returns how many were found. Bounded work whatever the input: a word longer than
 * PL_SUGGEST_MAX_LEN gets no suggestion, and only the first PL_SUGGEST_MAX_CANDIDATES candidates are compared. */
#define PL_SUGGEST_MAX_LEN        128
#define PL_SUGGEST_MAX_CANDIDATES 4096
int pl_suggest_indices(const char *word, const char *const *candidates, size_t n, int max, size_t *out);
int pl_suggest(const char *word, const char *const *candidates, size_t n, int max, char *out, size_t outlen);

/* "12.3 µs", "4.56 ms", "1.20 s" for a time in milliseconds. */
const char *pl_format_ms(double ms, char *buf, size_t len);

#endif
