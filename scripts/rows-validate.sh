#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere (carried in build/): the bf16 row targets (norm:rmsnorm,
# norm:layernorm, softmax:rows, fusion:elementwise_chain) verified at odd and edge shapes (their GPU test), under
# compute-sanitizer (memcheck at --small, racecheck on multi-warp and looped shapes), timed at the default
# 16384 x 8192 against the expectations, and compared with PyTorch's own kernels on the same GPU
# (scripts/torch_rows_bench.py). Logs go to $OUT (or ./rows-validate-out); the summary table is printed last.
set -uo pipefail
out=${OUT:-rows-validate-out}
mkdir -p "$out"
src_path=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt 2>/dev/null)
if [ -n "$src_path" ] && [ "$src_path" != "$PWD" ] && [ ! -e "$src_path" ]; then
  mkdir -p "$(dirname "$src_path")" && ln -s "$PWD" "$src_path"
fi
T=norm,softmax:rows,fusion:elementwise_chain
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$out/env.txt"

./build/tests/test_suite1_rows >"$out/gpu-test.log" 2>&1
echo "test_suite1_rows: exit $?" | tee -a "$out/summary.txt"

compute-sanitizer --tool memcheck --target-processes all ./build/perflab verify --exec-children --small --quiet --targets $T \
  --artifacts-dir "$out/san" >"$out/memcheck.log" 2>&1
echo "memcheck --small: exit $? ($(grep -h 'ERROR SUMMARY' "$out/memcheck.log" | tail -1))" | tee -a "$out/summary.txt"
compute-sanitizer --tool racecheck --target-processes all ./build/perflab verify --exec-children --quiet --targets $T \
  --artifacts-dir "$out/san" --target-extra-arg 'norm:rmsnorm=--rows 5 --cols 4001' \
  --target-extra-arg 'norm:layernorm=--rows 3 --cols 70001' --target-extra-arg 'softmax:rows=--rows 5 --cols 8001' \
  --target-extra-arg 'fusion:elementwise_chain=--rows 5 --cols 1001' >"$out/racecheck.log" 2>&1
echo "racecheck: exit $? ($(grep -h 'RACECHECK SUMMARY' "$out/racecheck.log" | tail -1))" | tee -a "$out/summary.txt"

./build/perflab run --targets $T --quiet --artifacts-dir "$out/art" "$@" >"$out/run.txt" 2>&1
echo "perflab run: exit $?" | tee -a "$out/summary.txt"
python3 scripts/torch_rows_bench.py --perflab-csv "$out"/art/*/results.csv --json "$out/torch_rows.json" \
  >"$out/torch.txt" 2>&1
echo "torch_rows_bench: exit $?" | tee -a "$out/summary.txt"
cat "$out/run.txt" "$out/torch.txt"
