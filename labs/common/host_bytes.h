/* Bytes that must arrive as they left: the glue of the transfer labs (transfer:pinned, memory:unified,
 * nvlink:peer_copy). Random bytes cheap enough for gigabytes, and an exact byte-for-byte check of a buffer that
 * may sit anywhere (device memory, another GPU, write-combined host memory), read back in pieces through a small
 * pinned bounce buffer. */
#ifndef PERFLAB_LABS_HOST_BYTES_H
#define PERFLAB_LABS_HOST_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "perflab/ctx.h"
#include "perflab/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill `bytes` with a splitmix64 stream seeded by (seed, stream_id): about 1 GB/s on one core, no zero runs. */
void pl_fill_random_bytes(void *buf, size_t bytes, uint64_t seed, uint64_t stream_id);

/* Compare out with ref exactly. A differing byte that holds the poison (0xFF, what pl_poison writes) counts as
 * unwritten. The verdict names the first difference. */
void pl_verify_bytes(const uint8_t *out, const uint8_t *ref, size_t bytes, pl_verification *v);

/* A reader of bytes that the host cannot (or should not) read directly. */
typedef struct pl_byte_reader {
    void *bounce;     /* host memory of `chunk` bytes */
    void *device_hop; /* NULL, or device memory of `chunk` bytes: see pl_verify_copied_bytes */
    size_t chunk;
} pl_byte_reader;

/* Allocate the reader's buffers, tracked (the harness frees them): `chunk` bytes of host memory, and as much device
 * memory when `device_hop`. */
int pl_byte_reader_init(pl_ctx *ctx, pl_byte_reader *r, size_t chunk, int device_hop);

/* Copy `bytes` from src (any address CUDA can copy from: device memory of this or another GPU, host memory) to
 * the host in pieces of r->chunk on ctx->stream, and compare each piece with ref. With `via_device`, each piece goes
 * src -> r->device_hop -> bounce: write-combined host memory is then read by the copy engine, not by uncached CPU
 * loads (which run at a small fraction of the link's speed). Synchronises. -1 only on a CUDA error. */
int pl_verify_copied_bytes(pl_ctx *ctx, const pl_byte_reader *r, const void *src, const uint8_t *ref, size_t bytes,
                           int via_device, pl_verification *v);

#ifdef __cplusplus
}
#endif
#endif
