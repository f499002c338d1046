#!/usr/bin/env python3
"""One kernel under 30 µs timed four ways on the same GPU: `perflab run` (the target norm:rmsnorm's fused variant),
perflab.bench (the same kernel through perflab.ops, in this process), triton.testing.do_bench and
torch.utils.benchmark; the same figures for PyTorch's own F.rms_norm with the three in-process timers.

    python3 scripts/timing_side_by_side.py [--rows 4096] [--cols 4096] [--perflab build/perflab] [--json out.json]

What differs: perflab holds the stream with its latch until a whole sample is enqueued, so its events span the GPU's
work alone; do_bench and torch.utils.benchmark time calls whose host-side launch cost (Python, dispatch, the driver)
can land between their start and stop, which on a kernel of a few microseconds is a large share of the reading.
docs/python.md says how to read the table. Exit 3 without a GPU.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from torch_timing import perflab  # noqa: E402


def perflab_run_us(binary, rows, cols):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([binary, "run", "--targets", "norm:rmsnorm", "--target-extra-arg",
                            f"norm:rmsnorm=--rows {rows} --cols {cols}", "--artifacts-dir", d,
                            "--expectations-dir", d, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"perflab run exited {p.returncode}: {p.stderr.strip()}")
    variants = json.loads(p.stdout)["targets"][0]["variants"]
    return next(v for v in variants if v["name"] == "fused")["stats"]["median_ms"] * 1e3


def do_bench_us(fn):
    try:
        import triton.testing
    except ImportError:
        return None, "triton is not installed"
    return triton.testing.do_bench(fn, warmup=100, rep=500, return_mode="median") * 1e3, ""


def torch_benchmark_us(fn):
    import torch.utils.benchmark as tb
    m = tb.Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=1.0)
    return m.median * 1e6, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--perflab", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "build",
                                                     "perflab"))
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        print("no usable GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 3
    x = torch.randn(args.rows, args.cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(args.cols, device="cuda", dtype=torch.bfloat16)
    nbytes = 2 * x.numel() * 2
    calls = {"perflab.ops.rms_norm": lambda: perflab.ops.rms_norm(x, w),
             "F.rms_norm": lambda: F.rms_norm(x, (args.cols,), w, 1e-6)}
    rows = [{"call": "norm:rmsnorm fused", "timer": "perflab run", "us": perflab_run_us(args.perflab, args.rows,
                                                                                      args.cols), "note": ""}]
    for name, fn in calls.items():
        rows.append({"call": name, "timer": "perflab.bench", "us": perflab.bench(fn, bytes=nbytes).median_ms * 1e3,
                     "note": ""})
        for timer, f in (("triton do_bench", do_bench_us), ("torch.utils.benchmark", torch_benchmark_us)):
            us, note = f(fn)
            rows.append({"call": name, "timer": timer, "us": us, "note": note})
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, rms_norm {args.rows} x {args.cols} bf16 "
          f"({nbytes / 2**20:.0f} MiB moved)")
    print(f"{'call':<22} {'timer':<22} {'median us':>10} {'GB/s':>7} {'/ perflab run':>14}")
    ref = rows[0]["us"]
    for r in rows:
        if r["us"] is None:
            print(f"{r['call']:<22} {r['timer']:<22} {'-':>10} {'-':>7} {'-':>14}  {r['note']}")
        else:
            print(f"{r['call']:<22} {r['timer']:<22} {r['us']:10.2f} {nbytes / r['us'] / 1e3:7.0f} "
                  f"{r['us'] / ref:14.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
