#!/usr/bin/env bash
# On a GPU machine with torch, with a build made elsewhere (carried in build/): the Python package's GPU tests
# (perflab.bench within 1% of perflab run, each perflab.ops kernel within 2% of its target, the ops against PyTorch's
# with torch.testing, torch.compile through the custom ops, perflab.compare's run folder read by the CLI), one kernel
# under 30 us timed four ways (scripts/timing_side_by_side.py), and PyTorch's row kernels eager and under torch.compile
# (scripts/torch_rows_bench.py). Logs go to $OUT (or ./python-validate-out); the summary is printed last.
set -uo pipefail
out=${OUT:-python-validate-out}
mkdir -p "$out"
export PERFLAB_LIB=$PWD/build/libperflab.so PERFLAB_BIN=$PWD/build/perflab PYTHONPATH=$PWD/python
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$out/env.txt"
$py -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)" | tee -a "$out/env.txt"

$py -m pytest -v -rs -s -p no:cacheprovider tests/python >"$out/pytest.log" 2>&1
echo "pytest tests/python (host and GPU): exit $? ($(tail -1 "$out/pytest.log"))" | tee -a "$out/summary.txt"
$py scripts/timing_side_by_side.py --json "$out/side_by_side.json" >"$out/side_by_side.txt" 2>&1
echo "timing_side_by_side: exit $?" | tee -a "$out/summary.txt"
$py scripts/torch_rows_bench.py --ops rmsnorm,layernorm,softmax --json "$out/torch_rows.json" >"$out/torch_rows.txt" 2>&1
echo "torch_rows_bench (eager, torch.compile, max-autotune): exit $?" | tee -a "$out/summary.txt"
grep -E "ratio|PASS|FAIL|SKIP" "$out/pytest.log"
cat "$out/side_by_side.txt" "$out/torch_rows.txt" "$out/summary.txt"
