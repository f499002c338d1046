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
#   5. (step random) shapes no table or point was measured at: perflab gemm --shapes random:40:SEED for each of SEEDS
#      (default: two drawn from /dev/urandom now, printed), bf16 in both layouts (the pick tuned on the device: --tune)
#      and fp8 against cuBLASLt's FP8, each
#      through scripts/gemm_wide_table.py's bars (geometric mean and lowest shape against cuBLAS/cuBLASLt, the pick
#      within 3% of the best native configuration).
#
#   OUT=/tmp/wide scripts/gemm-wide-validate.sh             # tests, sanitize, the wide sweeps
#   STEPS=sweep LAYOUTS=nk scripts/gemm-wide-validate.sh    # only the N×K sweep
#   STEPS=random scripts/gemm-wide-validate.sh              # the random shapes (SEEDS="1 2" to repeat a run)
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
if has random; then
  seeds=${SEEDS:-"$(od -An -N4 -tu4 /dev/urandom | tr -d ' ') $(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"}
  echo "random shapes: seeds $seeds" | tee -a "$summary"
  for seed in $seeds; do
    for run in "nk bf16 --tune" "kn bf16 --tune" "nk fp8"; do
      set -- $run
      name="random_${seed}_$1_$2"
      # shellcheck disable=SC2086 # $3: --tune where the pick is tuned on the device (its log names the model's pick)
      step "$name" 900 $B gemm --shapes "random:40:$seed" --layout "$1" --dtype "$2" --rounds 3 ${3:-} \
        --timeout-s 300 -q --artifacts-dir "$out/$name"
      c=$(ls "$out/$name"/gemm-*/comparison.json 2>/dev/null | head -1)
      [ -n "$c" ] && python3 scripts/gemm_wide_table.py "$c" | tee "$out/$name.bars.md" | tail -12
    done
  done
fi
echo
cat "$summary"
