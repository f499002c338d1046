#!/usr/bin/env bash
# The wide GEMM shapes (the `wide` group) on a GPU machine (run it once on an H200 and once on an H100), with a build made elsewhere (build/):
#   1. the GEMM GPU tests (every kernel on odd shapes, the split-K kernels with every split, the decode GEMV kernels,
#      pl_gemm_bf16, perflab gemm --rounds 3);
#   2. kn: the B K×N wgmma kernels (unvalidated until this step passes, so run under PERFLAB_GEMM_UNVALIDATED=1):
#      the GEMM GPU test with them enumerated (b_kn_wgmma: each on odd K×N shapes, with and without the epilogue,
#      twice for the same bits; and every other test with them in), then compute-sanitizer memcheck and racecheck
#      over them through the selector on odd K×N shapes;
#   3. compute-sanitizer (memcheck, racecheck, synccheck) over the split-K, decode GEMV and tile-fitted kernels through the selector on odd shapes;
#   4. perflab gemm --shapes wide --rounds 3, B N×K and B K×N (K×N with the opt-in when the kn step is asked for);
#   5. the wide table and its bars (scripts/gemm_wide_table.py) and the heuristic's table written from the sweep
#      (scripts/gemm_heuristic_table.py: review it and commit it as kernels/gemm/heuristic_table.c).
# Every step has a time limit; a summary comes last. Logs and the comparison files go to $OUT (or
# ./gemm-wide-validate-out). Measured on an H200 (2026-11-23): the tests ~5 s, memcheck ~3 s, the N×K sweep 181 s at
# MIN_TIME_S 0.02 / MAX_TIME_S 0.2 (38 shapes × ~35 configurations × 4 rounds); K×N took fewer with only mma_sync,
# with the opt-in it times 9 configurations a shape (not measured yet).
#
#   OUT=/tmp/wide scripts/gemm-wide-validate.sh             # everything
#   STEPS=sweep LAYOUTS=nk scripts/gemm-wide-validate.sh    # only the N×K sweep
#   STEPS=kn scripts/gemm-wide-validate.sh                  # only the B K×N kernels' validation
set -uo pipefail
out=${OUT:-gemm-wide-validate-out}
steps=${STEPS:-tests kn sanitize sweep}
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
optin=(env PERFLAB_GEMM_UNVALIDATED=1)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader |
  tee "$out/env.txt"
$B --version | tee -a "$out/env.txt"

if has tests; then
  step test_gemm_kernels 300 ./build/tests/test_gemm_kernels
  step test_gemm_verb 300 ./build/tests/test_gemm_verb
  grep -hE '^FAIL|kernel/problem pairs|split-K kernel/split|decode GEMV' "$out"/test_gemm_kernels*.log | tail -8
fi

if has kn; then
  step test_gemm_kernels_kn 400 "${optin[@]}" ./build/tests/test_gemm_kernels
  grep -hE '^FAIL|B K×N kernel/problem|kernel/problem pairs' "$out/test_gemm_kernels_kn.log" | tail -6
  # odd M, N % 8 == 0 but not % 64, K % 8 == 0 but not % 64; several tiles per CTA in the last
  for tool in memcheck racecheck; do
    step "sanitize_kn_$tool" 300 "${optin[@]}" compute-sanitizer --tool "$tool" --target-processes all \
      $B gemm --layout kn --shapes 129x520x1032,1001x3000x520,33x4104x8,17x72x40,2049x2056x264 "${Q[@]}" \
      --artifacts-dir "$out/san_kn"
    grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$out/sanitize_kn_$tool.log" | sort | uniq -c | sed 's/^/    /' |
      tee -a "$summary"
  done
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
    pre=()
    if [ "$layout" = kn ] && has kn; then pre=("${optin[@]}"); fi # the B K×N wgmma kernels in the K×N sweep
    step "wide_$layout" 1500 "${pre[@]}" $B gemm --shapes wide --layout "$layout" --rounds 3 \
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
