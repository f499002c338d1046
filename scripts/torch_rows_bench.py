#!/usr/bin/env python3
"""PyTorch's own row kernels timed the way `perflab run` times the row targets, for a side-by-side comparison.

Same shapes and dtypes as norm:rmsnorm, norm:layernorm, softmax:rows and fusion:elementwise_chain (bf16 rows x
cols, bf16 weight/bias, the same eps and scale) and memory:transpose (fp32, its own --transpose-rows/-cols; the op
is `--ops transpose`, not in the default list), the same byte counts (x read once, y written once, the cols-sized
vectors once), timed by perflab.bench (scripts/torch_timing.py: the harness of `perflab run`, latched, on torch's
stream), eager and under torch.compile (default and max-autotune; a mode that cannot compile is said and left out).
A device-to-device copy of x into y is the ceiling, as perflab's cuda_memcpy variant.

    python3 scripts/torch_rows_bench.py                        # 16384 x 8192, table on stdout
    python3 scripts/torch_rows_bench.py --perflab-csv ART/*/results.csv --json torch_rows.json

With --perflab-csv (results.csv of a `perflab run` of those targets on the same GPU), the table adds perflab's
optimized variants and the ratio torch median / perflab median (> 1: perflab faster).
"""
import argparse
import csv
import glob
import json
import sys

import torch
import torch.nn.functional as F

from torch_timing import compiled, median_ms


def make_ops(rows, cols, rms_eps, ln_eps, scale, dev, t_rows, t_cols):
    """name -> (torch call, bytes moved, perflab target, perflab's optimized variants, what it runs)."""
    g = torch.Generator(device=dev)
    g.manual_seed(1234)

    def uniform(shape, lo, hi):
        return (torch.rand(shape, generator=g, device=dev, dtype=torch.float32) * (hi - lo) + lo).to(torch.bfloat16)

    xn = uniform((rows, cols), -2.0, 2.0)
    xl = uniform((rows, cols), -1.0, 3.0)
    xs = uniform((rows, cols), -4.0, 4.0)
    xc = uniform((rows, cols), -1.0, 1.0)
    w = uniform((cols,), 0.5, 1.5)
    b = uniform((cols,), -1.0, 1.0)
    y = torch.empty_like(xn)
    xt = torch.rand((t_rows, t_cols), generator=g, device=dev, dtype=torch.float32) * 2.0 - 1.0
    yt = torch.empty((t_cols, t_rows), device=dev, dtype=torch.float32)
    mat = 2.0 * rows * cols  # one bf16 matrix
    vec = 2.0 * cols
    return {
        "rmsnorm": (lambda: F.rms_norm(xn, (cols,), w, rms_eps), 2 * mat + vec, "norm:rmsnorm",
                    ("fused",), "F.rms_norm"),
        "layernorm": (lambda: F.layer_norm(xl, (cols,), w, b, ln_eps), 2 * mat + 2 * vec, "norm:layernorm",
                      ("fused", "fused_async", "fused_shifted"), "F.layer_norm"),
        "softmax": (lambda: torch.softmax(xs, dim=-1), 2 * mat, "softmax:rows",
                    ("online_fused", "online_ex2"), "torch.softmax"),
        "elementwise_chain": (lambda: F.gelu(xc + b, approximate="tanh") * scale, 2 * mat + vec,
                              "fusion:elementwise_chain", ("fused",), "(x + b), F.gelu(tanh), * scale"),
        "transpose": (lambda: yt.copy_(xt.t()), 8.0 * t_rows * t_cols, "memory:transpose",
                      ("padded_ilp", "vec16_swizzled", "cublas_geam"), "yt.copy_(x.t()) (fp32)"),
        "copy": (lambda: y.copy_(xn), 2 * mat, "norm:rmsnorm", ("cuda_memcpy",), "y.copy_(x) (D2D)"),
    }


def load_perflab(paths):
    """(target, variant) -> median ms from perflab results.csv files (the last one wins)."""
    out = {}
    for pattern in paths:
        for path in sorted(glob.glob(pattern)):
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    if row.get("median_ms"):
                        out[(row["target"], row["variant"])] = float(row["median_ms"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=8192)
    ap.add_argument("--transpose-rows", type=int, default=16384, help="rows of the fp32 transpose's input")
    ap.add_argument("--transpose-cols", type=int, default=16384, help="columns of the fp32 transpose's input")
    ap.add_argument("--rms-eps", type=float, default=1e-6)
    ap.add_argument("--ln-eps", type=float, default=1e-5)
    ap.add_argument("--scale", type=float, default=1.7)
    ap.add_argument("--ops", default="rmsnorm,layernorm,softmax,elementwise_chain,copy")
    ap.add_argument("--no-compile", action="store_true", help="eager only (no torch.compile rows)")
    ap.add_argument("--perflab-csv", nargs="*", default=[], help="perflab results.csv files (globs) to compare with")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda", 0)
    props = torch.cuda.get_device_properties(dev)
    ops = make_ops(args.rows, args.cols, args.rms_eps, args.ln_eps, args.scale, dev, args.transpose_rows,
                   args.transpose_cols)
    perflab = load_perflab(args.perflab_csv)
    results = []
    print(f"# {props.name}, torch {torch.__version__}, {args.rows} x {args.cols} bf16, perflab.bench medians")
    header = f"{'op':<18} {'torch call':<32} {'torch us':>9} {'GB/s':>7}"
    if perflab:
        header += f" {'perflab variant':<30} {'us':>8} {'GB/s':>7} {'perflab speedup':>15}"
    print(header)
    for name in args.ops.split(","):
        fn, nbytes, target, variants, what = ops[name]
        for label, cfn in [] if args.no_compile or name == "copy" else compiled(fn, name):
            med = median_ms(cfn, nbytes)
            results.append({"op": name, "torch_call": f"{what} [{label}]", "bytes": nbytes, "torch_median_ms": med,
                            "torch_gbps": nbytes / (med * 1e-3) / 1e9, "torch_version": torch.__version__,
                            "gpu": props.name, "perflab": []})
            print(f"{name:<18} {label:<32} {med * 1e3:9.1f} {results[-1]['torch_gbps']:7.0f}", flush=True)
        med = median_ms(fn, nbytes)
        shape = ((args.transpose_rows, args.transpose_cols, "fp32") if name == "transpose"
                 else (args.rows, args.cols, "bf16"))
        r = {"op": name, "torch_call": what, "rows": shape[0], "cols": shape[1], "dtype": shape[2],
             "bytes": nbytes, "torch_median_ms": med, "torch_gbps": nbytes / (med * 1e-3) / 1e9,
             "torch_version": torch.__version__, "gpu": props.name, "perflab": []}
        lines = []
        for variant in variants:  # one line per perflab variant found
            pm = perflab.get((target, variant))
            if pm:
                r["perflab"].append({"target": target, "variant": variant, "median_ms": pm,
                                     "gbps": nbytes / (pm * 1e-3) / 1e9, "speedup_vs_torch": med / pm})
                lines.append(f" {target + ' ' + variant:<30} {pm * 1e3:8.1f} {nbytes / (pm * 1e-3) / 1e9:7.0f} "
                             f"{med / pm:14.2f}x")
        head = f"{name:<18} {what:<32} {med * 1e3:9.1f} {r['torch_gbps']:7.0f}"
        print(head + (lines[0] if lines else ""), flush=True)
        for extra in lines[1:]:
            print(" " * len(head) + extra, flush=True)
        results.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
