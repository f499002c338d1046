#!/usr/bin/env python3
"""PyTorch's grouped and FP8 GEMMs on the shapes of perflab's moe:grouped_gemm and gemm:fp8, for a side-by-side
comparison in the same request.

  moe:     torch._grouped_mm (bf16, one call for every expert) and a loop of torch.mm per expert, on the routing
           perflab builds (the Zipf split of T*k slots over E experts, hotspot model, capped at T, experts shuffled
           by the seed: labs/common/moe_routing.c, ported below), A (T*k x K) and every expert's B (N x K);
           torch._scaled_grouped_mm (fp8, row-wise scales) where this PyTorch has it.
  fp8:     torch._scaled_mm at M x N x K with per-tensor scales, and with 1x128 / 128x128 block scales where this
           PyTorch and cuBLASLt take them.

Timing by perflab.bench (scripts/torch_timing.py: perflab's hot mode on torch's stream, latched) after --warmup-s
seconds of calls at load, the median of at least --iters samples over at least --min-time-s seconds (the power limit's
steady state, as perflab measures; 0 and 0 give the short measurement this script made before 2026-11-27, whose first
tens of milliseconds ran at boost clocks). The torch.mm loop and torch._grouped_mm also run under torch.compile
(default and max-autotune) unless --no-compile.

    python3 scripts/torch_moe_bench.py --experts 64 --n 1536 --k 4096 --tokens 8192 --topk 2
    python3 scripts/torch_moe_bench.py --experts 8 --n 14336 --fp8-shape 8192x8192x8192

Same process, same inputs (--perflab-lib): perflab's grouped GEMMs (grouped_c2 and grouped_t), loaded from the shared
library every build makes (build/libperflab.so), called through ctypes on PyTorch's stream beside the torch.mm loop
and torch._grouped_mm, in --rounds interleaved rounds by perflab.compare (the schedule `perflab run` gives power-bound
targets), after checking their output against the loop's: under the power limit a measurement's place in the run and
its inputs' bits move it by several per cent, so only an interleaved comparison on the same tensors is even.

    python3 scripts/torch_moe_bench.py --experts 8 --n 14336 --perflab-lib build/libperflab.so --rounds 5
"""
import ctypes
import argparse
import math
import sys
import time

import torch

from torch_timing import compiled, median_ms, perflab

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
TIMING = {"warmup_s": 1.0, "min_time_s": 1.0, "compile": True}


def warm(fn):
    """Calls at load for TIMING["warmup_s"] seconds (the power limit's steady state), outside the timing."""
    t0 = time.perf_counter()
    done = 0
    while done < 10 or time.perf_counter() - t0 < TIMING["warmup_s"]:
        fn()
        done += 1
        if done % 16 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


def time_ms(fn, iters):
    warm(fn)
    return median_ms(fn, min_samples=iters, min_time_s=TIMING["min_time_s"],
                     max_time_s=max(3.0, 2 * TIMING["min_time_s"]))


def time_with_compiled(rows, name, shape, fn, iters, flops, note=""):
    """A row for fn eager, then one per torch.compile mode."""
    row(rows, name, shape, time_ms(fn, iters), flops, note)
    if TIMING["compile"]:
        for label, cfn in compiled(fn, name):
            row(rows, f"{name} [{label}]", shape, time_ms(cfn, iters), flops, note)


def row(rows, name, shape, ms, flops, note=""):
    rows.append((name, shape, ms, flops / (ms * 1e9) if ms == ms else float("nan"), note))


class GroupedProblem(ctypes.Structure):
    """pl_grouped_gemm_problem (kernels/gemm/grouped.h)."""
    _fields_ = [("groups", ctypes.c_int), ("n", ctypes.c_int), ("k", ctypes.c_int), ("rows", ctypes.c_int),
                ("offsets", ctypes.c_void_p), ("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("d", ctypes.c_void_p),
                ("scale_a", ctypes.c_void_p), ("scale_b", ctypes.c_void_p), ("skip_idle", ctypes.c_int),
                ("cluster", ctypes.c_int)]


def perflab_grouped(path, name, counts, a, b, d, cluster=0):
    """A callable that runs perflab's `name` (pl_grouped_gemm_bf16 or pl_grouped_gemm_bf16_t) on PyTorch's stream."""
    fn = getattr(ctypes.CDLL(path), name)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(GroupedProblem), ctypes.c_void_p]
    offsets = torch.tensor([0] + counts, device=a.device, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    p = GroupedProblem(len(counts), b.shape[1], a.shape[1], a.shape[0], offsets.data_ptr(), a.data_ptr(),
                       b.data_ptr(), d.data_ptr(), None, None, 1, cluster)
    keep = (offsets, p)

    def run():
        err = fn(ctypes.byref(keep[1]), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if err:
            raise RuntimeError(f"{name}: CUDA error {err}")
    return run


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

    if args.perflab_lib:
        ops = [("moe torch.mm loop (bf16)", loop),
               ("moe torch._grouped_mm (bf16)", lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=offs))]
        for name, cluster, label in (("pl_grouped_gemm_bf16", 2, "grouped_c2"), ("pl_grouped_gemm_bf16_t", 0, "grouped_t")):
            out = torch.full_like(d, float("nan"))  # poisoned: a row not written fails the check
            run = perflab_grouped(args.perflab_lib, name, counts, a, b, out, cluster)
            run()
            loop()
            err = ((out.float() - d.float()).norm() / d.float().norm()).item()
            if not err < 1e-2:
                raise RuntimeError(f"{name}: rel L2 {err:.2e} against the torch.mm loop")
            ops.append((f"moe perflab {label} (bf16)", run))
        for _, fn in ops:
            warm(fn)
        c = perflab.compare(dict(ops), check=False, rounds=args.rounds, min_samples=args.iters,
                            min_time_s=TIMING["min_time_s"], artifacts_dir=None, show=False, profile="none")
        for name, _ in ops:
            row(rows, name, shape, c[name].median_ms, flops, f"{args.rounds} interleaved rounds (perflab.compare)")
        return
    time_with_compiled(rows, "moe torch.mm loop (bf16)", shape, loop, args.iters, flops)
    try:
        ref = torch._grouped_mm(a, b.transpose(-2, -1), offs=offs)
        loop()
        err = ((ref.float() - d.float()).norm() / d.float().norm()).item()
        time_with_compiled(rows, "moe torch._grouped_mm (bf16)", shape,
                           lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=offs), args.iters, flops,
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
    time_with_compiled(rows, "gemm torch.mm (bf16)", shape, lambda: torch.mm(x, w.t()), args.iters, flops)
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
    ap.add_argument("--perflab-lib", default="", help="a shared library of perflab's grouped GEMMs: time them beside "
                    "PyTorch's in the same process, interleaved")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds with --perflab-lib")
    ap.add_argument("--no-compile", action="store_true", help="eager only (no torch.compile rows)")
    args = ap.parse_args()
    TIMING["warmup_s"], TIMING["min_time_s"] = args.warmup_s, args.min_time_s
    TIMING["compile"] = not args.no_compile
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
