#!/usr/bin/env bash
# On a GPU machine, with binaries built elsewhere (a build folder in $1, default build/): perflab hw (with and
# without NVML), probe, peak (full and --quick, timed), a roofline run that reads the ceilings, the SASS of the
# peak kernels, and the hw tests. Logs go to $OUT (or ./hw-validate-out) as one tarball plus summary.txt.
set -uo pipefail
B=${1:-build}
out=${OUT:-hw-validate-out}
mkdir -p "$out"
logs=$(mktemp -d)
export NCCL_NVLS_ENABLE=0
# cuBLAS is linked dynamically: find it where the image keeps it
if ldd "$B/perflab" | grep -q "not found"; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__))' 2>/dev/null)/cublas/lib; do
    [ -e "$d/libcublas.so.13" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
  done
fi
budget=${BUDGET_S:-280} # seconds for all steps: each gets what is left when it starts, at most its own limit
step() { # name timeout command...
  local name=$1 t=$2; shift 2
  local left=$((budget - SECONDS))
  [ "$left" -lt "$t" ] && t=$left
  if [ "$t" -le 5 ]; then echo "$name: skipped, no time left" | tee -a "$logs/summary.txt"; return; fi
  local t0=$SECONDS
  timeout "$t" "$@" >"$logs/$name.txt" 2>&1
  local rc=$?
  printf '%-22s exit %3d  %4d s\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$logs/summary.txt"
}
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi -q -d CLOCK,POWER,PCIE,ECC,PERFORMANCE; ldd "$B/perflab"; } >"$logs/env.txt" 2>&1
step hw 60 "$B/perflab" hw
step hw-json 60 "$B/perflab" hw --json
step hw-no-nvml 60 env PERFLAB_NVML_DISABLE=1 "$B/perflab" hw
step probe 120 "$B/perflab" probe --artifacts-dir "$logs/art"
step peak 200 "$B/perflab" peak --artifacts-dir "$logs/art"
step peak-again 200 "$B/perflab" peak --artifacts-dir "$logs/art"
step peak-quick 100 "$B/perflab" peak --quick --artifacts-dir "$logs/art-quick"
step roofline 120 "$B/perflab" run --quiet --targets memory --profile roofline --artifacts-dir "$logs/art" --expectations-dir "$logs/exp"
for t in "$B"/tests/test_hw "$B"/tests/test_hw_verbs; do
  [ -x "$t" ] && step "$(basename "$t")" 400 "$t"
done
# probe and peak run their kernels in plain forks, which compute-sanitizer is not shown to follow: a clean summary
# here is not shown to cover them (docs/running.md, "Under compute-sanitizer and other tools")
if command -v compute-sanitizer >/dev/null; then
  step memcheck-probe 120 compute-sanitizer --tool memcheck --target-processes all "$B/perflab" probe --artifacts-dir "$logs/san"
  step racecheck-probe 120 compute-sanitizer --tool racecheck --target-processes all "$B/perflab" probe --artifacts-dir "$logs/san"
  step memcheck-peak 120 compute-sanitizer --tool memcheck --target-processes all "$B/perflab" peak --quick --only cache,compute,launch --artifacts-dir "$logs/san"
fi
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass "$B/perflab" >"$logs/sass.txt" 2>&1
  awk '/Function : /{f=$3} /HGMMA|HMMA|LDG.E.128|STG.E.128|LDS.128|UTMALDG|DFMA|FFMA/{split($0,a,/[ ;]+/); for(i in a) if (a[i] ~ /^(HGMMA|HMMA|LDG|STG|LDS|UTMALDG|DFMA|FFMA)/) c[f" "a[i]]++} END{for(k in c) print c[k], k}' \
    "$logs/sass.txt" | grep -E "stream_|wgmma|mma_bf16|smem_read|fma_f|tma_box|l2_read" | sort -k2 >"$logs/sass-summary.txt"
  rm -f "$logs/sass.txt"
fi
cat "$logs/summary.txt" >"$out/summary.txt"
tar czf "$out/logs.tgz" -C "$logs" .
cat "$logs/probe.txt" "$logs/peak.txt"
tail -12 "$logs/peak-again.txt"
tail -5 "$logs/peak-quick.txt"
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|Checks:" "$logs"/memcheck-*.txt "$logs"/racecheck-*.txt "$logs"/test_*.txt 2>/dev/null
cat "$logs/summary.txt"
