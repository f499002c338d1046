#!/usr/bin/env python3
"""Technique suite II: its bars, judged from one request's artifacts.

usage: suite2_summary.py [--peak PEAK_JSON] RUN_JSON...

Prints every variant (median, GB/s or TFLOP/s, speedup over the baseline with its 95% interval, % of the reference),
then the bars: pinned H2D against `perflab peak`'s pinned H2D, the achieved overlap of streams:overlap against its
ideal, gemm:batched native against cublasGemmStridedBatchedEx, and whether every optimized variant is a significant
speedup. Reads only what perflab wrote; computes nothing that was not measured."""
import json
import sys


def load_runs(paths):
    targets = []
    for p in paths:
        with open(p) as f:
            run = json.load(f)
        for t in run.get("targets", []):
            targets.append(t)
    return targets


def median(v):
    s = v.get("stats")
    return s["median_ms"] if s else None


def find(t, name):
    for v in t.get("variants", []):
        if v["name"] == name:
            return v
    return None


def table(targets):
    print(f"{'target':28} {'variant':15} {'status':8} {'median':>11} {'GB/s':>8} {'TFLOP/s':>8} "
          f"{'speedup [95% CI]':>24} {'% ref':>7}")
    for t in targets:
        label = t["name"] + (f" ({t['params'].get('direction')})" if "direction" in t.get("params", {}) else "")
        if t["status"] == "skipped":
            print(f"{label:28} {'-':15} skipped  {t.get('reason') or ''}")
            continue
        for v in t["variants"]:
            med = median(v)
            d = v.get("derived", {})
            sp = v.get("speedup")
            sps = (f"{sp['value']:.2f}x [{sp['ci_low']:.2f},{sp['ci_high']:.2f}]{'' if sp['significant'] else ' n.s.'}"
                   if sp else "")
            fmt = lambda x, f: (f % x) if isinstance(x, (int, float)) and x == x else "-"
            print(f"{label:28} {v['name'] + (' (ref)' if v.get('reference') else ''):15} {v['status'][:8]:8} "
                  f"{fmt(med * 1e3 if med else None, '%9.1f us') if med else '-':>11} {fmt(d.get('gbps'), '%.1f'):>8} "
                  f"{fmt(d.get('tflops'), '%.2f'):>8} {sps:>24} {fmt(d.get('pct_of_reference'), '%.1f'):>7}")


def bars(targets, peak):
    print("\nbars (technique suite II, same request):")
    ok_all = True
    for t in targets:
        if t["name"] == "transfer:pinned" and t["params"].get("direction") == "h2d" and peak:
            v = find(t, "pinned")
            ceiling = next((f for f in peak.get("figures", []) if f.get("id") == "h2d_pinned"), None)
            if v and v.get("derived", {}).get("gbps") and ceiling and ceiling.get("value"):
                r = v["derived"]["gbps"] / ceiling["value"]
                ok = r >= 0.9
                ok_all &= ok
                print(f"  transfer:pinned pinned H2D {v['derived']['gbps']:.1f} GB/s vs peak h2d_pinned "
                      f"{ceiling['value']:.1f} GB/s: {r:.3f}x (bar >= 0.9): {'MET' if ok else 'NOT MET'}")
        if t["name"] == "streams:overlap" and t["status"] != "skipped":
            m = {n: median(find(t, n)) for n in ("baseline", "streams", "stage_h2d", "stage_kernel", "stage_d2h")}
            if all(m.values()):
                ideal = max(m["stage_h2d"], m["stage_kernel"], m["stage_d2h"])
                total = m["stage_h2d"] + m["stage_kernel"] + m["stage_d2h"]
                saved = (m["baseline"] - m["streams"]) / (m["baseline"] - ideal) if m["baseline"] > ideal else float("nan")
                eff = ideal / m["streams"]
                ok = eff >= 0.8
                ok_all &= ok
                print(f"  streams:overlap stages H2D {m['stage_h2d']:.3f} / kernel {m['stage_kernel']:.3f} / D2H "
                      f"{m['stage_d2h']:.3f} ms: ideal max {ideal:.3f}, sum {total:.3f}, serial {m['baseline']:.3f}, "
                      f"streams {m['streams']:.3f} ms")
                print(f"    ideal/achieved {eff:.3f} (bar >= 0.8): {'MET' if ok else 'NOT MET'}; share of the ideal "
                      f"saving achieved (serial - streams)/(serial - ideal) {saved:.3f}")
        if t["name"] == "gemm:batched" and t["status"] != "skipped":
            ref = find(t, "cublas_strided")
            natives = [v for v in t["variants"] if v["name"].startswith("native") and median(v)]
            if ref and median(ref) and natives:
                for v in natives:
                    print(f"  gemm:batched {v['name']} {median(v) * 1e3:.2f} us vs cublasGemmStridedBatchedEx "
                          f"{median(ref) * 1e3:.2f} us: {median(ref) / median(v):.3f}x")
                plain = [v for v in natives if "pdl" not in v["name"]]
                best = min(plain, key=median)
                r = median(ref) / median(best)
                ok = r >= 1.0
                ok_all &= ok
                print(f"    best rung without PDL ({best['name']}): {r:.3f}x (bar >= 1.0): {'MET' if ok else 'NOT MET'}")
    for t in targets:
        if t["status"] == "skipped":
            continue
        for v in t["variants"][1:]:
            if v.get("reference") or v["name"].startswith("stage_"):
                continue
            sp = v.get("speedup")
            good = bool(sp and sp["significant"] and sp["ci_low"] > 1)
            ver = v.get("verification", {})
            if not good or not ver.get("passed"):
                ok_all = False
                print(f"  {t['name']}/{v['name']}: speedup "
                      f"{'%.2fx [%.2f, %.2f]' % (sp['value'], sp['ci_low'], sp['ci_high']) if sp else 'none'}, "
                      f"verified {ver.get('passed')}: NOT a significant verified speedup")
    print(f"  every optimized variant a significant verified speedup and every bar met: {'YES' if ok_all else 'NO'}")


def main(argv):
    peak = None
    if len(argv) > 2 and argv[1] == "--peak":
        try:
            with open(argv[2]) as f:
                peak = json.load(f)
        except (OSError, ValueError) as e:
            print(f"no peak figures: {e}")
        argv = argv[2:]
    targets = load_runs(argv[1:])
    table(targets)
    bars(targets, peak)


if __name__ == "__main__":
    main(sys.argv)
