#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere (carried in build/): the attention targets' GPU test, memcheck of
# their small sizes, perflab on every attention shape of docs/perf/attention.md (both wgmma schedules where they differ) and PyTorch SDPA
# on the same shapes. Logs go to $OUT (or ./attention-validate-out); a summary table is printed last.
set -uo pipefail
out=${OUT:-attention-validate-out}
mkdir -p "$out"
src_path=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt 2>/dev/null)
if [ -n "$src_path" ] && [ "$src_path" != "$PWD" ] && [ ! -e "$src_path" ]; then
  mkdir -p "$(dirname "$src_path")" && ln -s "$PWD" "$src_path"
fi
B=./build/perflab
FW=attention:flash_fwd
DP=attention:decode_paged
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$out/env.txt"

./build/tests/test_attention >"$out/gpu-test.log" 2>&1
echo "gpu test: exit $?" | tee -a "$out/summary.txt"
compute-sanitizer --tool memcheck --target-processes all $B verify --exec-children --targets attention --small --quiet \
  --artifacts-dir "$out/san" >"$out/memcheck.log" 2>&1
echo "memcheck: exit $? ($(grep -h 'ERROR SUMMARY' "$out/memcheck.log" | sort | uniq -c | tr '\n' ' '))" | tee -a "$out/summary.txt"

R="--quiet --artifacts-dir $out/art"
run() { echo "== $*"; $B run $R "$@" 2>&1 | grep -E "^attention|^ +[a-z_]+ "; }
{
  run --targets $FW,$DP
  run --targets $FW --target-extra-arg "$FW=--causal true"
  run --targets $FW --target-extra-arg "$FW=--causal true --wgmma-schedule pingpong"
  run --targets $FW --target-extra-arg "$FW=--batch 2 --seq 8192"
  run --targets $FW --target-extra-arg "$FW=--batch 16 --heads 32 --seq 1024 --head-dim 64"
  run --targets $FW --target-extra-arg "$FW=--batch 16 --heads 32 --seq 1024 --head-dim 64 --wgmma-schedule pingpong"
  run --targets $FW --target-extra-arg "$FW=--batch 2 --heads 32 --kv-heads 8"
  run --targets $FW --target-extra-arg "$FW=--layout bshd"
  run --targets $DP --target-extra-arg "$DP=--len-spread 0"
  run --targets $DP --target-extra-arg "$DP=--page-size 64"
} | tee "$out/perflab.txt"
python3 scripts/torch_attention_bench.py --json "$out/torch.json" >"$out/torch.txt" 2>&1
echo "torch: exit $?" | tee -a "$out/summary.txt"
tail -13 "$out/torch.txt"
cat "$out/summary.txt"
