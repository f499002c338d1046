#include "core/files.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"

static int plain_name(const char *name)
{
    return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

int pl_report_write_files(const char *dir, const pl_report_file *files, size_t n, char *err, size_t errlen)
{
    if (pl_mkdir_p(dir, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const pl_report_file *f = &files[i];
        if (!plain_name(f->name)) { /* a programming error, caught before anything lands outside dir */
            pl_snprintf(err, errlen, "internal error: '%s' is not a plain file name", f->name ? f->name : "(null)");
            return -1;
        }
        char *path = pl_path_join(dir, f->name);
        int rc = f->json ? pl_json_save_file(f->json, path, err, errlen)
                         : pl_write_file_atomic(path, f->text ? f->text : "", f->text ? strlen(f->text) : 0, err,
                                                errlen);
        free(path);
        if (rc != 0)
            return -1;
    }
    return 0;
}

char *pl_report_safe_name(const char *label, const char *suffix)
{
    pl_buf b = {0};
    size_t k = 0;
    for (const unsigned char *s = (const unsigned char *)(label ? label : ""); *s && k < 96; s++, k++) {
        int keep = isalnum(*s) || *s == '-' || *s == '_' || (*s == '.' && k > 0);
        char c = keep ? (char)*s : '_';
        pl_buf_appendn(&b, &c, 1);
    }
    if (!b.len)
        pl_buf_append(&b, "unnamed");
    pl_buf_append(&b, suffix ? suffix : "");
    return b.data;
}
