#!/usr/bin/env python3
"""Writes the heuristic's measured table (kernels/gemm/host/heuristic_table.c) from perflab gemm sweeps.

    perflab gemm --shapes wide --layout nk --rounds 5 ...   ->  artifacts/gemm-<id>/comparison.json
    perflab gemm --shapes wide --layout kn --rounds 5 ...   ->  artifacts/gemm-<id>/comparison.json
    scripts/gemm_heuristic_table.py artifacts/gemm-*/comparison.json

One entry per measured (layout, M, N, K) and GPU: the best verified native configuration (the perflab column's best),
with the GPU's SM count and L2 size so that pl_gemm_bf16 uses it only on a GPU like it (GPUs of one SM count differ in
memory: the H100 SXM and the H200 have 132 SMs both, 50 and 60 MiB of L2, 3.35 and 4.8 TB/s of HBM). --any-l2 writes
the L2 size 0 (any GPU of that SM count: runs on both judge together), --any-gpu both 0 (every GPU). On a GPU, the
entries of its L2 size come first and those of any L2 size serve where none does; a problem runs the entry nearest it
within a factor sqrt(2) in each of M, N and K (gemm/host/heuristic.h), if that kernel is enumerated, runs on the GPU and
takes the problem; the model decides the rest. A shape measured in more
than one file keeps the run where its best configuration was fastest. --min-gain G writes only the shapes where the
model's pick was more than G (e.g. 0.03) slower than the best, so that the table holds only what the rule gets wrong.
Only kernels whose names are C identifiers are accepted (they are written into C source).

--robust reads every configuration's record (the perflab.json beside each comparison.json) and picks, per shape,
the configuration whose worst time over the runs, each relative to that run's fastest configuration, is the least
(the least regret): in one run the configurations within noise of each other trade places, and a table written from
one run's winners misses on the next run's. Runs on GPUs of the same SM count and L2 size judge together (with
--any-l2, of the same SM count). A configuration not timed in every run of its shape is left out; with
--min-runs N, one timed in at least N of them is judged over the runs that timed it (a kernel added after the older
runs).

--keep-from TABLE carries over the entries of an earlier table (a file this script wrote) for the (shape, GPU) pairs
that none of the comparisons measured, so that a sweep of one shape group, or on one GPU, does not drop what other
runs measured (an entry for any L2 size stays beside a new one for one L2 size). Each kept entry
says so in its comment, and the header names the kept shapes (TABLE's header named the runs they came from).

--kernels FILE (the JSON of `perflab gemm --list-kernels --json`) drops the records of kernels the kernel table no longer
holds, and --rename OLD=NEW (repeatable) reads a kernel's records under its new name: a configuration renamed
between runs, or one whose name now belongs to another (rename that one away first: renames apply at once)."""
import argparse
import json
import os
import re
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_comparison import ComparisonError, load, ok_cell  # noqa: E402

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def gpu_key(doc, any_gpu, any_l2):
    """(SM count, L2 MiB rounded) of the comparison's GPU; 0 for what the entries leave open (or the run did not
    record)."""
    gpu = doc.get("gpu") or {}
    sms = 0 if any_gpu else int(gpu.get("sm_count") or 0)
    l2 = gpu.get("l2_mib")
    return sms, (0 if any_gpu or any_l2 or not isinstance(l2, (int, float)) else int(round(l2)))


def entries_of(doc, path, any_gpu, any_l2, min_gain):
    """(key, entry) pairs of one comparison: key (layout, m, n, k, sms, l2_mib), entry a dict."""
    sms, l2 = gpu_key(doc, any_gpu, any_l2)
    for row in doc.get("shapes", []):
        cell = ok_cell(row, "perflab")
        if not cell:
            continue
        kernel = cell.get("kernel", "")
        if not NAME.match(kernel):
            raise ComparisonError(f"{path}: shape {row.get('shape')}: kernel name {kernel!r} is not an identifier")
        h = row.get("heuristic") or {}
        ratio = h.get("pick_over_best")
        if min_gain > 0 and isinstance(ratio, (int, float)) and ratio <= 1 + min_gain:
            continue  # the rule already gets this one right
        yield (doc["layout"], int(row["m"]), int(row["n"]), int(row["k"]), sms, l2), {
            "kernel": kernel, "best_ms": float(cell["median_ms"]), "shape": row.get("shape", ""),
            "pick": h.get("pick"), "ratio": ratio}


def records_of(path, keep=None, rename=None):
    """{(layout, m, n, k): {kernel: median_ms}} of the verified, timed records in the perflab.json beside path, names
    mapped through rename, only those in keep (when given)."""
    side = os.path.join(os.path.dirname(os.path.abspath(path)), "perflab.json")
    try:
        with open(side, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ComparisonError(f"{side}: {e} (--robust needs every configuration's records)") from e
    out = {}
    for r in doc.get("records", []) if isinstance(doc, dict) else []:
        ms = r.get("median_ms")
        if r.get("status") != "ok" or not r.get("verified") or not isinstance(ms, (int, float)) or ms <= 0:
            continue
        if not NAME.match(str(r.get("kernel", ""))):
            raise ComparisonError(f"{side}: kernel name {r.get('kernel')!r} is not an identifier")
        kernel = (rename or {}).get(r["kernel"], r["kernel"])
        if keep is not None and kernel not in keep:
            continue
        key = (r["layout"], int(r["m"]), int(r["n"]), int(r["k"]))
        out.setdefault(key, {})[kernel] = ms
    return out


def robust_table(docs_and_paths, any_gpu, any_l2, keep=None, rename=None, min_runs=0):
    """The least-regret configuration per shape and GPU over every run (see --robust); min_runs > 0: over the runs
    that timed it, if at least min_runs did."""
    runs = {}  # key (layout, m, n, k, sms, l2) -> list of {kernel: ms}, one per run
    meta = {}  # key -> shape name
    for doc, path in docs_and_paths:
        gk = gpu_key(doc, any_gpu, any_l2)
        names = {(doc["layout"], int(r["m"]), int(r["n"]), int(r["k"])): r.get("shape", "") for r in doc["shapes"]}
        for key, times in records_of(path, keep, rename).items():
            if key in names:
                runs.setdefault(key + gk, []).append(times)
                meta[key + gk] = names[key]
    table = {}
    for key, per_run in runs.items():
        need = min(min_runs, len(per_run)) if min_runs > 0 else len(per_run)
        timed = {}
        for t in per_run:
            for kernel in t:
                timed[kernel] = timed.get(kernel, 0) + 1
        common = {kernel for kernel, n in timed.items() if n >= need}
        if not common:
            continue
        def regret(kernel):
            return max(t[kernel] / min(t.values()) for t in per_run if kernel in t)
        kernel = min(sorted(common), key=regret)
        table[key] = {"kernel": kernel, "shape": meta[key],
                      "best_ms": min(t[kernel] for t in per_run if kernel in t), "pick": None, "ratio": None,
                      "regret": regret(kernel), "runs": timed[kernel]}
    return table


KEPT = re.compile(r'^    /\* (?:kept from the earlier table: )?(.*) \*/\n'
                  r'    \{"(nk|kn)", (\d+), (\d+), (\d+), (\d+), "([A-Za-z_][A-Za-z0-9_]*)"(?:, (\d+))?\},$', re.M)


def kept_entries(path, table):
    """The entries of an earlier table (written by this script) whose (shape, GPU) pairs `table` has not, keyed as
    `table`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if "Generated by scripts/gemm_heuristic_table.py" not in text:
        raise ComparisonError(f"{path}: not a table written by gemm_heuristic_table.py")
    kept = {}
    for m in KEPT.finditer(text):
        key = (m[2], int(m[4]), int(m[5]), int(m[6]), int(m[3]), int(m[8] or 0))
        if key not in table:
            kept[key] = {"kept": m[1], "kernel": m[7]}
    return kept


def c_accessor(c_type, array, func, terminator):
    """The end of a generated C table: its terminator row, and the function that returns it with its length."""
    return [f"    {terminator}, /* the end (C11 has no empty arrays) */", "};", "",
            f"const {c_type} *{func}(size_t *n)", "{",
            f"    *n = sizeof {array} / sizeof {array}[0] - 1;", f"    return {array};", "}", ""]


def kernel_names(path):
    """The kernel names of `perflab gemm --list-kernels --json` in path; ComparisonError when unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            return {k["name"] for k in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ComparisonError(f"--kernels {path}: {e} (give the JSON of perflab gemm --list-kernels --json)") from e


def source_of(doc, path):
    """How a generated file's header names one run."""
    gpu = (doc.get("gpu") or {}).get("name", "unknown GPU")
    return (f"{os.path.basename(os.path.dirname(os.path.abspath(path)))} ({gpu}, {doc.get('started_at', '?')}, "
            f"B {doc['layout']}, commit {doc.get('git_commit', '?')})")


def write_atomically(path, text):
    """path holds text, or what it held before (a file written beside it, then renamed over it)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def gpu_words(sms, l2):
    """The GPU an entry's key names, as the header writes it."""
    return (f", {sms} SMs" if sms else ", any GPU") + (f" {l2} MiB L2" if l2 else "")


def render(table, sources):
    out = ["/* Generated by scripts/gemm_heuristic_table.py: do not edit by hand.",
           *textwrap.wrap("Source: " + "; ".join(sources) + ".", 116, initial_indent=" * ", subsequent_indent=" * ",
                          break_on_hyphens=False),
           " * One entry per measured shape and GPU: the best verified native configuration there (pl_gemm_bf16 runs it",
           " * for problems within a factor sqrt(2) of the shape in M, N and K on a GPU with that SM count and, where the",
           " * entry names one, L2 size in MiB: those entries come first). */",
           '#include "gemm/host/heuristic.h"', "", "static const pl_gemm_heuristic_entry entries[] = {"]
    for (layout, m, n, k, sms, l2), e in sorted(table.items()):
        line = f'    {{"{layout}", {sms}, {m}, {n}, {k}, "{e["kernel"]}", {l2}}},'
        if "kept" in e:
            out.append(f"    /* kept from the earlier table: {e['kept']} */")
            out.append(line)
            continue
        note = f"{e['shape']}: {e['best_ms']:.4f} ms"
        if "regret" in e:
            note += f"; at most {e['regret']:.3f}x the fastest over {e['runs']} run(s)"
        if isinstance(e["ratio"], (int, float)):
            note += f"; the model's pick {e['pick']} took {e['ratio']:.3f}x"
        out.append(f"    /* {note} */")
        out.append(line)
    out += c_accessor("pl_gemm_heuristic_entry", "entries", "pl_gemm_heuristic_table", "{NULL, 0, 0, 0, 0, NULL, 0}")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("comparisons", nargs="+", help="comparison.json files of perflab gemm runs (bf16)")
    ap.add_argument("--out", default="kernels/gemm/host/heuristic_table.c", help="where to write (default %(default)s)")
    ap.add_argument("--any-gpu", action="store_true", help="entries for every GPU (SM count and L2 size 0)")
    ap.add_argument("--any-l2", action="store_true",
                    help="entries for every GPU of the runs' SM count (L2 size 0): runs on both judge together")
    ap.add_argument("--min-gain", type=float, default=0.0,
                    help="only shapes where the model's pick was more than this fraction slower than the best")
    ap.add_argument("--robust", action="store_true",
                    help="per shape the configuration with the least worst-case slowdown over the runs (see above)")
    ap.add_argument("--min-runs", type=int, default=0,
                    help="--robust: judge a configuration timed in at least this many runs of a shape (default: all)")
    ap.add_argument("--keep-from", metavar="TABLE",
                    help="carry over TABLE's entries for the (shape, GPU) pairs none of the comparisons measured")
    ap.add_argument("--kernels", help="--robust: the kernel table (perflab gemm --list-kernels --json): others dropped")
    ap.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                    help="--robust: read OLD's records as NEW's (repeatable; all at once)")
    a = ap.parse_args(argv)
    if a.min_gain < 0:
        ap.error("--min-gain must be >= 0")
    if a.min_runs < 0:
        ap.error("--min-runs must be >= 0")
    if a.robust and a.min_gain > 0:
        ap.error("--robust and --min-gain do not go together")
    if not a.robust and (a.min_runs or a.kernels or a.rename):
        ap.error("--min-runs, --kernels and --rename go with --robust")
    rename = {}
    for item in a.rename:
        old, sep, new = item.partition("=")
        if not sep or not NAME.match(old) or not NAME.match(new):
            ap.error(f"--rename {item!r}: give OLD=NEW, both kernel names")
        rename[old] = new
    try:
        keep = kernel_names(a.kernels) if a.kernels else None
    except ComparisonError as e:
        print(f"gemm_heuristic_table.py: {e}", file=sys.stderr)
        return 2
    table, sources, docs = {}, [], []
    try:
        for path in a.comparisons:
            doc = load(path)
            sources.append(source_of(doc, path))
            docs.append((doc, path))
            if a.robust:
                continue
            for key, e in entries_of(doc, path, a.any_gpu, a.any_l2, a.min_gain):
                if key not in table or e["best_ms"] < table[key]["best_ms"]:
                    table[key] = e
        if a.robust:
            table = robust_table(docs, a.any_gpu, a.any_l2, keep, rename, a.min_runs)
        if a.keep_from:
            kept = kept_entries(a.keep_from, table)
            table.update(kept)
            shapes = ", ".join(f"{m}x{n}x{k} ({layout}{gpu_words(sms, l2)})" for layout, m, n, k, sms, l2 in sorted(kept))
            sources.append(f"and entries kept from the earlier table for shapes (and GPUs) these runs did not measure: "
                           f"{shapes or 'none'}")
    except (ComparisonError, OSError) as e:
        print(f"gemm_heuristic_table.py: {e}", file=sys.stderr)
        return 2
    write_atomically(a.out, render(table, sources))
    print(f"wrote {a.out}: {len(table)} entries from {len(a.comparisons)} file(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
