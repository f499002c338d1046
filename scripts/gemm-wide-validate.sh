#!/usr/bin/env bash
# The GEMM kernels' validation on a GPU machine (run it once on an H200 and once on an H100), with a build made
# elsewhere (build/):
#   1. the GEMM GPU tests (every kernel on odd shapes, the split-K kernels with every split, the decode GEMV kernels,
#      pl_gemm_bf16, perflab gemm --rounds 3);
#   2. compute-sanitizer (memcheck, racecheck, synccheck) over the warp-specialized, split-K and GEMV kernels through
#      the selector on odd shapes;
#   3. perflab gemm --shapes wide --rounds 3, B N×K and B K×N;
#   4. the table and bars (scripts/gemm_wide_table.py) and the heuristic's table written from the sweep
#      (scripts/gemm_heuristic_table.py: review it and commit it as kernels/gemm/host/heuristic_table.c).
# Every step has a time limit; a summary comes last. Logs and the comparison files go to $OUT (or
# ./gemm-wide-validate-out). Measured on an H200 (2026-11-23): the tests ~5 s, memcheck ~3 s, the N×K sweep 181 s at
# MIN_TIME_S 0.02 / MAX_TIME_S 0.2 (38 shapes × ~35 configurations × 4 rounds); K×N takes fewer (mma_sync only).
#
#   OUT=/tmp/wide scripts/gemm-wide-validate.sh             # everything
#   STEPS=sweep LAYOUTS=nk scripts/gemm-wide-validate.sh    # only the N×K sweep
set -uo pipefail
out=${OUT:-gemm-wide-validate-out}
steps=${STEPS:-tests sanitize sweep}
layouts=${LAYOUTS:-nk kn}
min_time=${MIN_TIME_S:-0.02}
max_time=${MAX_TIME_S:-0.2}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
build=build
. "$(dirname "$0")/carried-build.sh" # $src_path made valid here, step
B=./build/perflab
has() { [[ " $steps " == *" $1 "* ]]; }
# the selector's child runs every enumerated kernel once unverified-then-verified on the shapes it is given
Q=(--providers perflab --min-time-s 0.001 --max-time-s 0.002 --min-samples 1 --warmup 1 -q)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader |
  tee "$out/env.txt"
$B --version | tee -a "$out/env.txt"

if has tests; then
  step test_gemm_kernels 300 ./build/tests/test_gemm_kernels
  step test_gemm_verb 300 ./build/tests/test_gemm_verb
  grep -hE '^FAIL|kernel/problem pairs|split-K kernel/split|decode GEMV' "$out"/test_gemm_kernels*.log | tail -8
fi

# perflab gemm measures in plain forks, which compute-sanitizer is not shown to follow: a report on a kernel shows the
# tool reached it, a clean summary alone does not (docs/running.md, "Under compute-sanitizer and other tools")
if has sanitize; then
  for tool in memcheck racecheck synccheck; do
    step "sanitize_$tool" 300 compute-sanitizer --tool "$tool" --target-processes all \
      $B gemm --shapes 13x1000x520,129x520x1032,1x4104x4104,1000x3000x520,128x8x4096 "${Q[@]}" \
      --artifacts-dir "$out/san"
    grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$out/sanitize_$tool.log" | sort | uniq -c | sed 's/^/    /' |
      tee -a "$summary"
  done
fi

if has sweep; then
  for layout in $layouts; do
    step "wide_$layout" 1500 $B gemm --shapes wide --layout "$layout" --rounds 3 \
      --min-time-s "$min_time" --max-time-s "$max_time" --timeout-s 300 -q --artifacts-dir "$out/wide_$layout"
    tail -50 "$out/wide_$layout.log"
  done
  cmps=$(ls "$out"/wide_*/gemm-*/comparison.json 2>/dev/null)
  if [ -n "$cmps" ]; then
    # shellcheck disable=SC2086
    python3 scripts/gemm_wide_table.py $cmps | tee "$out/bars.md"
    # shellcheck disable=SC2086
    python3 scripts/gemm_heuristic_table.py $cmps --out "$out/heuristic_table.c"
    for c in $cmps; do cp "$c" "$out/comparison_$(basename "$(dirname "$(dirname "$c")")").json"; done
  fi
fi
echo
cat "$summary"
