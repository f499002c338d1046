#!/usr/bin/env python3
"""The arrows between perflab's folders, checked: every #include "..." of the host and device code and every
perflab_* library's link line in CMakeLists.txt must point along an arrow of ALLOWED below (a folder may always
include itself). A kernel family (kernels/<family>/) includes only itself and kernels/common/, so that it lifts out
with kernels/common/ alone.

Usage: scripts/check_layout.py [REPO]   (REPO defaults to this script's repository)
       scripts/check_layout.py --self-test   (the check on a small made-up tree: it must catch each kind of arrow)
Exit 0 when every arrow is allowed, 1 with one line per back-arrow otherwise, 2 on bad usage.

scripts/layout_allow.txt lists arrows tolerated for now ("FILE -> INCLUDED", one a line); an entry that no longer
occurs fails the check too, so that the list only shrinks.
"""
import os
import re
import sys

# Folder -> the folders it may include or link. "kernels/*" stands for every kernel family and kernels/common.
# The order of the lower layers: api (include/perflab) < core < {comm, calc, report, hw}; kernels/common < a kernel
# family; comm and hw also on the kernels (perflab's all-reduce, the peak kernels); the engine sits on the kernels alone (usable without the harness); labs/common on the kernels, the engine,
# comm and core; the targets (labs) on labs/common and the engine; the selector (perflab gemm) on labs/common's GEMM
# glue; serve (perflab serve and scenario) on the engine, hw and core; the CLI on everything; libperflab.so (src/py,
# the C API for Python) on the core and the kernels.
ALLOWED = {
    "api": [],
    "core": ["api"],
    "comm": ["core", "api", "kernels/*"],
    "calc": ["core", "api"],
    "report": ["core", "api"],
    "hw": ["core", "api", "kernels/*"],
    "kernels/common": [],
    "kernels/<family>": ["kernels/common"],
    "engine": ["kernels/*"],
    "labs/common": ["core", "api", "comm", "engine", "kernels/*"],
    "labs": ["labs/common", "api", "comm", "engine", "kernels/*"],
    "selector": ["core", "api", "labs/common", "kernels/*"],
    "serve": ["core", "api", "hw", "engine"],
    "cli": ["core", "api", "comm", "calc", "report", "hw", "labs", "labs/common", "selector", "serve", "engine",
            "kernels/*"],
    "py": ["core", "api", "kernels/*"],
}

# The libraries of CMakeLists.txt and the folder each one builds.
LIBRARIES = {
    "perflab_core": "core",
    "perflab_comm": "comm",
    "perflab_calc": "calc",
    "perflab_report": "report",
    "perflab_hw": "hw",
    "perflab_kernels": "kernels/*",
    "perflab_engine": "engine",
    "perflab_labs_common": "labs/common",
    "perflab_labs": "labs",
    "perflab_selector": "selector",
    "perflab_serve": "serve",
    "perflab_py": "py",
}

SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".def")
SCANNED = ("include", "src", "comm", "engine", "labs", "kernels")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def folder_of(rel):
    """The folder (a key of ALLOWED, or a kernel family "kernels/<name>") a repository path belongs to."""
    parts = rel.split("/")
    if parts[0] == "include":
        return "api"
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[0] in ("comm", "engine"):
        return parts[0]
    if parts[0] == "labs":
        return "labs/common" if len(parts) > 2 and parts[1] == "common" else "labs"
    if parts[0] == "kernels" and len(parts) > 2:
        return "kernels/" + parts[1]
    return None


def rule_of(folder):
    if folder.startswith("kernels/") and folder != "kernels/common":
        return "kernels/<family>"
    return folder


def allowed(src, dst):
    if src == dst:
        return True
    for a in ALLOWED[rule_of(src)]:
        if a == dst or (a == "kernels/*" and dst.startswith("kernels/")):
            return True
    return False


def search_roots(folder):
    """Where the compiler looks for a quoted include of a file in `folder`, after the file's own directory: the
    include directories its library sees (CMakeLists.txt). A kernel sees kernels/ alone."""
    if folder.startswith("kernels/"):
        return ["kernels"]
    return ["include", "src", ".", "labs", "kernels"]


def resolve(repo, rel, name):
    """The repository path an include names, or None (a system or generated header)."""
    folder = folder_of(rel)
    for root in [os.path.dirname(rel)] + search_roots(folder):
        cand = os.path.normpath(os.path.join(root, name))
        if os.path.isfile(os.path.join(repo, cand)):
            return cand
    return None


def sources(repo):
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(repo, top)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, f), repo)


def include_arrows(repo):
    """(file, line number, included path, from folder, to folder) for every include that leaves its folder."""
    for rel in sources(repo):
        src = folder_of(rel)
        if src is None:
            continue
        with open(os.path.join(repo, rel), encoding="utf-8", errors="replace") as f:
            for no, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                dst_path = resolve(repo, rel, m.group(1))
                dst = folder_of(dst_path) if dst_path else None
                if dst is not None and dst != src:
                    yield rel, no, dst_path, src, dst


def link_arrows(repo):
    """(library, linked library, from folder, to folder) for every perflab_* library CMakeLists.txt links."""
    with open(os.path.join(repo, "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    for m in re.finditer(r"target_link_libraries\(\s*(\S+)\s+(?:PUBLIC|PRIVATE|INTERFACE)?([^)]*)\)", text):
        lib = m.group(1)
        if lib not in LIBRARIES:
            continue
        for dep in m.group(2).split():
            if dep in LIBRARIES and dep != lib:
                yield lib, dep, LIBRARIES[lib], LIBRARIES[dep]


def library_allowed(src, dst):
    """As allowed(), for the libraries: perflab_core implements the public API (include/perflab), so a folder that
    may include the API may link the core."""
    if dst == "core" and src != "kernels/*" and "api" in ALLOWED[src]:
        return True
    if dst == "kernels/*":
        return src == "kernels/*" or "kernels/*" in ALLOWED[src]
    if src == "kernels/*":
        return False
    return allowed(src, dst)


def table_is_acyclic():
    """The table itself must order the folders: a cycle in it would allow a cycle between the libraries."""
    state = {}

    def visit(n):
        if state.get(n) == 1:
            return False
        if state.get(n) == 2:
            return True
        state[n] = 1
        ok = all(visit(d if d != "kernels/*" else "kernels/<family>") for d in ALLOWED.get(n, []))
        if n == "kernels/<family>":
            ok = ok and visit("kernels/common")
        state[n] = 2
        return ok

    return all(visit(n) for n in ALLOWED)


def read_allow_list(repo):
    path = os.path.join(repo, "scripts", "layout_allow.txt")
    entries = set()
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    a, _, b = line.partition("->")
                    entries.add((a.strip(), b.strip()))
    return entries


def check(repo):
    """Prints the arrows against the layout; returns how many."""
    tolerated = read_allow_list(repo)
    seen, bad, noted = set(), 0, 0
    for rel, no, dst_path, src, dst in include_arrows(repo):
        if allowed(src, dst):
            continue
        if (rel, dst_path) in tolerated:
            seen.add((rel, dst_path))
            print(f"{rel}:{no}: note: {src} includes {dst_path} ({dst}): tolerated by scripts/layout_allow.txt")
            noted += 1
            continue
        print(f"{rel}:{no}: {src} may not include {dst_path} ({dst}); allowed: {', '.join(ALLOWED[rule_of(src)])}")
        bad += 1
    for lib, dep, src, dst in link_arrows(repo):
        if not library_allowed(src, dst):
            print(f"CMakeLists.txt: {lib} ({src}) may not link {dep} ({dst})")
            bad += 1
    for a, b in sorted(tolerated - seen):
        print(f"scripts/layout_allow.txt: '{a} -> {b}' no longer occurs: remove the line")
        bad += 1
    print(f"check_layout: {bad} arrow(s) against the layout, {noted} tolerated")
    return bad


def self_test():
    """A made-up tree with one arrow of each kind the check must catch, then the same tree with them removed."""
    import tempfile

    files = {
        "CMakeLists.txt": "target_link_libraries(perflab_report PUBLIC perflab_selector perflab_core)\n",
        "src/core/a.c": '#include "core/a.h"\n#include "report/r.h"\n',  # core -> report
        "src/core/a.h": "",
        "src/report/r.h": '#include "core/a.h"\n',
        "kernels/x/k.cu": '#include "common/c.cuh"\n#include "y/k.cuh"\n',  # family -> another family
        "kernels/y/k.cuh": "",
        "kernels/common/c.cuh": "",
        "labs/t.c": '#include "core/a.h"\n',  # a target -> src/core
        "engine/e.c": '#include "common/c.cuh"\n#include "core/a.h"\n',  # the engine -> src/core
        "scripts/layout_allow.txt": "kernels/x/k.cu -> kernels/z/gone.cuh\n",  # stale entry
    }
    fixed = {
        "CMakeLists.txt": "target_link_libraries(perflab_report PUBLIC perflab_core)\n",
        "src/core/a.c": '#include "core/a.h"\n',
        "kernels/x/k.cu": '#include "common/c.cuh"\n',
        "labs/t.c": '#include "perflab/perflab.h"\n',
        "engine/e.c": '#include "common/c.cuh"\n',
        "scripts/layout_allow.txt": "",
    }
    with tempfile.TemporaryDirectory() as repo:
        for tree, want, what in [(files, 6, "the made-up tree"), (fixed, 0, "the corrected tree")]:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(repo, rel)), exist_ok=True)
                with open(os.path.join(repo, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            found = check(repo)
            if found != want:
                print(f"check_layout --self-test: found {found} arrows against the layout in {what}, not {want}")
                return 1
    print("check_layout --self-test: the six back-arrows were caught and the corrected tree passes")
    return 0


def main(argv):
    if not table_is_acyclic():
        print("check_layout: the ALLOWED table has a cycle: the folders must form layers", file=sys.stderr)
        return 1
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print("usage: check_layout.py [REPO] | --self-test", file=sys.stderr)
        return 2
    repo = os.path.abspath(argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(__file__), ".."))
    if not os.path.isfile(os.path.join(repo, "CMakeLists.txt")):
        print(f"check_layout: {repo} has no CMakeLists.txt: pass the repository's root", file=sys.stderr)
        return 2
    return 1 if check(repo) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
