#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere (carried in build/): the GPU tests, the default suite twice and
# a compare of the two runs, and the SASS of the copy kernels. Logs go to $OUT (or ./validate-out).
# The build's CTest files hold the absolute path it was configured in; a symlink makes that path valid here.
set -uo pipefail
out=${OUT:-validate-out}
mkdir -p "$out"
src_path=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
if [ -n "$src_path" ] && [ "$src_path" != "$PWD" ] && [ ! -e "$src_path" ]; then
  mkdir -p "$(dirname "$src_path")" && ln -s "$PWD" "$src_path"
fi
export NCCL_NVLS_ENABLE=0
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  ./build/perflab --version
} 2>&1 | tee "$out/env.txt"

(cd "$src_path/build" && ctest -L gpu --output-on-failure -V) >"$out/gpu-tests.log" 2>&1
echo "gpu tests: exit $?" | tee -a "$out/summary.txt"
grep -E "^(SKIP|[0-9]+%|.*Passed|.*Failed|.*tests passed)" "$out/gpu-tests.log" | tail -5

for i in 1 2; do
  ./build/perflab run --quiet --artifacts-dir "$out/art" --expectations-dir "$out/exp" "$@" >"$out/run$i.txt" 2>&1
  echo "run $i: exit $?" | tee -a "$out/summary.txt"
done
cat "$out/run1.txt"
runs=$(ls -d "$out"/art/*/ | head -2)
./build/perflab compare $runs | tee "$out/compare.txt"
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass build/perflab 2>/dev/null | awk '/Function : .*vec16/{on=1} /Function : /&&!/vec16/{on=0} on' |
    grep -oE "(LDG|STG)\.E[A-Z0-9.]*" | sort | uniq -c | tee "$out/sass-vec16.txt"
fi
tar czf "$out/artifacts.tgz" -C "$out" art 2>/dev/null
