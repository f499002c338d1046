#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere: the sanitize label (tests/gpu/test_sanitize), one compute-sanitizer
# tool at a time so that each one's time is its own: for memcheck, racecheck and synccheck first the planted defects
# of selftest:sanitizer_defects (the tool must report its own), then every target at --small under the tool, in
# processes it follows (perflab verify --exec-children); initcheck over the targets it applies to. Prints per tool:
# whether it caught its planted defect, targets, processes followed, errors, time. Logs go to $OUT (or
# ./sanitize-out); a tool's compute-sanitizer logs (one per process) stay under the test's tmp folder, named in its log.
#
#   BUILD=.devcarry/build scripts/sanitize-validate.sh
#   TOOLS="memcheck racecheck" TARGETS=gemm,attention LIMIT_S=1200 BUILD=.devcarry/build scripts/sanitize-validate.sh
set -uo pipefail
out=${OUT:-sanitize-out}
build=${BUILD:-build}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
. "$(dirname "$0")/carried-build.sh"

{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
  "$bin" --version
  compute-sanitizer --version | tail -1
} 2>&1 | tee "$out/env.txt"

for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
  PERFLAB_SANITIZE_TOOLS=$tool PERFLAB_SANITIZE_SERIAL=1 PERFLAB_SANITIZE_TARGETS=${TARGETS:-all} \
    step "sanitize_$tool" "${LIMIT_S:-3600}" "$src_path/build/tests/test_sanitize"
done

echo
printf '%-10s %-10s %-11s %-10s %-7s %-8s %s\n' tool planted targets processes errors time label
for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
  log=$out/sanitize_$tool.log
  # "sanitize planted: memcheck: 1 targets (1 in a process of their own), 2 processes followed, 3 errors, 9.1 s ..."
  planted=$(grep -E "^sanitize planted: $tool: " "$log" | sed -E 's/.* ([0-9]+) errors.*/\1/')
  case $tool in initcheck) planted=-;; *) [ -n "$planted" ] && [ "$planted" != 0 ] && planted="caught($planted)" ||
    planted="MISSED";; esac
  line=$(grep -E "^sanitize label: $tool: " "$log")
  targets=$(sed -nE 's/.*: ([0-9]+) targets \(([0-9]+) in .*/\1(\2 ran)/p' <<<"$line")
  procs=$(sed -nE 's/.* ([0-9]+) processes followed.*/\1/p' <<<"$line")
  errors=$(sed -nE 's/.* ([0-9]+) errors.*/\1/p' <<<"$line")
  secs=$(sed -nE 's/.* errors, ([0-9.]+) s .*/\1/p' <<<"$line")
  verdict=$(grep -qE "^100%: Checks" "$log" && echo passed || echo FAILED)
  printf '%-10s %-10s %-11s %-10s %-7s %-8s %s\n' "$tool" "$planted" "${targets:--}" "${procs:--}" "${errors:--}" \
    "${secs:--}" "$verdict"
done | tee -a "$summary"
echo
cat "$summary"
