#!/usr/bin/env python3
"""No work-log numbering in the tree: code, comments, docs and scripts say what the code does and why, with dates,
commits and hardware where a figure needs them, never a work-log tag: the word session, call or issue followed by
its number (history lives in git). Scans every text file of the repository but build and artifact folders.

Usage: scripts/check_worklog.py [REPO]   (REPO defaults to this script's repository)
       scripts/check_worklog.py --self-test   (the pattern catches each form and passes ordinary prose)
Exit 0 when nothing is found, 1 with one line per finding, 2 on bad usage.
"""
import os
import re
import sys

# The word (singular or plural, either case) then a number, a range or a list of numbers, '#' allowed before it;
# not a verb before a size ("every lane issues 16-byte loads") nor a count before a time ("40 calls 123 µs").
TAG = re.compile(r"\b(?:[Ss]essions?|[Cc]alls?|[Ii]ssues?)\s+#?\d+(?:\s*[-–,]\s*\d+)*\b(?![-‐]?byte|\s*(?:µs|us|ms)\b)")
SKIP_DIRS = {".git", "build", "build-asan", "artifacts", ".devcarry", ".device-build", "__pycache__", "node_modules"}
TEXT_EXT = {".c", ".h", ".cu", ".cuh", ".py", ".sh", ".md", ".txt", ".cmake", ".json", ".def", ".csv", ".html", ""}


def findings(repo):
    out = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(files):
            path = os.path.join(root, name)
            ext = os.path.splitext(name)[1]
            if ext not in TEXT_EXT and name not in ("Makefile", "CMakeLists.txt"):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
            except (UnicodeDecodeError, OSError):
                continue
            for i, line in enumerate(lines, 1):
                m = TAG.search(line)
                if m:
                    out.append(f"{os.path.relpath(path, repo)}:{i}: work-log tag '{m.group(0)}': say what was "
                               "measured, when and on what instead")
    return out


def self_test():
    # the tags are put together here so that this file holds none itself
    caught = [f"{w} {n}" for w, n in (("session", "21 measured"), ("(calls", "3-4 of"), ("Issue", "#14's bars"),
                                       ("sessions", "20, 21"), ("call", "16"))]
    passed = ["every lane issues 16-byte loads", "40 calls 123 µs", "the S1 = sum", "calls the launcher",
              "H200, 2026-11-28, 994ff4b"]
    bad = [s for s in caught if not TAG.search(s)] + [s for s in passed if TAG.search(s)]
    for s in bad:
        print(f"check_worklog self-test: wrong verdict on {s!r}")
    return 1 if bad else 0


def main(argv):
    if len(argv) > 2:
        print("usage: check_worklog.py [REPO | --self-test]", file=sys.stderr)
        return 2
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    repo = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(repo):
        print(f"check_worklog: {repo}: not a folder: pass the repository's root", file=sys.stderr)
        return 2
    found = findings(repo)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
