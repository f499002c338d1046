#!/usr/bin/env bash
# The memory-hierarchy chapter (memory:transpose, reduce:sum, memory:async_prefetch, occupancy:ilp,
# atomics:histogram, memory:l2_persistence) on a GPU machine, with a build made elsewhere (carried in build/): its GPU
# test (odd and edge sizes, the skewed histogram), memcheck at the small sizes, the timed runs at the default sizes
# (fp32 and bf16 sums, uniform and Zipf keys), and a summary table. Logs go to $OUT (or ./suite1-memory-out).
# Store the results as the expectations of this GPU kind afterwards with
#   perflab expectations update $OUT/art/<run>   (and the same for art-bf16-zipf only if its parameters are wanted).
set -uo pipefail
out=${OUT:-suite1-memory-out}
mkdir -p "$out"
src_path=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt 2>/dev/null)
if [ -n "$src_path" ] && [ "$src_path" != "$PWD" ] && [ ! -e "$src_path" ]; then
  mkdir -p "$(dirname "$src_path")" && ln -s "$PWD" "$src_path"
fi
targets=memory:transpose,reduce:sum,memory:async_prefetch,occupancy:ilp,atomics:histogram,memory:l2_persistence
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$out/env.txt"

./build/tests/test_suite1_memory >"$out/gpu-test.log" 2>&1
echo "gpu test: exit $?" | tee -a "$out/summary.txt"
grep -E "Checks|:F:|:E:" "$out/gpu-test.log" | head -10

if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --target-processes all ./build/perflab verify --exec-children --targets "$targets" --small \
    --quiet >"$out/memcheck.log" 2>&1
  echo "memcheck: exit $?; $(grep -h 'ERROR SUMMARY' "$out/memcheck.log" | sort | uniq -c | tr -s ' ')" |
    tee -a "$out/summary.txt"
fi

./build/perflab run --targets "$targets" --quiet --artifacts-dir "$out/art" "$@" >"$out/run.txt" 2>&1
echo "run: exit $?" | tee -a "$out/summary.txt"
./build/perflab run --targets reduce:sum,atomics:histogram --quiet --artifacts-dir "$out/art-bf16-zipf" \
  --target-extra-arg 'reduce:sum=--dtype bf16' --target-extra-arg 'atomics:histogram=--dist zipf --skew 1.2' "$@" \
  >"$out/run-bf16-zipf.txt" 2>&1
echo "run bf16/zipf: exit $?" | tee -a "$out/summary.txt"
grep -h -E "occupancy:ilp:|async_prefetch:|l2_persistence:|histogram:" "$out"/art*/*/logs/* 2>/dev/null | sort -u

python3 - "$out" <<'PY'
import glob, json, sys

def num(x):
    return x if isinstance(x, (int, float)) else float("nan")

for f in sorted(glob.glob(sys.argv[1] + "/art*/*/run.json")):
    for t in json.load(open(f))["targets"]:
        params = " ".join(f"{k}={v}" for k, v in (t.get("params") or {}).items())
        print(f"{t['name']} [{t['status']}] {params}")
        for v in t["variants"]:
            st, d, sp = v.get("stats") or {}, v.get("derived") or {}, v.get("speedup") or {}
            print(f"  {v['name']:<15} {v['status']:<7} {num(st.get('median_ms')) * 1e3:>11.1f} us "
                  f"{num(d.get('gbps')):>6.0f} GB/s  % of ref {num(d.get('pct_of_reference')):>6.1f}  "
                  f"speedup {num(sp.get('value')):>8.2f}")
PY
