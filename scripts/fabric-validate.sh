#!/usr/bin/env bash
# Fabric validation on a multi-GPU machine, from a build carried in one folder (this script's): perflab,
# perflab-mpi, torch_nccl_bench.py. Runs every `perflab comm` collective from 8 KiB to 1 GiB (threaded, and under
# mpirun when it is installed), `perflab moe-readiness` with its defaults and with the seed's SLOs, the
# fullstack:moe_readiness target pair, and PyTorch's NCCL collectives timed the same way; ends with a side-by-side
# table (perflab vs torch busbw, threads vs MPI). Everything goes to $OUT: summary.txt, validate.log, the MoE
# report and heatmaps, and fabric.tgz with every report.
#   bash .carry-comm/fabric-validate.sh            (ITERS=100 by default; test_comm_gpu beside it runs too)
set -uo pipefail
C=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-$PWD/fabric-out}
W="$O/work"
mkdir -p "$W"
ITERS=${ITERS:-100}
export NCCL_NVLS_ENABLE=0 # NVLink multicast (NVLS) off, as on the H200 machines every figure in docs/perf/comm.md came from
G=$(nvidia-smi -L | wc -l)
LOG="$O/validate.log"
: >"$LOG"
step() { # name, command...: output to the log, exit code and time to the log and the terminal
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== $name: $*" >>"$LOG"
  "$@" >>"$LOG" 2>&1
  local rc=$?
  printf '%-34s exit %d  %4d s\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$LOG" "$W/steps.txt"
  return 0
}
MPI=""
if command -v mpirun >/dev/null 2>&1 && [ -x "$C/perflab-mpi" ]; then
  MPI="mpirun --allow-run-as-root --bind-to none -np $G -x NCCL_NVLS_ENABLE"
fi

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv
  nvidia-smi topo -m
  "$C/perflab" --version
  ls -l /usr/lib/x86_64-linux-gnu/libnccl.so.2* 2>/dev/null
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())" 2>&1
  [ -n "$MPI" ] && mpirun --version | head -1
} >"$W/env.txt" 2>&1
cat "$W/env.txt" >>"$LOG"
echo "$G GPUs; iterations per point and rank: $ITERS" | tee -a "$LOG"

# 1. every collective, 8 KiB .. 1 GiB, out of place and in place, checked, threaded and MPI
step "comm all (threads)" "$C/perflab" comm all -b 8k -e 1g -n "$ITERS" -q --out-dir "$W/comm-threads"
if [ -n "$MPI" ]; then
  step "comm all (mpi)" $MPI "$C/perflab-mpi" comm all -b 8k -e 1g -n "$ITERS" -q --out-dir "$W/comm-mpi"
else
  echo "mpirun or perflab-mpi missing: MPI mode not run" | tee -a "$LOG"
fi
# alltoall through grouped send/recv as well (the default uses ncclAlltoAll where NCCL has it)
step "alltoall group API (threads)" "$C/perflab" comm alltoall --alltoall-api group -b 1m -e 1g -n "$ITERS" -q \
  --out-dir "$W/comm-a2a-group"
# NCCL buffer registration, measured rather than assumed
step "registered buffer (threads)" "$C/perflab" comm allreduce,alltoall --register buffer -b 1m -e 1g -f 4 \
  -n "$ITERS" -q --out-dir "$W/comm-reg-buffer"
step "registered window (threads)" "$C/perflab" comm allreduce,alltoall --register window -b 1m -e 1g -f 4 \
  -n "$ITERS" -q --out-dir "$W/comm-reg-window"

# 2. PyTorch's NCCL collectives, same sizes, same timing and busbw definitions; and perflab again on the NCCL
#    that PyTorch bundles, so that a difference of NCCL versions cannot pass for one of method
step "torch alltoall,allreduce" python3 "$C/torch_nccl_bench.py" --collectives alltoall,allreduce -b 1m -e 1g \
  -n "$ITERS" --json "$W/torch.json"
TORCH_NCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
if [ -n "$TORCH_NCCL" ] && [ -e "$TORCH_NCCL/libnccl.so.2" ]; then
  step "comm on torch's NCCL (threads)" env LD_LIBRARY_PATH="$TORCH_NCCL" "$C/perflab" comm alltoall,allreduce \
    -b 1m -e 1g -n "$ITERS" -q --out-dir "$W/comm-torch-nccl"
else
  echo "PyTorch's own libnccl.so.2 not found: perflab runs on the system NCCL only" | tee -a "$LOG"
fi

# 3. MoE readiness: defaults, the seed's SLOs, MPI mode, and the target pair
step "moe-readiness defaults" "$C/perflab" moe-readiness -q --out-dir "$W/moe-default"
step "moe-readiness SLO 6ms/16GBps" "$C/perflab" moe-readiness -q --out-dir "$W/moe-slo" \
  --message-sizes 48k,192k,768k,2m --skews 1.0,1.25,1.5 --max-p99-ms 6.0 --min-bw-gbps 16.0
step "moe-readiness hotspot" "$C/perflab" moe-readiness -q --out-dir "$W/moe-hotspot" --skew-model hotspot
step "moe-readiness registered" "$C/perflab" moe-readiness -q --out-dir "$W/moe-registered" --register buffer
if [ -n "$MPI" ]; then
  step "moe-readiness defaults (mpi)" $MPI "$C/perflab-mpi" moe-readiness -q --out-dir "$W/moe-mpi"
fi
step "target fullstack:moe_readiness" "$C/perflab" run --targets fullstack:moe_readiness --artifacts-dir "$W/art" \
  --expectations-dir "$W/exp" -q
step "target, 48k message" "$C/perflab" run --targets fullstack:moe_readiness --artifacts-dir "$W/art" \
  --expectations-dir "$W/exp" -q --target-extra-arg 'fullstack:moe_readiness=--message-size 48k'

# 4. the fabric's GPU tests, when their binary was carried too (it runs perflab from the path it was built in)
if [ -x "$C/test_comm_gpu" ]; then
  bin=$(grep -a -o -m1 '/[[:alnum:]_./-]*/perflab' "$C/test_comm_gpu" | head -1)
  mkdir -p "$(dirname "$bin")/tests/tmp" && cp "$C/perflab" "$C/perflab-mpi" "$(dirname "$bin")/"
  step "GPU tests (test_comm_gpu)" bash -c "cd '$(dirname "$bin")/tests' && '$C/test_comm_gpu'"
fi

# 5. the side-by-side summary
python3 - "$W" >"$O/summary.txt" 2>&1 <<'PY'
import glob, json, os, sys
w = sys.argv[1]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return None

def points(rep, coll, in_place=None):
    out = {}
    for p in (rep or {}).get("points", []):
        if p.get("collective") == coll and (in_place is None or p.get("in_place") == in_place) \
                and p.get("busbw_gbps") is not None:
            out[p["size_bytes"]] = p
    return out

thr, mpi, torch = load(f"{w}/comm-threads/report.json"), load(f"{w}/comm-mpi/report.json"), load(f"{w}/torch.json")
grp = load(f"{w}/comm-a2a-group/report.json")
rb, rw = load(f"{w}/comm-reg-buffer/report.json"), load(f"{w}/comm-reg-window/report.json")
tn = load(f"{w}/comm-torch-nccl/report.json")
print(open(f"{w}/steps.txt").read())
if thr:
    s = thr["settings"]
    print(f"perflab: {s['ranks']} ranks, NCCL {s['nccl_version']}, alltoall API {s['alltoall_api']}, "
          f"{s['iters']} iterations; GPU {thr['ranks'][0]['name']}")
    bad = [p for p in thr["points"] if p["status"] not in ("ok", "skipped")]
    print(f"threads: {len(thr['points'])} points, {len(bad)} not ok" + "".join(
        f"\n  {p['collective']} {p['size_bytes']} {p['status']}: {p.get('reason')}" for p in bad[:10]))
if mpi:
    bad = [p for p in mpi["points"] if p["status"] not in ("ok", "skipped")]
    print(f"mpi:     {len(mpi['points'])} points, {len(bad)} not ok")
if torch:
    print(f"torch {torch['torch']}, NCCL {torch['nccl']}, {torch['ranks']} ranks")
if tn:
    print(f"pl@tnccl: perflab on PyTorch's NCCL ({tn['settings']['nccl_version']})")
tpts = {(p["collective"], p["size_bytes"]): p for p in (torch or {}).get("points", [])}

def fmt(x):
    return f"{x:8.1f}" if isinstance(x, (int, float)) else f"{'-':>8}"

for coll, place in (("allreduce", True), ("allreduce", False), ("alltoall", False)):
    label = "in place" if place else "out of place"
    print(f"\n{coll} busbw (GB/s) at p50, perflab {label}; torch {'in place' if coll == 'allreduce' else 'out of place'}")
    print(f"{'size':>11} {'perflab':>8} {'torch':>8} {'pl/torch':>8} {'pl@tnccl':>8} {'mpi':>8} {'mpi/thr':>8} "
          f"{'p99 us':>8} " + (f"{'group':>8} " if coll == "alltoall" else "") + f"{'reg-buf':>8} {'reg-win':>8}")
    tp, mp_, tnp = points(thr, coll, place), points(mpi, coll, place), points(tn, coll, place)
    gp, bp, wp = points(grp, coll, place), points(rb, coll, place), points(rw, coll, place)
    for size in sorted(tp):
        if size < (1 << 20):
            continue
        a = tp[size]["busbw_gbps"]
        t = tpts.get((coll, size), {}).get("busbw_gbps")
        m = mp_.get(size, {}).get("busbw_gbps")
        line = (f"{size:>11} {fmt(a)} {fmt(t)} {fmt(a / t if t else None)} "
                f"{fmt(tnp.get(size, {}).get('busbw_gbps'))} {fmt(m)} {fmt(m / a if m and a else None)} "
                f"{fmt(tp[size]['latency_ms']['p99'] * 1e3)} ")
        if coll == "alltoall":
            line += f"{fmt(gp.get(size, {}).get('busbw_gbps'))} "
        line += f"{fmt(bp.get(size, {}).get('busbw_gbps'))} {fmt(wp.get(size, {}).get('busbw_gbps'))}"
        print(line)

for name in ("moe-default", "moe-slo", "moe-hotspot", "moe-registered", "moe-mpi"):
    rep = load(f"{w}/{name}/report.json")
    if not rep:
        continue
    v = rep["verdict"]
    print(f"\n{name}: verdict {v['overall']} ({v['missed']} of {v['points']} missed), launch {rep['settings']['launch']}")
    for p in rep["points"]:
        lat = p["latency_ms"] or {}
        print(f"  {p['message_bytes']:>8} B alpha {p['skew']:.2f} gini {p['split']['gini']:.3f} "
              f"p50 {lat.get('p50', float('nan')) * 1e3:8.1f} us p99 {lat.get('p99', float('nan')) * 1e3:8.1f} us "
              f"{p['bw_gbps_p50'] or 0:7.2f} GB/s@p50 {p['bw_gbps_p99'] or 0:7.2f} GB/s@p99 {p['slo']['verdict']}")
for run in sorted(glob.glob(f"{w}/art/*/run.json")):
    r = load(run) or {}
    for t in r.get("targets", []):
        params = " ".join(f"{k}={v}" for k, v in (t.get("params") or {}).items())
        print(f"\n{t['name']} {params}: {t['status']} {t.get('reason') or ''}")
        for v in t.get("variants", []):
            st, sp = v.get("stats") or {}, v.get("speedup") or {}
            med = st.get("median_ms") or float("nan")
            print(f"  {v['name']:<11} median {med * 1e3:9.1f} us  speedup {sp.get('value') or float('nan'):.2f} "
                  f"[{sp.get('ci_low') or float('nan'):.2f}, {sp.get('ci_high') or float('nan'):.2f}]  {v.get('status')}")
PY
cat "$O/summary.txt"
cp "$W/moe-slo/report.json" "$O/moe_slo_report.json" 2>/dev/null
cp "$W/moe-slo/heatmap_p99_latency.svg" "$O/moe_slo_heatmap_p99_latency.svg" 2>/dev/null
cp "$W/moe-slo/heatmap_bandwidth.svg" "$O/moe_slo_heatmap_bandwidth.svg" 2>/dev/null
tar czf "$O/fabric.tgz" -C "$O" work && rm -rf "$W"
echo "total ${SECONDS} s" | tee -a "$O/summary.txt"
