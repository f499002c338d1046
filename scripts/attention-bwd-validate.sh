#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere (carried in build/): attention:flash_bwd's GPU test cases, the four
# compute-sanitizer tools over its small sizes (the default small problem, then --deterministic at head_dim 64), perflab
# on the backward shapes of docs/perf/attention.md, and PyTorch SDPA's backward on the same shapes. Logs go to $OUT
# (or ./attention-bwd-validate-out); a summary is printed last.
set -uo pipefail
out=${OUT:-attention-bwd-validate-out}
mkdir -p "$out"
src_path=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt 2>/dev/null)
if [ -n "$src_path" ] && [ "$src_path" != "$PWD" ] && [ ! -e "$src_path" ]; then
  mkdir -p "$(dirname "$src_path")" && ln -s "$PWD" "$src_path"
fi
B=./build/perflab
T=attention:flash_bwd
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$out/env.txt"

PL_TEST_ATTENTION=bwd ./build/tests/test_attention >"$out/gpu-test.log" 2>&1
echo "gpu test (bwd cases): exit $?" | tee -a "$out/summary.txt"
for tool in memcheck racecheck synccheck initcheck; do
  for extra in "" "--deterministic true --head-dim 64"; do
    compute-sanitizer --tool $tool --target-processes all $B verify --exec-children --targets $T --small --quiet \
      --target-extra-arg "$T=$extra" --artifacts-dir "$out/san-$tool" >"$out/$tool.log" 2>&1
    echo "$tool ${extra:-default}: exit $? ($(grep -h 'ERROR SUMMARY' "$out/$tool.log" | sort | uniq -c | tr '\n' ' '))" |
      tee -a "$out/summary.txt"
  done
done

R="--quiet --artifacts-dir $out/art"
run() { echo "== $*"; $B run $R "$@" 2>&1 | grep -E "^attention|^ +[a-z_]+ "; }
{
  run --targets $T
  run --targets $T --target-extra-arg "$T=--deterministic true"
  run --targets $T --target-extra-arg "$T=--causal true"
  run --targets $T --target-extra-arg "$T=--batch 16 --heads 32 --seq 1024 --head-dim 64"
  run --targets $T --target-extra-arg "$T=--batch 2 --heads 32 --kv-heads 8"
  run --targets $T --target-extra-arg "$T=--batch 2 --seq 8192"
} | tee "$out/perflab.txt"
python3 scripts/torch_attention_bench.py --backward-only --sustained --no-compile --json "$out/torch.json" \
  >"$out/torch.txt" 2>&1
echo "torch: exit $?" | tee -a "$out/summary.txt"
tail -22 "$out/torch.txt"
cat "$out/summary.txt"
