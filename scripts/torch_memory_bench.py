#!/usr/bin/env python3
"""PyTorch's own kernels for the memory-hierarchy chapter's targets, on the same shapes and the same GPU, timed
by perflab.bench (scripts/torch_timing.py: the harness of `perflab run` on torch's stream), eager and under
torch.compile (default and max-autotune), for the comparison in docs/lessons/memory.md and reduce.md.

    python3 scripts/torch_memory_bench.py [--reps 50] [--no-compile]

What each row runs (what a PyTorch user would write):
  transpose   x.t().contiguous(), x fp32 16384 x 16384          (memory:transpose)
  copy        y.copy_(x), the same bytes                          (the ceiling)
  sum fp32    x.sum(), 256m fp32                                  (reduce:sum)
  sum bf16    x.sum(dtype=torch.float32), 256m bf16               (reduce:sum --dtype bf16)
  bincount    torch.bincount(keys, minlength=256), 256m int32 keys, uniform and Zipf(1.2)   (atomics:histogram)
  stencil     F.conv2d with the 5-point cross, padding 1, fp32 (TF32 off), 16384 x 16384   (memory:async_prefetch)
GB/s counts the fewest bytes (perflab's counters), so the columns compare directly with `perflab run`.
"""
import argparse

import torch
import torch.nn.functional as F

from torch_timing import compiled, median_ms


def timer(rows, reps, compile_too):
    """add(op, shape, fn, bytes): a row for fn eager, and one per torch.compile mode."""
    def add(op, shape, fn, nbytes):
        rows.append((op, shape, median_ms(fn, nbytes, min_samples=reps), nbytes))
        for label, cfn in compiled(fn, op) if compile_too else []:
            rows.append((f"{op} [{label}]", shape, median_ms(cfn, nbytes, min_samples=reps), nbytes))
    return add


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=50, help="samples at least (perflab's --min-samples)")
    ap.add_argument("--no-compile", action="store_true", help="eager only (no torch.compile rows)")
    args = ap.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)
    rows = []
    add = timer(rows, args.reps, not args.no_compile)

    n = 16384
    x = torch.rand((n, n), device=dev, generator=gen) * 2 - 1
    y = torch.empty_like(x)
    add("transpose", f"{n}x{n} fp32", lambda: x.t().contiguous(), 8.0 * n * n)
    add("copy", f"{n}x{n} fp32", lambda: y.copy_(x), 8.0 * n * n)
    w = torch.tensor([[0.0, 0.125, 0.0], [0.125, 0.5, 0.125], [0.0, 0.125, 0.0]], device=dev).view(1, 1, 3, 3)
    x4 = x.view(1, 1, n, n)
    add("stencil conv2d", f"{n}x{n} fp32", lambda: F.conv2d(x4, w, padding=1), 8.0 * n * n)
    del x, y, x4

    m = 256 << 20
    v = torch.rand(m, device=dev, generator=gen) * 2 - 1
    add("sum", "256m fp32", lambda: v.sum(), 4.0 * m)
    vb = v.to(torch.bfloat16)
    add("sum", "256m bf16", lambda: vb.sum(dtype=torch.float32), 2.0 * m)
    del v, vb

    bins = 256
    keys = torch.randint(0, bins, (m,), device=dev, generator=gen, dtype=torch.int32)
    add("bincount", "256m uniform, 256 bins", lambda: torch.bincount(keys, minlength=bins), 4.0 * m + 4 * bins)
    p = torch.arange(1, bins + 1, device=dev, dtype=torch.float64).pow(-1.2)
    cdf = (p.cumsum(0) / p.sum()).to(torch.float32)
    keys = torch.searchsorted(cdf, torch.rand(m, device=dev, generator=gen)).clamp_(max=bins - 1).to(torch.int32)
    add("bincount", "256m zipf 1.2, 256 bins", lambda: torch.bincount(keys, minlength=bins), 4.0 * m + 4 * bins)

    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    print(f"{'op':<44} {'shape':<26} {'median':>12} {'GB/s':>8}")
    for op, shape, ms, bytes_ in rows:
        print(f"{op:<44} {shape:<26} {ms * 1e3:>9.1f} us {bytes_ / ms / 1e6:>8.0f}")


if __name__ == "__main__":
    main()
