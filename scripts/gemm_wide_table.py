#!/usr/bin/env python3
"""The wide-shape table from perflab gemm runs, and its bars.

    scripts/gemm_wide_table.py artifacts/gemm-<id>/comparison.json [more.json ...] [--strict]

Per shape (one table per file: a GPU and a B layout): TFLOP/s of cuBLAS, cuBLASLt, the best native configuration
and the heuristic's pick (pl_gemm_bf16's choice), native / best of cuBLAS and cuBLASLt, and the pick's time over
the best native's ("head to head": the two re-timed against each other after the sweep, where the pick was not
the best; perflab gemm judges "within 3%" on that one). Then the bars, over the shapes where both native and
cuBLAS have a verified record:
  - geometric mean of native / best cuBLAS >= 0.97 (bf16; fp8: >= 1.0 of cuBLASLt's FP8),
  - no shape below 0.85,
  - the heuristic's pick within 3% of the best native configuration on >= 90% of the shapes.
Markdown on stdout (paste into docs/perf/gemm.md). --strict: exit 1 when a bar is missed. --merge: the files are
parts of one sweep (the same GPU and layout, disjoint shapes, e.g. a group run in two invocations to fit a time
limit): one table and one set of bars over all their shapes."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_comparison import ComparisonError, best_cublas_tflops, geomean, load, ok_cell  # noqa: E402

GEOMEAN_BARS, FLOOR_BAR, PICK_BAR, PICK_TOL = {"bf16": 0.97, "fp8": 1.0}, 0.85, 0.90, 0.03


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def table(doc):
    """Markdown lines and the bars' figures of one comparison."""
    lines = ["| shape | M | N | K | cuBLAS | cuBLASLt | best native | kernel | heuristic's pick | pick / best "
             "| head to head | native / cuBLAS |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |"]
    ratios, picks_ok, picks = [], 0, 0
    for row in doc.get("shapes", []):
        m, n, k = row["m"], row["n"], row["k"]
        cb, lt, nat = ok_cell(row, "cublas"), ok_cell(row, "cublaslt"), ok_cell(row, "perflab")
        best = best_cublas_tflops(row)
        ratio = nat["tflops"] / best if nat and best else None
        if ratio is not None:
            ratios.append(ratio)
        h = row.get("heuristic") or {}
        pick_ratio = h.get("pick_over_best") if h.get("pick_timed") else None
        if h:
            picks += 1
            picks_ok += bool(h.get("within_3pct"))
        pick = h.get("pick", "-")
        if h and not h.get("pick_timed"):
            pick += " (not timed)"
        lines.append(f"| {row['shape']} | {m} | {n} | {k} | {fmt(cb and cb['tflops'])} | {fmt(lt and lt['tflops'])} "
                     f"| {fmt(nat and nat['tflops'])} | {nat['kernel'] if nat else '-'} | {pick} "
                     f"| {fmt(pick_ratio, '.3f')} | {fmt(h.get('confirmed_pick_over_best'), '.3f')} "
                     f"| {fmt(ratio, '.3f')} |")
    return lines, ratios, picks, picks_ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("comparisons", nargs="+")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a bar is missed")
    ap.add_argument("--merge", action="store_true", help="the files are parts of one sweep: one table")
    a = ap.parse_args(argv)
    missed = 0
    try:
        docs = [load(path, ("bf16", "fp8")) for path in a.comparisons]
    except ComparisonError as e:
        print(f"gemm_wide_table.py: {e}", file=sys.stderr)
        return 2
    if a.merge and len(docs) > 1:
        keys = {((d.get("gpu") or {}).get("name"), d.get("dtype"), d.get("layout")) for d in docs}
        names = [row.get("shape") for d in docs for row in d.get("shapes", [])]
        if len(keys) != 1 or len(names) != len(set(names)):
            print("gemm_wide_table.py: --merge takes parts of one sweep: the same GPU, dtype and layout, no shape twice",
                  file=sys.stderr)
            return 2
        merged = dict(docs[0])
        merged["shapes"] = [row for d in docs for row in d.get("shapes", [])]
        merged["started_at"] = " + ".join(str(d.get("started_at", "?")) for d in docs)
        docs = [merged]
    for doc in docs:
        gpu = (doc.get("gpu") or {}).get("name", "unknown GPU")
        settings = doc.get("settings") or {}
        print(f"### {gpu}, {doc['dtype']}, B {doc['layout']}, {doc.get('started_at', '?')} (commit {doc.get('git_commit', '?')}, "
              f"{settings.get('rounds', 1)} round(s))\n")
        lines, ratios, picks, picks_ok = table(doc)
        print("\n".join(lines))
        g = geomean(ratios)
        low = min(ratios) if ratios else float("nan")
        frac = picks_ok / picks if picks else float("nan")
        gbar = GEOMEAN_BARS[doc["dtype"]]
        bars = [(f"geometric mean native / best cuBLAS {g:.3f} (bar {gbar})", ratios and g >= gbar),
                (f"lowest shape {low:.3f} (bar {FLOOR_BAR})", ratios and low >= FLOOR_BAR),
                (f"heuristic's pick within {PICK_TOL:.0%} of the best native on {picks_ok}/{picks} = {frac:.0%} "
                 f"(bar {PICK_BAR:.0%})", picks and frac >= PICK_BAR)]
        print(f"\n{len(ratios)} shapes with native and cuBLAS records:")
        for text, met in bars:
            print(f"- {text}: {'met' if met else 'NOT met'}")
            missed += not met
        print()
    return 1 if a.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
