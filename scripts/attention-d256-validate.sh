#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere: attention:flash_fwd at head_dim 256. The GPU test's forward cases
# (every head dim), the four compute-sanitizer tools over the target's small sizes (--small is head_dim 256; then 128
# causal and 64 ping-pong by hand, which the sanitize label no longer reaches), perflab on the d256 shapes of
# docs/perf/attention.md (both wgmma schedules, causal and not) and PyTorch SDPA on the same shapes. Logs go to $OUT
# (or ./attention-d256-validate-out), one summary line a step.
#
#   BUILD=.devcarry/build scripts/attention-d256-validate.sh
set -uo pipefail
out=${OUT:-attention-d256-validate-out}
build=${BUILD:-build}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
. "$(dirname "$0")/carried-build.sh"
T=attention:flash_fwd
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$out/env.txt"

PL_TEST_ATTENTION=fwd step gpu_test_fwd 1800 "$src_path/build/tests/test_attention"
for tool in memcheck racecheck synccheck initcheck; do
  for extra in "" "--head-dim 128 --causal true" "--head-dim 64 --wgmma-schedule pingpong"; do
    name=$tool$(echo "$extra" | tr -dc '0-9a-z')
    step "$name" 900 compute-sanitizer --tool $tool --target-processes all "$bin" verify --exec-children --targets $T \
      --small --quiet --target-extra-arg "$T=$extra" --artifacts-dir "$out/san-$name"
    grep -h 'ERROR SUMMARY' "$out/$name.log" | sort | uniq -c
  done
done
for shape in "--batch 4 --seq 4096" "--batch 2 --seq 8192" "--batch 2 --seq 16384"; do
  for mask in false true; do
    for sched in overlap pingpong; do
      name=run$(echo "$shape$mask$sched" | tr -dc '0-9a-z')
      step "$name" 600 "$bin" run --quiet --artifacts-dir "$out/art" --targets $T \
        --target-extra-arg "$T=--head-dim 256 $shape --causal $mask --wgmma-schedule $sched"
      grep -E "^attention|^ +[a-z_]+ " "$out/$name.log"
    done
  done
done
step run_gqa 600 "$bin" run --quiet --artifacts-dir "$out/art" --targets $T \
  --target-extra-arg "$T=--head-dim 256 --batch 2 --heads 32 --kv-heads 8"
step torch 1200 python3 scripts/torch_attention_bench.py --shapes d256 --sustained --no-compile --json "$out/torch.json"
tail -30 "$out/torch.log"
cat "$summary"
