#!/usr/bin/env python3
"""Every GEMM kernel row is in the kernel table, once: a row defined beside its launcher (kernels/gemm/**/*_rows.c,
`const pl_gemm_kernel pl_gemm_row_NAME = {...}`) that kernels/gemm/host/kernel_table.c does not list as ROW(NAME)
would be left out of the pick silently, and a name listed twice would be timed twice.

Usage: scripts/check_gemm_rows.py [REPO]   (REPO defaults to this script's repository)
Exit 0 when the two agree, 1 with one line per row that differs, 2 on bad usage.
"""
import glob
import os
import re
import sys

DEFINED = re.compile(r"^\s*const\s+pl_gemm_kernel\s+pl_gemm_row_(\w+)\s*=", re.M)
LISTED = re.compile(r"\bROW\((\w+)\)")


def main(argv):
    if len(argv) > 2:
        print("usage: check_gemm_rows.py [REPO]", file=sys.stderr)
        return 2
    repo = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    table = os.path.join(repo, "kernels", "gemm", "host", "kernel_table.c")
    if not os.path.isfile(table):
        print(f"check_gemm_rows: {table}: not found: pass the repository's root", file=sys.stderr)
        return 2
    defined = {}
    for path in sorted(glob.glob(os.path.join(repo, "kernels", "gemm", "**", "*_rows.c"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            for name in DEFINED.findall(f.read()):
                defined[name] = os.path.relpath(path, repo)
    with open(table, encoding="utf-8") as f:
        listed = LISTED.findall(f.read())
    bad = []
    for name, path in sorted(defined.items()):
        if name not in listed:
            bad.append(f"{path}: pl_gemm_row_{name} is not listed in kernels/gemm/host/kernel_table.c: add ROW({name})")
    for name in sorted(set(listed)):
        if listed.count(name) > 1:
            bad.append(f"kernels/gemm/host/kernel_table.c: ROW({name}) is listed {listed.count(name)} times")
        if name not in defined:
            bad.append(f"kernels/gemm/host/kernel_table.c: ROW({name}) names no row of a *_rows.c file")
    for line in bad:
        print(line)
    if not defined:
        print("check_gemm_rows: no rows found under kernels/gemm", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
