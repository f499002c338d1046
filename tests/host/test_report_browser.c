/* report.html as a person sees it: headless Chromium renders the report of the real H200 results in docs/results
 * to a PNG, and the picture must not be blank (enough non-white pixels, several colours: text, tables, charts).
 * Skipped (exit 77) with the reason where /usr/bin/chromium is absent (CI installs Debian's chromium). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/util.h"
#include "testutil.h"

#define CHROMIUM "/usr/bin/chromium"
#define FIXTURES PERFLAB_SOURCE_DIR "/docs/results"

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

typedef struct picture {
    uint32_t w, h;
    double ink;  /* fraction of pixels that are not (near) white */
    int colours; /* distinct colours among the first 4096 seen (6 bits per channel) */
} picture;

/* An 8-bit RGB or RGBA PNG, non-interlaced (what Chromium writes): unfiltered and measured. */
static int read_png(const char *path, picture *pic, char *err, size_t errlen)
{
    size_t len;
    unsigned char *d = (unsigned char *)pl_read_file(path, &len, err, errlen);
    if (!d)
        return -1;
    int rc = -1;
    pl_buf idat = {0};
    uint32_t w = 0, h = 0;
    int bpp = 0;
    if (len < 8 || memcmp(d, "\x89PNG\r\n\x1a\n", 8) != 0) {
        pl_snprintf(err, errlen, "%s is not a PNG", path);
        goto out;
    }
    for (size_t p = 8; p + 12 <= len;) {
        uint32_t n = be32(d + p);
        const unsigned char *type = d + p + 4, *data = d + p + 8;
        if (p + 12 + n > len)
            break;
        if (memcmp(type, "IHDR", 4) == 0) {
            w = be32(data);
            h = be32(data + 4);
            if (data[8] != 8 || (data[9] != 2 && data[9] != 6) || data[12] != 0) {
                pl_snprintf(err, errlen, "PNG: depth %d colour type %d interlace %d not read here", data[8], data[9],
                            data[12]);
                goto out;
            }
            bpp = data[9] == 6 ? 4 : 3;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            pl_buf_appendn(&idat, (const char *)data, n);
        }
        p += 12 + n;
    }
    if (!w || !h || !idat.len) {
        pl_snprintf(err, errlen, "PNG without an image");
        goto out;
    }
    uLongf raw_len = (uLongf)h * (1 + (uLongf)w * bpp);
    unsigned char *raw = malloc(raw_len);
    if (!raw || uncompress(raw, &raw_len, (const Bytef *)idat.data, idat.len) != Z_OK) {
        free(raw);
        pl_snprintf(err, errlen, "PNG: the image data does not inflate");
        goto out;
    }
    const size_t stride = (size_t)w * bpp;
    unsigned char *prev = calloc(stride, 1), *cur = malloc(stride);
    size_t inked = 0;
    uint32_t seen[4096];
    int nseen = 0;
    for (uint32_t y = 0; y < h; y++) {
        const unsigned char *row = raw + (size_t)y * (stride + 1);
        for (size_t i = 0; i < stride; i++) {
            int a = i >= (size_t)bpp ? cur[i - bpp] : 0, b = prev[i], c = i >= (size_t)bpp ? prev[i - bpp] : 0;
            int x = row[1 + i];
            switch (row[0]) {
            case 1: x += a; break;
            case 2: x += b; break;
            case 3: x += (a + b) / 2; break;
            case 4: x += paeth(a, b, c); break;
            default: break;
            }
            cur[i] = (unsigned char)x;
        }
        for (uint32_t x = 0; x < w; x++) {
            const unsigned char *px = cur + (size_t)x * bpp;
            inked += px[0] < 235 || px[1] < 235 || px[2] < 235;
            uint32_t key = (uint32_t)(px[0] >> 2) << 12 | (uint32_t)(px[1] >> 2) << 6 | (px[2] >> 2);
            int known = 0;
            for (int k = 0; k < nseen && !known; k++)
                known = seen[k] == key;
            if (!known && nseen < 4096)
                seen[nseen++] = key;
        }
        memcpy(prev, cur, stride);
    }
    pic->w = w;
    pic->h = h;
    pic->ink = (double)inked / ((double)w * h);
    pic->colours = nseen;
    free(prev);
    free(cur);
    free(raw);
    rc = 0;
out:
    pl_buf_free(&idat);
    free(d);
    return rc;
}

START_TEST(chromium_renders_the_report)
{
    char *dir = pl_test_tmpdir("report-browser");
    char *args = pl_strfmt("report " FIXTURES "/h200-report/run-memory-roofline " FIXTURES
                           "/h200-report/gemm-4096 " FIXTURES "/2x_h200/moe_slo_report.json --out '%s'",
                           dir);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    pl_cmd_result_free(&r);
    free(args);
    char *png = pl_path_join(dir, "shot.png");
    char *cmd =
        pl_strfmt("timeout 120 " CHROMIUM " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                  "--disable-background-networking --disable-component-update --disable-sync "
                  "--user-data-dir='%s/profile' --hide-scrollbars --window-size=1280,2400 "
                  "--screenshot='%s' 'file://%s/report.html' >'%s/chromium.log' 2>&1",
                  dir, png, dir, dir);
    int status = system(cmd);
    free(cmd);
    ck_assert_msg(status == 0, "chromium failed (exit status %d): see %s/chromium.log", status, dir);
    picture pic;
    char err[256];
    ck_assert_msg(read_png(png, &pic, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(pic.w, 1280);
    ck_assert_uint_eq(pic.h, 2400);
    /* a blank page has no ink and one colour; the report has text, tables, bars and a roofline */
    ck_assert_msg(pic.ink > 0.03, "only %.2f%% of the screenshot is not white", 100 * pic.ink);
    ck_assert_msg(pic.colours >= 24, "only %d colours in the screenshot", pic.colours);
    printf("screenshot %ux%u: %.1f%% ink, %d colours\n", pic.w, pic.h, 100 * pic.ink, pic.colours);
    free(png);
    free(dir);
}
END_TEST

/* The reader itself: a blank page reads as blank. */
START_TEST(blank_page_reads_blank)
{
    char *dir = pl_test_tmpdir("report-blank");
    char *html = pl_path_join(dir, "blank.html"), *png = pl_path_join(dir, "blank.png");
    char err[256];
    ck_assert_int_eq(pl_write_file_atomic(html, "<html><body></body></html>", 26, err, sizeof err), 0);
    char *cmd =
        pl_strfmt("timeout 120 " CHROMIUM " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                  "--disable-background-networking --disable-component-update --disable-sync "
                  "--user-data-dir='%s/profile' --window-size=400,300 --screenshot='%s' 'file://%s' "
                  ">/dev/null 2>&1",
                  dir, png, html);
    ck_assert_int_eq(system(cmd), 0);
    picture pic;
    ck_assert_msg(read_png(png, &pic, err, sizeof err) == 0, "%s", err);
    ck_assert(pic.ink < 0.001 && pic.colours <= 2);
    free(cmd);
    free(html);
    free(png);
    free(dir);
}
END_TEST

int main(void)
{
    FILE *f = fopen(CHROMIUM, "r");
    if (!f) {
        printf("skipped: %s is absent (apt-get install chromium), so the report is not rendered\n", CHROMIUM);
        return 77;
    }
    fclose(f);
    Suite *s = suite_create("report_browser");
    TCase *t = tcase_create("chromium");
    tcase_set_timeout(t, 240);
    tcase_add_test(t, blank_page_reads_blank);
    tcase_add_test(t, chromium_renders_the_report);
    suite_add_tcase(s, t);
    return pl_run_suite(s);
}
