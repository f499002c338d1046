#!/usr/bin/env python3
"""PyTorch's grouped and FP8 GEMMs on the shapes of perflab's moe:grouped_gemm and gemm:fp8, for a side-by-side
comparison in the same request.

  moe:     torch._grouped_mm (bf16, one call for every expert) and a loop of torch.mm per expert, on the routing
           perflab builds (the Zipf split of T*k slots over E experts, hotspot model, capped at T, experts shuffled
           by the seed: labs/common/moe_routing.c, ported below), A (T*k x K) and every expert's B (N x K);
           torch._scaled_grouped_mm (fp8, row-wise scales) where this PyTorch has it.
  fp8:     torch._scaled_mm at M x N x K with per-tensor scales, and with 1x128 / 128x128 block scales where this
           PyTorch and cuBLASLt take them.

Timing as perflab's hot mode: CUDA events around each call after --warmup-s seconds of warm-up, the median of at
least --iters samples over at least --min-time-s seconds (the power limit's steady state, as perflab measures; 0 and 0
give the short measurement of sessions before 15, whose first tens of milliseconds ran at boost clocks).

    python3 scripts/torch_moe_bench.py --experts 64 --n 1536 --k 4096 --tokens 8192 --topk 2
    python3 scripts/torch_moe_bench.py --experts 8 --n 14336 --fp8-shape 8192x8192x8192
"""
import argparse
import math
import statistics
import sys
import time

import torch

MASK64 = (1 << 64) - 1


def skew_split(total, n, alpha):
    """pl_skew_split(PL_SKEW_HOTSPOT, total, n, src=0, alpha): floors of total * w_d / sum w, the remainder to the
    largest fractional parts (ties: the smaller distance, then the lower rank)."""
    w = [float(d + 1) ** -alpha for d in range(n)]
    wsum = 0.0
    for x in w:
        wsum += x
    counts, frac = [], []
    for d in range(n):
        exact = total * w[d] / wsum
        whole = min(math.floor(exact), total)
        counts.append(int(whole))
        frac.append(exact - whole)
    assigned = sum(counts)
    while assigned > total:
        worst = min((d for d in range(n) if counts[d] > 0), key=lambda d: frac[d])
        counts[worst] -= 1
        assigned -= 1
    order = sorted(range(n), key=lambda d: (-frac[d], d + 1, d))
    left, i = total - assigned, 0
    while left > 0:
        counts[order[i % n]] += 1
        i, left = i + 1, left - 1
    return counts


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def routing(experts, tokens, topk, alpha, seed):
    """labs/common/moe_routing.c: tokens per expert."""
    by_rank = skew_split(tokens * topk, experts, alpha)
    excess = 0
    for i in range(experts):
        if by_rank[i] > tokens:
            excess += by_rank[i] - tokens
            by_rank[i] = tokens
    for i in range(experts):
        if excess == 0:
            break
        take = min(tokens - by_rank[i], excess)
        by_rank[i] += take
        excess -= take
    perm = list(range(experts))
    state = seed & MASK64
    for i in range(experts - 1, 0, -1):
        state, z = splitmix64(state)
        j = z % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    counts = [0] * experts
    for i in range(experts):
        counts[perm[i]] = by_rank[i]
    return counts


# Seconds of warm-up and of sampling per measurement (set from --warmup-s and --min-time-s). A GPU at its power limit
# runs a large GEMM at boost clocks for its first tens of milliseconds: 50 samples of an 0.8 ms FP8 GEMM alone read
# up to 10% faster than the steady state perflab's rounds of at least 0.25 s a variant measure.
TIMING = {"warmup_s": 1.0, "min_time_s": 1.0}


def time_ms(fn, iters, warmup=10):
    t0 = time.perf_counter()
    done = 0
    while done < warmup or time.perf_counter() - t0 < TIMING["warmup_s"]:
        fn()
        done += 1
        if done % 16 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    samples = []
    t0 = time.perf_counter()
    while len(samples) < iters or (time.perf_counter() - t0 < TIMING["min_time_s"] and len(samples) < 100000):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def row(rows, name, shape, ms, flops, note=""):
    rows.append((name, shape, ms, flops / (ms * 1e9) if ms == ms else float("nan"), note))


def to_e4m3(x):
    """Per-tensor power-of-two scale as perflab's quantizer: 2^ceil(log2(amax/448))."""
    amax = x.abs().max().float().item()
    scale = 2.0 ** math.ceil(math.log2(amax / 448.0)) if amax > 0 else 1.0
    return (x.float() / scale).to(torch.float8_e4m3fn), torch.tensor(scale, device=x.device)


def bench_moe(args, rows):
    dev = "cuda"
    counts = routing(args.experts, args.tokens, args.topk, args.alpha, args.seed)
    m_total, n, k, e = sum(counts), args.n, args.k, args.experts
    flops = 2.0 * m_total * n * k
    shape = f"E={e} T={args.tokens} k={args.topk} N={n} K={k}"
    print(f"routing: {m_total} rows, {sum(c == 0 for c in counts)} experts empty, busiest {max(counts)}",
          file=sys.stderr)
    a = torch.empty(m_total, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
    b = torch.empty(e, n, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
    offs = torch.tensor(counts, device=dev, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    starts = [0]
    for c in counts:
        starts.append(starts[-1] + c)
    d = torch.empty(m_total, n, device=dev, dtype=torch.bfloat16)

    def loop():
        for i in range(e):
            if counts[i]:
                torch.mm(a[starts[i]:starts[i + 1]], b[i].t(), out=d[starts[i]:starts[i + 1]])

    row(rows, "moe torch.mm loop (bf16)", shape, time_ms(loop, args.iters), flops)
    try:
        ref = torch._grouped_mm(a, b.transpose(-2, -1), offs=offs)
        loop()
        err = ((ref.float() - d.float()).norm() / d.float().norm()).item()
        row(rows, "moe torch._grouped_mm (bf16)", shape,
            time_ms(lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=offs), args.iters), flops,
            f"rel L2 vs loop {err:.1e}")
    except Exception as ex:  # noqa: BLE001 - report and go on
        row(rows, "moe torch._grouped_mm (bf16)", shape, float("nan"), flops, f"n/a: {str(ex)[:80]}")
    try:
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn)
        sa = torch.ones(m_total, device=dev, dtype=torch.float32)
        sb = torch.ones(e, n, device=dev, dtype=torch.float32)
        fn = lambda: torch._scaled_grouped_mm(a8, b8.transpose(-2, -1), sa, sb, offs=offs,  # noqa: E731
                                              out_dtype=torch.bfloat16)
        fn()
        row(rows, "moe torch._scaled_grouped_mm (fp8 rowwise)", shape, time_ms(fn, args.iters), flops)
    except Exception as ex:  # noqa: BLE001
        row(rows, "moe torch._scaled_grouped_mm (fp8 rowwise)", shape, float("nan"), flops, f"n/a: {str(ex)[:80]}")


def bench_fp8(args, rows):
    dev = "cuda"
    m, n, k = (int(x) for x in args.fp8_shape.split("x"))
    flops = 2.0 * m * n * k
    shape = f"{m}x{n}x{k}"
    x = torch.empty(m, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
    w = torch.empty(n, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
    xq, xs = to_e4m3(x)
    wq, ws = to_e4m3(w)
    row(rows, "gemm torch.mm (bf16)", shape, time_ms(lambda: torch.mm(x, w.t()), args.iters), flops)
    for fast in (False, True):
        try:
            fn = lambda: torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16,  # noqa: E731
                                          use_fast_accum=fast)
            fn()
            row(rows, f"gemm torch._scaled_mm tensorwise{' fast_accum' if fast else ''}", shape,
                time_ms(fn, args.iters), flops)
        except Exception as ex:  # noqa: BLE001
            row(rows, "gemm torch._scaled_mm tensorwise", shape, float("nan"), flops, f"n/a: {str(ex)[:80]}")
    try:  # 1x128 for x (outer-dim-major scales), 128x128 for w
        kb, nb = (k + 127) // 128, (n + 127) // 128
        sx = torch.ones(m, kb, device=dev, dtype=torch.float32).t().contiguous().t()
        sw = torch.ones(nb, kb, device=dev, dtype=torch.float32)
        fn = lambda: torch._scaled_mm(xq, wq.t(), scale_a=sx, scale_b=sw.t(), out_dtype=torch.bfloat16)  # noqa: E731
        fn()
        row(rows, "gemm torch._scaled_mm blockwise 1x128/128x128", shape, time_ms(fn, args.iters), flops)
    except Exception as ex:  # noqa: BLE001
        row(rows, "gemm torch._scaled_mm blockwise 1x128/128x128", shape, float("nan"), flops, f"n/a: {str(ex)[:80]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--topk", type=int, default=2)
    ap.add_argument("--n", type=int, default=1536)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=20261121, help="perflab's default --seed")
    ap.add_argument("--fp8-shape", default="", help="MxNxK for the FP8 GEMMs (none: skip them)")
    ap.add_argument("--no-moe", action="store_true")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup-s", type=float, default=1.0, help="seconds of warm-up per measurement (power steady state)")
    ap.add_argument("--min-time-s", type=float, default=1.0, help="sample for at least this long per measurement")
    args = ap.parse_args()
    TIMING["warmup_s"], TIMING["min_time_s"] = args.warmup_s, args.min_time_s
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}", file=sys.stderr)
    rows = []
    if not args.no_moe:
        bench_moe(args, rows)
    if args.fp8_shape:
        bench_fp8(args, rows)
    print(f"{'what':48s} {'shape':36s} {'median ms':>10s} {'TFLOP/s':>8s}  note")
    for name, shape, ms, tf, note in rows:
        print(f"{name:48s} {shape:36s} {ms:10.4f} {tf:8.1f}  {note}")


if __name__ == "__main__":
    main()
