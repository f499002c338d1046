#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the shapes of perflab's attention targets, for a side-by-side table.

Backends: FLASH_ATTENTION and CUDNN_ATTENTION (torch.nn.attention.sdpa_kernel), bf16, the [b, h, s, d] layout that
SDPA takes. Counted like perflab: FLOPs 4*b*h*s^2*d, half of it under the causal mask (the diagonal counted as
half: FlashAttention's convention); bytes Q, K, V, O once. Grouped-query attention goes through enable_gqa=True;
where a backend refuses it, K and V are expanded to the query heads first (repeat_interleave, outside the timed
region) and the row says "expanded" -- its bytes are still counted with the real kv heads. Decode: one query
token per sequence against a contiguous cache (SDPA has no paged cache), GB/s from K and V read once, beside a
device-to-device copy of the same bytes timed in the same process (the HBM ceiling).

Timing: perflab.bench (scripts/torch_timing.py), the harness of `perflab run` on torch's stream: warm-up, then at
least --iters samples, latched (the default): perflab's latch holds the stream until the host has enqueued the whole
sample, so that the events time the GPU's work and not the Python and dispatch cost of the call (an unlatched call
of a 0.5 ms kernel counts the host's ~20 µs before its launch). --latch both also prints the unlatched figure
(backend name + " unlatched": perflab.bench with host_bound=True).
--sustained adds a row per backend timed as perflab times by default (hot, adaptive: at least a second of samples
at load, where a compute-bound kernel meets the power cap): the like-for-like figure for `perflab run`.
Each shape also gets SDPA under torch.compile (default and max-autotune; PyTorch's own choice of backend), unless
--no-compile.

--backward adds, for each prefill shape, the backward alone of each backend (shape name + " bwd"): the forward runs
once outside the timing with its autograd graph kept, and the timed call is torch.autograd.grad of (Q, K, V) from a
fixed dO (retain_graph), by the same timing rules: attention:flash_bwd with the same parameters is the comparison.
Counted like perflab: FLOPs 2.5x the forward's (10*b*h*s^2*d, half under the causal mask); bytes Q, K, V, O, dO and
the LSE read, dQ, dK, dV written once; at head_dim 64 and 128 only (attention:flash_bwd's). --backward-only skips
the forward rows and the decode shape.

--shapes TEXT keeps the prefill shapes whose name contains TEXT (e.g. "d256": the head_dim 256 shapes, whose bar is
the best backend that runs them) and skips the decode shape.

    python3 scripts/torch_attention_bench.py [--iters 50] [--sustained] [--decode-only] [--backward[-only]]
        [--shapes TEXT] [--json out.json]
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from torch_timing import compiled, median_ms

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}

# (name, batch, heads, kv_heads, seq, head_dim, causal): perflab's attention:flash_fwd with the same parameters
PREFILL = [
    ("b4 h16 s4096 d128", 4, 16, 16, 4096, 128, False),
    ("b4 h16 s4096 d128 causal", 4, 16, 16, 4096, 128, True),
    ("b2 h16 s8192 d128", 2, 16, 16, 8192, 128, False),
    ("b16 h32 s1024 d64", 16, 32, 32, 1024, 64, False),
    ("b2 h32/kv8 s4096 d128 (GQA)", 2, 32, 8, 4096, 128, False),
    ("b4 h16 s4096 d256", 4, 16, 16, 4096, 256, False),
    ("b4 h16 s4096 d256 causal", 4, 16, 16, 4096, 256, True),
    ("b2 h16 s8192 d256", 2, 16, 16, 8192, 256, False),
    ("b2 h16 s8192 d256 causal", 2, 16, 16, 8192, 256, True),
    ("b2 h16 s16384 d256", 2, 16, 16, 16384, 256, False),
    ("b2 h16 s16384 d256 causal", 2, 16, 16, 16384, 256, True),
    ("b2 h32/kv8 s4096 d256 (GQA)", 2, 32, 8, 4096, 256, False),
]
# (name, batch, heads, kv_heads, kv_len, head_dim): attention:decode_paged with --len-spread 0
DECODE = [("decode b64 h32/kv8 len8192 d128", 64, 32, 8, 8192, 128)]


def time_ms(fn, iters, latch=True):
    """perflab.bench's median: at least `iters` samples, latched unless latch is False."""
    return median_ms(fn, min_samples=iters, host_bound=not latch)


def time_sustained_ms(fn):
    """perflab.bench's median with at least a second of samples at load (perflab run's hot mode at the power cap)."""
    return median_ms(fn, min_time_s=1.0, max_time_s=5.0)


def sdpa_call(backend, q, k, v, causal, gqa):
    """A callable that runs SDPA on the backend, and how GQA was handled ('' / 'gqa' / 'expanded'), or an error."""
    def run(kk, vv, enable_gqa):
        with sdpa_kernel([BACKENDS[backend]]):
            return F.scaled_dot_product_attention(q, kk, vv, is_causal=causal, enable_gqa=enable_gqa)

    if not gqa:
        run(k, v, False)
        return (lambda: run(k, v, False)), ""
    try:
        run(k, v, True)
        return (lambda: run(k, v, True)), "gqa"
    except RuntimeError:
        g = q.shape[1] // k.shape[1]
        ke, ve = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        run(ke, ve, False)
        return (lambda: run(ke, ve, False)), "expanded"


def latch_modes(latch, sustained=False):
    """(row-name suffix, timing) pairs for --latch on|off|both (timing True: latched, False: not), and with
    --sustained one more, timing "sustained"."""
    modes = {"on": [("", True)], "off": [(" unlatched", False)], "both": [("", True), (" unlatched", False)]}[latch]
    return modes + ([(" sustained", "sustained")] if sustained else [])


def timed(fn, iters, timing):
    if timing == "sustained":
        return time_sustained_ms(fn)
    return time_ms(fn, iters, latch=timing)


def time_backends(rows, name, q, k, v, causal, flops, nbytes, iters, latch, sustained):
    """One row per SDPA backend (and latch mode): its median time and rates, or the error that kept it from
    running."""
    for be in BACKENDS:
        for suffix, timing in latch_modes(latch, sustained):
            try:
                fn, how = sdpa_call(be, q, k, v, causal, k.shape[1] != q.shape[1])
                ms = timed(fn, iters, timing)
                rows.append(dict(shape=name, backend=be + suffix, note=how, ms=ms, tflops=flops / ms / 1e9,
                                 gbps=nbytes / ms / 1e6))
            except RuntimeError as e:
                rows.append(dict(shape=name, backend=be + suffix, note="error: " + str(e).split("\n")[0][:80],
                                 ms=None))
            print(rows[-1], flush=True)


def sdpa_backward_call(backend, q, k, v, causal, gqa):
    """A callable that runs only the backward of SDPA's call on the backend (the forward run once here, its graph
    kept), and how GQA was handled, as sdpa_call. The backend is chosen by the forward: its node holds the backward
    kernel. Under "expanded" the gradients of the expanded K and V are per query head (their sum over the group, which
    perflab's dK and dV include, is not timed)."""
    g = q.shape[1] // k.shape[1]

    def forward(kk, vv, enable_gqa):
        qg, kg, vg = (t.detach().requires_grad_(True) for t in (q, kk, vv))
        with sdpa_kernel([BACKENDS[backend]]):
            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, enable_gqa=enable_gqa)
        dout = torch.empty_like(out).uniform_(-1, 1)
        run = lambda: torch.autograd.grad(out, (qg, kg, vg), dout, retain_graph=True)  # noqa: E731
        run()
        return run

    if not gqa:
        return forward(k, v, False), ""
    try:
        return forward(k, v, True), "gqa"
    except RuntimeError:
        return forward(k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1), False), "expanded"


def time_backward(rows, name, q, k, v, causal, flops, nbytes, iters, latch, sustained):
    """One row per SDPA backend (and latch mode) for the backward alone, or the error that kept it from running."""
    for be in BACKENDS:
        for suffix, timing in latch_modes(latch, sustained):
            try:
                fn, how = sdpa_backward_call(be, q, k, v, causal, k.shape[1] != q.shape[1])
                ms = timed(fn, iters, timing)
                rows.append(dict(shape=name + " bwd", backend=be + suffix, note=how, ms=ms, tflops=flops / ms / 1e9,
                                 gbps=nbytes / ms / 1e6))
            except RuntimeError as e:
                rows.append(dict(shape=name + " bwd", backend=be + suffix,
                                 note="error: " + str(e).split("\n")[0][:80], ms=None))
            print(rows[-1], flush=True)
            torch.cuda.empty_cache()


def time_compiled(rows, name, q, k, v, causal, flops, nbytes, iters):
    """SDPA under torch.compile's modes (PyTorch picks the backend), latched, one row each."""
    gqa = k.shape[1] != q.shape[1]
    for label, fn in compiled(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa),
                              name):
        ms = time_ms(fn, iters)
        rows.append(dict(shape=name, backend=label, note="", ms=ms, tflops=flops / ms / 1e9, gbps=nbytes / ms / 1e6))
        print(rows[-1], flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--latch", choices=["on", "off", "both"], default="on",
                    help="hold the stream with a spin kernel while the host enqueues each timed call (on), not (off)")
    ap.add_argument("--sustained", action="store_true",
                    help="also time each backend sustained at load, as perflab's hot mode does (rows '... sustained')")
    ap.add_argument("--decode-only", action="store_true", help="only the decode shape (skip the prefill shapes)")
    ap.add_argument("--backward", action="store_true",
                    help="also time each backend's backward alone on the prefill shapes (rows '<shape> bwd')")
    ap.add_argument("--backward-only", action="store_true",
                    help="only the backward rows (no forward rows, no decode shape)")
    ap.add_argument("--shapes", help="only the prefill shapes whose name contains this text (no decode shape)")
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--no-compile", action="store_true", help="no torch.compile rows")
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    rows = []
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}",
          flush=True)
    prefill = [p for p in PREFILL if not args.shapes or args.shapes in p[0]]
    for name, b, h, kv, s, d, causal in [] if args.decode_only else prefill:
        q = torch.empty(b, h, s, d, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
        k = torch.empty(b, kv, s, d, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
        v = torch.empty(b, kv, s, d, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        nbytes = 2.0 * (2 * b * h * s * d + 2 * b * kv * s * d)
        if not args.backward_only:
            time_backends(rows, name, q, k, v, causal, flops, nbytes, args.iters, args.latch, args.sustained)
            if not args.no_compile:
                time_compiled(rows, name, q, k, v, causal, flops, nbytes, args.iters)
        if (args.backward or args.backward_only) and d <= 128:  # attention:flash_bwd's head dims
            bwd_bytes = 2.0 * (3 * b * h * s * d + 2 * b * kv * s * d) + 4.0 * b * h * s \
                + 2.0 * (b * h * s * d + 2 * b * kv * s * d)
            time_backward(rows, name, q, k, v, causal, 2.5 * flops, bwd_bytes, args.iters, args.latch,
                          args.sustained)
        del q, k, v
        torch.cuda.empty_cache()
    for name, b, h, kv, n, d in [] if args.backward_only or args.shapes else DECODE:
        q = torch.empty(b, h, 1, d, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
        k = torch.empty(b, kv, n, d, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
        v = torch.empty(b, kv, n, d, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
        flops = 4.0 * b * h * n * d
        nbytes = 2.0 * (2 * b * kv * n * d + 2 * b * h * d)
        dst = torch.empty_like(k)
        for suffix, timing in latch_modes(args.latch, args.sustained):
            # K bytes read + written = the K and V bytes decode reads
            ms = timed(lambda: dst.copy_(k), args.iters, timing)
            rows.append(dict(shape=name, backend="d2d copy" + suffix, note="the ceiling", ms=ms, tflops=0.0,
                             gbps=nbytes / ms / 1e6))
            print(rows[-1], flush=True)
        time_backends(rows, name, q, k, v, False, flops, nbytes, args.iters, args.latch, args.sustained)
        if not args.no_compile:
            time_compiled(rows, name, q, k, v, False, flops, nbytes, args.iters)
    print()
    print(f"{'shape':38} {'backend':20} {'ms':>9} {'TFLOP/s':>8} {'GB/s':>8}  note (latch {args.latch})")
    for r in rows:
        if r["ms"] is None:
            print(f"{r['shape']:38} {r['backend']:20} {'-':>9} {'-':>8} {'-':>8}  {r['note']}")
        else:
            print(f"{r['shape']:38} {r['backend']:20} {r['ms']:9.4f} {r['tflops']:8.1f} {r['gbps']:8.0f}  {r['note']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
