#!/usr/bin/env python3
"""The commands of the seed lab's documents, run as perflab commands where perflab has the feature.

    scripts/seed_commands.py --extract SEED_DIR > tests/seed_commands.txt   (every command line of the documents)
    scripts/seed_commands.py --run PERFLAB [--list tests/seed_commands.txt]

--extract reads the documents (*.txt, markdown) and writes one line per command found in their code blocks and inline
code: "document<TAB>command". --run maps each to perflab's command line (the seed's benchmark CLI verbs, its utilities,
its peak benchmark), runs it with no GPU visible (CUDA_VISIBLE_DEVICES empty) and a temporary artifacts folder, and
prints RUN or SKIP (with the reason) for every line. A command passes when perflab accepts it: exit 0, or 3 for a verb
that needs the GPU hidden from it (its names, options and parameters were parsed and checked before that). Exit 0 when
every mapped command passes, 1 otherwise, 2 on bad usage.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIST = os.path.join(HERE, os.pardir, "tests", "seed_commands.txt")
STARTS = ("python", "python3", "pytest", "torchrun", "sudo", "pip", "./", "cd ", "source", "for ", "nvidia-smi",
          "LATEST=", "cat ", "export ")
CLI = re.compile(r"^python3? tools/cli/benchmark_cli\.py\s+(.*)$")
PEAK = re.compile(r"^python3? (tools/benchmarking/)?benchmark_peak\.py\s*$")
SUITE = re.compile(r"^python3? tools/testing/run_all_benchmarks\.py\s+(.*)$")  # the regression suite: perflab run
# The seed's utilities (benchmark_cli.py utils --tool NAME -- ARGS) and perflab's command for each; None: no verb.
UTILS = {"kv-cache": ["calc", "kv-cache"], "cost-per-token": ["calc", "cost-per-token"],
         "compare-precision": ["compare-precision"], "dump-hw": ["dump-hw"], "probe-hw": ["probe-hw"],
         "detect-cutlass": None}
# Why a command has no perflab counterpart, by how it starts (first match wins).
SKIPS = (
    (r"^(python3? -m venv|source |pip |sudo |\./setup\.sh|cd )", "setting up the Python lab's environment (perflab "
     "builds with make from the platform's packages)"),
    (r"^torchrun ", "a multi-process PyTorch script (perflab's fabric verbs run under mpirun as perflab-mpi)"),
    (r"^(pytest|\./run_all_tests\.sh)", "the Python lab's own tests (perflab's are make test)"),
    (r"^(nvidia-smi|\./check_driver_and_nccl\.sh|sudo sysctl)", "a system tool outside perflab (perflab hw reads the "
     "GPUs through the CUDA runtime and NVML)"),
    (r"^(for |cat |LATEST=|export |\./comprehensive_profile_test\.sh)", "shell steps around the Python lab's own files"),
    (r"^python3? -c ", "an inline Python check of the Python lab's environment"),
    (r"^python3? ", "a script of the Python lab with no perflab counterpart (the document's other steps name the "
     "perflab verbs)"),
)
# Options of the seed's commands that perflab's targets do not take, and why.
GAPS = {"--roofline-meta": "perflab's --profile roofline computes each variant's arithmetic intensity from its "
                           "counters and replays it under ncu itself: it takes no metadata CSV"}


def extract(seed_dir):
    """(document, command) for every command line in the documents' code blocks and inline code, in order."""
    found = []
    for name in sorted(os.listdir(seed_dir)):
        if not name.endswith(".txt") or name.startswith("README"):
            continue
        with open(os.path.join(seed_dir, name), encoding="utf-8", errors="replace") as f:
            text = f.read()
        in_block = False
        pending = ""
        for line in text.splitlines():
            if in_block and (pending or line.rstrip().endswith("\\")):
                pending += line.strip().rstrip("\\").strip() + " "
                if line.rstrip().endswith("\\"):
                    continue
                line, pending = pending.strip(), ""
            if line.strip().startswith("```"):
                in_block = not in_block
                continue
            candidates = []
            if in_block:
                candidates.append(line.strip())
            candidates += re.findall(r"`([^`]+)`", line) if not in_block else []
            joined = []
            for c in candidates:
                c = c.split("  #")[0].strip()
                if c.startswith(STARTS) and (name, c) not in found:
                    joined.append(c)
            found += [(name, c) for c in joined]
    return found


def perflab_args(cmd, artifacts):
    """perflab's arguments for a seed command, or (None, why it has none)."""
    for option, why in GAPS.items():
        if option in cmd:
            return None, f"{option}: {why}"
    m = CLI.match(cmd) or SUITE.match(cmd)
    if PEAK.match(cmd):
        return ["peak"], None
    if SUITE.match(cmd):
        return ["run"] + shlex.split(m.group(1)) + ["--artifacts-dir", artifacts], None
    if not m:
        for pattern, why in SKIPS:
            if re.match(pattern, cmd):
                return None, why
        return None, "not a command of the Python lab's CLI"
    words = shlex.split(m.group(1))
    verb, rest = words[0], words[1:]
    if verb == "utils":
        tool = rest[rest.index("--tool") + 1] if "--tool" in rest else ""
        args = rest[rest.index("--") + 1:] if "--" in rest else []
        if tool not in UTILS:
            return None, f"utility '{tool}' is not one perflab has"
        if UTILS[tool] is None:
            return None, f"utility '{tool}': perflab gemm's CUTLASS provider finds cutlass_profiler; no verb of its own"
        return UTILS[tool] + args, None
    if verb in ("run", "verify"):
        out, skip = [], False
        for w in rest:
            if skip:
                skip = False
                continue
            if w == "--artifacts-dir":
                skip = True
                continue
            out.append(w)
        return [verb] + out + ["--artifacts-dir", artifacts], None
    return [verb] + rest, None


def run(perflab, listing):
    with open(listing, encoding="utf-8") as f:
        lines = [ln.rstrip("\n").split("\t", 1) for ln in f if ln.strip() and not ln.startswith("#")]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    failures = ran = 0
    with tempfile.TemporaryDirectory() as artifacts:
        for doc, cmd in lines:
            args, why = perflab_args(cmd, artifacts)
            if args is None:
                print(f"SKIP {doc}: {cmd}\n     {why}")
                continue
            ran += 1
            p = subprocess.run([perflab] + args, env=env, capture_output=True, text=True, timeout=300)
            if p.returncode == 2 and "has no perflab target yet" in p.stderr:  # perflab says what it would need
                ran -= 1
                print(f"SKIP {doc}: {cmd}\n     {p.stderr.strip().split(': ', 1)[-1]}")
                continue
            ok = p.returncode in (0, 3)
            failures += not ok
            print(f"{'RUN ' if ok else 'FAIL'} {doc}: {cmd}\n     perflab {shlex.join(args)} -> exit {p.returncode}")
            if not ok:
                print("     " + (p.stderr.strip() or p.stdout.strip()).replace("\n", "\n     "))
    print(f"seed_commands: {ran} run, {failures} failed, {len(lines) - ran} skipped (reasons above)")
    return 1 if failures or ran == 0 else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "--extract":
        print("# The seed lab's documents' commands, one a line (document<TAB>command): written by")
        print("# scripts/seed_commands.py --extract SEED_DIR; run as perflab commands by its --run (ctest seed_commands).")
        for doc, cmd in extract(argv[1]):
            print(f"{doc}\t{cmd}")
        return 0
    if len(argv) >= 2 and argv[0] == "--run":
        listing = argv[3] if len(argv) >= 4 and argv[2] == "--list" else DEFAULT_LIST
        return run(argv[1], listing)
    print(__doc__.strip().splitlines()[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
