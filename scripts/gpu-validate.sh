#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere: what "every GPU test and the expectations hold" means, in steps
# that fit a run of a few minutes. Every step has a time limit; the logs go into one archive, $OUT/gpu-validate.tgz,
# rewritten after every step (a remote machine may return a bounded number of files, and a run cut short keeps what
# ran); a summary comes last.
#
#   STEPS="gate refuse slow sanitize" scripts/gpu-validate.sh         # the gate and the sanitize label
#   STEPS="tests" TESTS="engine_moe gpu_suite" scripts/gpu-validate.sh  # GPU tests, one at a time
#
# Steps:
#   gate      perflab run --targets all against the committed expectations (exit 0 expected)
#   refuse    three parameter values the targets reject in their setup: exit 2, one line, nothing written
#   slow      vector16's expectation made 11% faster than measured: the gate must fail (exit 1)
#   sanitize  the sanitize label (tests/test_sanitize): planted defects caught, every target clean
#   tests     the GPU tests one at a time (TESTS, default every test ctest labels gpu, the sanitize label apart)
#   quick     the quick suite of OLD_BIN and of this build, interleaved, then perflab compare
#   expect    EXPECT_TARGETS run to store this GPU's expectations in $out/exp
set -uo pipefail
out_final=${OUT:-validate-out}
build=${BUILD:-build}
mkdir -p "$out_final"
export NCCL_NVLS_ENABLE=0 PATH=/usr/local/cuda/bin:$PATH CK_VERBOSITY=verbose
out=$(mktemp -d)
. "$(dirname "$0")/carried-build.sh"
pack() { tar czf "$out_final/gpu-validate.tgz" -C "$out" .; }

{
  nvidia-smi --query-gpu=name,memory.total,power.limit,driver_version,clocks.max.sm --format=csv,noheader
  "$bin" --version
} 2>&1 | tee "$out/env.txt"

gpu_tests() { # the tests ctest labels gpu (CTestTestfile.cmake's properties; a GPU machine may lack ctest)
  sed -n 's/^set_tests_properties(\[=\[\([a-z0-9_]*\)\]=\] PROPERTIES .*LABELS "[^"]*gpu[^"]*".*/\1/p' \
    "$build/tests/CTestTestfile.cmake" | sed 's/^test_//' | grep -v '^sanitize$'
}

for s in ${STEPS:-gate refuse slow sanitize tests}; do
  case $s in
  gate)
    step gate "${GATE_S:-330}" "$bin" run --targets all --artifacts-dir "$out/gate"
    grep -A12 '^expectations ' "$out/gate.log" | cut -c1-200 ;;
  refuse)
    rm -rf "$out/refused"
    for a in 'attention:flash_fwd=--head-dim 96' 'moe:grouped_gemm=--tokens 16000000 --topk 64' \
      'memory:vectorized_copy=--n 100g'; do
      "$bin" run --targets "${a%%=*}" --target-extra-arg "$a" --artifacts-dir "$out/refused" >/dev/null 2>"$out/refuse.err"
      echo "refuse ${a%%=*}: exit $? $(head -c 200 "$out/refuse.err")" | tee -a "$summary"
    done
    [ -e "$out/refused" ] && echo "refuse: something was written" | tee -a "$summary" ;;
  slow)
    mkdir -p "$out/exp11"
    python3 - "$out/exp11" <<'PY'
import glob, json, os, sys
for f in glob.glob('expectations/*.json'):
    e = json.load(open(f))
    for x in e['entries']:
        if x['target'] == 'memory:vectorized_copy' and x['variant'] == 'vector16':
            x['median_ms'] /= 1.11
    json.dump(e, open(os.path.join(sys.argv[1], os.path.basename(f)), 'w'), indent=2)
PY
    step slow11 60 "$bin" run --targets memory:vectorized_copy --expectations-dir "$out/exp11" --artifacts-dir "$out/slow"
    grep -E 'regressed' "$out/slow11.log" | head -3 ;;
  sanitize)
    step test_sanitize "${SANITIZE_LIMIT_S:-600}" "$src_path/build/tests/test_sanitize"
    grep -E '^sanitize |Checks|:F:' "$out/test_sanitize.log" ;;
  tests)
    for t in ${TESTS:-$(gpu_tests)}; do
      if [ "$t" = python_gpu ]; then
        PERFLAB_LIB=$src_path/build/libperflab.so PERFLAB_BIN=$bin step python_gpu "${TEST_LIMIT_S:-300}" \
          python3 tests/python/run.py gpu
      else
        step "test_$t" "${TEST_LIMIT_S:-300}" "$src_path/build/tests/test_$t"
      fi
      grep -hE '^[0-9]+%: Checks|^SKIP|:F:|:E:' "$out/test_$t.log" "$out/$t.log" 2>/dev/null | head -4
      pack
    done ;;
  quick)
    for side in old new; do
      b=$bin
      [ $side = old ] && b=$OLD_BIN
      step "quick_$side" 60 "$b" run --quiet --artifacts-dir "$out/quick_$side" --expectations-dir "$out/noexp"
    done
    step compare 20 "$bin" compare "$out"/quick_old/*/ "$out"/quick_new/*/
    tail -16 "$out/compare.log" ;;
  expect)
    mkdir -p "$out/exp"
    step expectations "${EXPECT_LIMIT_S:-120}" "$bin" run --targets "$EXPECT_TARGETS" --quiet --max-time-s 1 \
      --artifacts-dir "$out/exp_runs" --expectations-dir "$out/exp" --update-expectations
    tail -30 "$out/expectations.log" ;;
  *) echo "unknown step $s" | tee -a "$summary" ;;
  esac
  pack
done
echo
cat "$summary"
pack
