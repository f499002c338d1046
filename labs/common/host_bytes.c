/* Random bytes and the exact byte-for-byte check of the transfer labs. */
#include "common/host_bytes.h"
#include "engine/mix64.h"

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

void pl_fill_random_bytes(void *buf, size_t bytes, uint64_t seed, uint64_t stream_id)
{
    uint64_t state = seed * 0xD1B54A32D192ED03ull + stream_id;
    uint8_t *p = buf;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        const uint64_t v = pl_splitmix64(&state);
        memcpy(p + i, &v, 8);
    }
    if (i < bytes) {
        const uint64_t v = pl_splitmix64(&state);
        memcpy(p + i, &v, bytes - i);
    }
}

/* What a comparison has found so far, over pieces at increasing offsets. */
typedef struct byte_tally {
    size_t compared, differ, poisoned;
    size_t first; /* offset of the first difference */
    uint8_t first_out, first_ref;
} byte_tally;

static void tally_piece(byte_tally *t, const uint8_t *out, const uint8_t *ref, size_t n)
{
    /* memcmp first: a piece that matches (the usual case) costs one fast pass */
    if (memcmp(out, ref, n) != 0) {
        for (size_t i = 0; i < n; i++) {
            if (out[i] == ref[i])
                continue;
            if (t->differ == 0) {
                t->first = t->compared + i;
                t->first_out = out[i];
                t->first_ref = ref[i];
            }
            t->differ++;
            t->poisoned += out[i] == 0xFF;
        }
    }
    t->compared += n;
}

static void tally_verdict(const byte_tally *t, pl_verification *v)
{
    memset(v, 0, sizeof *v);
    v->checked = 1;
    v->dtype = PL_DTYPE_I32; /* exact: no tolerance */
    v->elements = t->compared;
    v->unwritten = t->poisoned;
    v->max_error_index = t->first;
    v->max_abs_error =
        t->differ ? (double)(t->first_out > t->first_ref ? t->first_out - t->first_ref : t->first_ref - t->first_out)
                  : 0.0;
    v->rel_l2_error = t->compared ? (double)t->differ / (double)t->compared : 0.0;
    v->passed = t->differ == 0;
    if (v->passed)
        snprintf(v->message, sizeof v->message, "all %zu bytes arrived as they left", t->compared);
    else
        snprintf(v->message, sizeof v->message,
                 "%zu of %zu bytes differ (%zu still the poison 0xFF); the first at byte %zu: 0x%02X instead of "
                 "0x%02X",
                 t->differ, t->compared, t->poisoned, t->first, t->first_out, t->first_ref);
}

void pl_verify_bytes(const uint8_t *out, const uint8_t *ref, size_t bytes, pl_verification *v)
{
    byte_tally t = {0};
    tally_piece(&t, out, ref, bytes);
    tally_verdict(&t, v);
}

int pl_byte_reader_init(pl_ctx *ctx, pl_byte_reader *r, size_t chunk, int device_hop)
{
    memset(r, 0, sizeof *r);
    r->chunk = chunk;
    r->bounce = pl_host_alloc(ctx, chunk);
    if (!r->bounce)
        return -1;
    if (device_hop && !(r->device_hop = pl_device_alloc(ctx, chunk)))
        return -1;
    return 0;
}

int pl_verify_copied_bytes(pl_ctx *ctx, const pl_byte_reader *r, const void *src, const uint8_t *ref, size_t bytes,
                           int via_device, pl_verification *v)
{
    if (!r->bounce || !r->chunk || (via_device && !r->device_hop))
        return pl_fail(ctx, "pl_verify_copied_bytes: the reader has no bounce buffer%s",
                       via_device ? " or no device hop" : "");
    byte_tally t = {0};
    for (size_t off = 0; off < bytes; off += r->chunk) {
        const size_t n = bytes - off < r->chunk ? bytes - off : r->chunk;
        const uint8_t *from = (const uint8_t *)src + off;
        if (via_device) {
            PL_CUDA(ctx, cudaMemcpyAsync(r->device_hop, from, n, cudaMemcpyDefault, ctx->stream));
            from = r->device_hop;
        }
        PL_CUDA(ctx, cudaMemcpyAsync(r->bounce, from, n, cudaMemcpyDefault, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        tally_piece(&t, r->bounce, ref + off, n);
    }
    tally_verdict(&t, v);
    return 0;
}
