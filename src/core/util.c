#include "core/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void *pl_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "perflab: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

void *pl_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "perflab: out of memory (%zu x %zu bytes)\n", count, size);
        abort();
    }
    return p;
}

void *pl_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "perflab: out of memory (%zu bytes)\n", n);
        abort();
    }
    return q;
}

char *pl_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    return memcpy(pl_xmalloc(n), s, n);
}

char *pl_vstrfmt(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        n = 0;
    char *s = pl_xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *pl_strfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = pl_vstrfmt(fmt, ap);
    va_end(ap);
    return s;
}

/* Drop a UTF-8 sequence that a cut at the end of s left incomplete. */
static void trim_partial_utf8(char *s)
{
    const size_t len = strlen(s);
    size_t lead = len;
    while (lead > 0 && ((unsigned char)s[lead - 1] & 0xc0) == 0x80)
        lead--;
    if (lead == 0 || (unsigned char)s[lead - 1] < 0xc0)
        return;
    const unsigned char c = (unsigned char)s[lead - 1];
    const size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    if (len - (lead - 1) < need)
        s[lead - 1] = '\0';
}

void pl_snprintf(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n >= len)
        trim_partial_utf8(buf); /* cut to fit: never inside a character */
}

void pl_reserve(void *arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void **p = arr;
    *p = pl_xrealloc(*p, c * size);
    *cap = c;
}

void *pl_push(void *arr, size_t *n, size_t *cap, size_t size)
{
    void **p = arr;
    if (cap)
        pl_reserve(arr, cap, *n + 1, size);
    else
        *p = pl_xrealloc(*p, (*n + 1) * size);
    char *e = (char *)*p + *n * size;
    memset(e, 0, size);
    (*n)++;
    return e;
}

const char *pl_name_of(const char *const *names, int count, int value)
{
    return value >= 0 && value < count && names[value] ? names[value] : "unknown";
}

int pl_index_of(const char *const *names, int count, const char *name)
{
    for (int i = 0; name && i < count; i++)
        if (names[i] && strcmp(names[i], name) == 0)
            return i;
    return -1;
}

void pl_buf_appendn(pl_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = pl_xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void pl_buf_append(pl_buf *b, const char *s)
{
    pl_buf_appendn(b, s, strlen(s));
}

void pl_buf_printf(pl_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = pl_vstrfmt(fmt, ap);
    va_end(ap);
    pl_buf_append(b, s);
    free(s);
}

void pl_buf_free(pl_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

double pl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void pl_sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Temporary files "<name>.tmp.<pid>" of this path whose process is gone (killed between the open and the rename):
 * removed at the next write, so that no kill leaves them behind for good. A live process's file is left alone. */
static void remove_stale_temps(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? pl_strfmt("%.*s", (int)(slash == path ? 1 : slash - path), path) : pl_strdup(".");
    const char *base = slash ? slash + 1 : path;
    char *prefix = pl_strfmt("%s.tmp.", base);
    const size_t plen = strlen(prefix);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, plen) != 0)
            continue;
        char *end;
        errno = 0;
        const long pid = strtol(e->d_name + plen, &end, 10);
        if (*end || errno || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char *stale = pl_path_join(dir, e->d_name);
        unlink(stale);
        free(stale);
    }
    if (d)
        closedir(d);
    free(prefix);
    free(dir);
}

int pl_write_file_atomic(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    remove_stale_temps(path);
    char *tmp = pl_strfmt("%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        pl_snprintf(err, errlen, "cannot write '%s': %s", PL_ESC(path), strerror(errno));
        free(tmp);
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            pl_snprintf(err, errlen, "cannot write '%s': %s", PL_ESC(path), strerror(errno));
            close(fd);
            unlink(tmp);
            free(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 && errno != EINVAL) {
        /* fsync is best effort (some file systems refuse it); the rename below still gives atomicity */
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        pl_snprintf(err, errlen, "cannot write '%s': %s", PL_ESC(path), strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

char *pl_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    return pl_read_file_max(path, PL_READ_FILE_MAX, len, err, errlen);
}

/* Opened without blocking (a FIFO would wait for a writer), then checked to be a regular file on the descriptor
 * itself, so that a name swapped between a check and the open cannot get past it. */
static int open_regular(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        pl_snprintf(err, errlen, "cannot read '%s': %s", PL_ESC(path), strerror(errno));
        return -1;
    }
    struct stat st = {0};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        pl_snprintf(err, errlen, "cannot read '%s': %s", PL_ESC(path),
                    S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file (a device, FIFO or socket)");
        close(fd);
        return -1;
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

char *pl_read_file_max(const char *path, size_t max_bytes, size_t *len, char *err, size_t errlen)
{
    const int fd = open_regular(path, err, errlen);
    if (fd < 0)
        return NULL;
    pl_buf b = {0};
    char chunk[65536];
    for (;;) {
        const ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            pl_snprintf(err, errlen, "cannot read '%s': %s", PL_ESC(path), strerror(errno));
            break;
        }
        if (n == 0) {
            close(fd);
            if (!b.data)
                pl_buf_appendn(&b, "", 0);
            if (len)
                *len = b.len;
            return b.data;
        }
        if (b.len + (size_t)n > max_bytes) { /* checked as it grows: /proc files report a size of 0 */
            pl_snprintf(err, errlen, "cannot read '%s': larger than %zu MiB, the most perflab reads from one file",
                        PL_ESC(path), max_bytes >> 20);
            break;
        }
        pl_buf_appendn(&b, chunk, (size_t)n);
    }
    close(fd);
    pl_buf_free(&b);
    return NULL;
}

int pl_path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

char *pl_file_in_subfolder(const char *folder, const char *file)
{
    DIR *d = opendir(folder);
    if (!d)
        return NULL;
    char *found = NULL;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *sub = pl_path_join(folder, e->d_name), *cand = pl_path_join(sub, file);
        if (pl_path_exists(cand))
            found = cand;
        else
            free(cand);
        free(sub);
    }
    closedir(d);
    return found;
}

int pl_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int pl_mkdir_p(const char *path, char *err, size_t errlen)
{
    if (!*path) {
        pl_snprintf(err, errlen, "cannot create a directory with an empty name");
        return -1;
    }
    char *p = pl_strdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            pl_snprintf(err, errlen, "cannot create directory '%s': %s", PL_ESC(p), strerror(errno));
            free(p);
            return -1;
        }
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        pl_snprintf(err, errlen, "cannot create directory '%s': %s", PL_ESC(p), strerror(errno));
        free(p);
        return -1;
    }
    free(p);
    if (!pl_is_dir(path)) {
        pl_snprintf(err, errlen, "cannot create directory '%s': a file of that name is in the way", PL_ESC(path));
        return -1;
    }
    return 0;
}

char *pl_path_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    if (la > 0 && a[la - 1] == '/')
        return pl_strfmt("%s%s", a, b);
    return pl_strfmt("%s/%s", a, b);
}

size_t pl_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = pl_xmalloc((lb + 1) * sizeof *row);
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

int pl_suggest_indices(const char *word, const char *const *candidates, size_t n, int max, size_t *out)
{
    const size_t len = strlen(word);
    if (len == 0 || len > PL_SUGGEST_MAX_LEN || max <= 0)
        return 0; /* nothing sensible to suggest, and the work stays bounded */
    if (n > PL_SUGGEST_MAX_CANDIDATES)
        n = PL_SUGGEST_MAX_CANDIDATES;
    const size_t limit = len / 3 < 2 ? 2 : len / 3;
    /* one distance per candidate (substring matches count as 0), then the closest first, in candidate order */
    size_t *dist = pl_xmalloc((n ? n : 1) * sizeof *dist);
    for (size_t i = 0; i < n; i++) {
        const size_t clen = strlen(candidates[i]);
        if (strstr(candidates[i], word))
            dist[i] = 0;
        else if (clen > len + limit || len > clen + limit)
            dist[i] = limit + 1; /* the distance is at least the difference in length */
        else
            dist[i] = pl_edit_distance(word, candidates[i]);
    }
    int found = 0;
    for (size_t d = 0; d <= limit && found < max; d++)
        for (size_t i = 0; i < n && found < max; i++)
            if (dist[i] == d)
                out[found++] = i;
    free(dist);
    return found;
}

int pl_suggest(const char *word, const char *const *candidates, size_t n, int max, char *out, size_t outlen)
{
    size_t idx[16];
    int found = pl_suggest_indices(word, candidates, n, max < 16 ? max : 16, idx);
    pl_buf b = {0};
    for (int i = 0; i < found; i++)
        pl_buf_printf(&b, "%s'%s'", i ? ", " : "", candidates[idx[i]]);
    pl_snprintf(out, outlen, "%s", b.data ? b.data : "");
    pl_buf_free(&b);
    return found;
}

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0 when it is not one. Overlong forms, surrogates and
 * code points past U+10FFFF are not valid. */
const char *pl_format_ms(double ms, char *buf, size_t len)
{
    if (ms != ms)
        pl_snprintf(buf, len, "-");
    else if (ms < 1.0)
        pl_snprintf(buf, len, "%.2f us", ms * 1e3);
    else if (ms < 1000.0)
        pl_snprintf(buf, len, "%.3f ms", ms);
    else
        pl_snprintf(buf, len, "%.2f s", ms / 1e3);
    return buf;
}

int pl_dir_usable(const char *dir, const char *what, const char *flag, char *err, size_t errlen)
{
    if (!*dir) {
        pl_snprintf(err, errlen, "%s is empty: pass a directory with %s (e.g. %s .)", what, flag, flag);
        return 0;
    }
    if (pl_path_exists(dir)) {
        if (!pl_is_dir(dir)) {
            pl_snprintf(err, errlen, "%s '%s' is a file: pass a directory with %s", what, PL_ESC(dir), flag);
            return 0;
        }
        if (access(dir, W_OK) != 0) {
            pl_snprintf(err, errlen, "%s '%s' is not writable: pass a writable %s", what, PL_ESC(dir), flag);
            return 0;
        }
        return 1;
    }
    char *parent = pl_strdup(dir);
    for (;;) {
        char *slash = strrchr(parent, '/');
        if (!slash) {
            strcpy(parent, ".");
            break;
        }
        if (slash == parent) {
            parent[1] = '\0';
            break;
        }
        *slash = '\0';
        if (pl_path_exists(parent))
            break;
    }
    int ok = pl_is_dir(parent) && access(parent, W_OK) == 0;
    if (!ok)
        pl_snprintf(err, errlen, "cannot create %s '%s' ('%s' is not a writable directory): pass a writable %s", what,
                    PL_ESC(dir), PL_ESC(parent), flag);
    free(parent);
    return ok;
}
