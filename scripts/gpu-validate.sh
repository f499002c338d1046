#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere: the GPU tests, the sanitize label, the quick suite against a
# binary from before a change (OLD_BIN, when given) with `perflab compare`, and targets run to store expectations
# (EXPECT_TARGETS, when given). Every step has a time limit (a lease is short); a summary table comes last. Logs
# go to $OUT (or ./validate-out).
#
#   BUILD=.devcarry/final/build OLD_BIN=.devcarry/final/old/perflab EXPECT_TARGETS=gemm scripts/gpu-validate.sh
set -uo pipefail
out=${OUT:-validate-out}
build=${BUILD:-build}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 PATH=/usr/local/cuda/bin:$PATH
. "$(dirname "$0")/carried-build.sh"

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  "$bin" --version
} 2>&1 | tee "$out/env.txt"

# 1. the GPU tests, one at a time (the sanitize label last)
for t in ${GPU_TESTS:-gpu_suite gemm_kernels gemm_verb hw_verbs comm_gpu suite1_memory suite1_rows suite2 attention fp8_moe}; do
  step "test_$t" "${TEST_LIMIT_S:-60}" "$src_path/build/tests/test_$t"
done

# 2. the quick suite before and after the change, interleaved, and the comparison of the two
if [ -n "${OLD_BIN:-}" ]; then
  for side in old new; do
    b=$bin
    [ $side = old ] && b=$OLD_BIN
    step "quick_$side" 60 "$b" run --quiet --artifacts-dir "$out/quick_$side" --expectations-dir "$out/noexp"
  done
  step compare 20 "$bin" compare "$out"/quick_old/*/ "$out"/quick_new/*/
  tail -16 "$out/compare.log"
fi

# 3. compute-sanitizer over every target at its small sizes, after the planted defects (its tools at once;
#    scripts/sanitize-validate.sh runs them one at a time, for each one's figures)
step test_sanitize "${SANITIZE_LIMIT_S:-3600}" "$src_path/build/tests/test_sanitize"
grep -E "^sanitize |Checks" "$out/test_sanitize.log"

# 4. targets run to store this GPU's expectations
if [ -n "${EXPECT_TARGETS:-}" ]; then
  mkdir -p "$out/exp"
  step expectations "${EXPECT_LIMIT_S:-120}" "$bin" run --targets "$EXPECT_TARGETS" --quiet --max-time-s 1 \
    --artifacts-dir "$out/exp_runs" --expectations-dir "$out/exp" --update-expectations
  tail -30 "$out/expectations.log"
fi

for f in "$out"/test_*.log; do grep -hE "^[0-9]+%: Checks|^SKIP|:F:|:E:" "$f" | sed "s|^|$(basename "$f" .log): |" | head -4; done
echo
cat "$summary"
