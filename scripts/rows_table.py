#!/usr/bin/env python3
"""The row targets' figures from perflab results.csv files, as the row targets' bars read them: median, TB/s counted
(x read + y written once), % of the cuda_memcpy reference variant of the same run, speedup over the baseline.

    python3 scripts/rows_table.py ART/*/results.csv
"""
import csv
import glob
import sys



def main(paths):
    rows = []
    for pattern in paths:
        for path in sorted(glob.glob(pattern)):
            with open(path, newline="") as f:
                rows += [r for r in csv.DictReader(f) if r.get("median_ms")]
    print(f"{'target':<16} {'variant':<16} {'status':<8} {'verified':<8} {'median us':>10} {'GB/s':>7} "
          f"{'% memcpy':>9} {'speedup':>8}")
    for r in rows:
        pct = r.get("pct_of_reference") or ""
        print(f"{r['target']:<16} {r['variant']:<16} {r['status']:<8} {r['verified']:<8} "
              f"{float(r['median_ms']) * 1e3:10.1f} {float(r['gbps'] or 0):7.0f} "
              f"{(float(pct) if pct else 0):9.1f} {(float(r['speedup']) if r.get('speedup') else 0):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
