#!/usr/bin/env bash
# The committed GEMM points (kernels/gemm/host/heuristic_points.c) are what scripts/gemm_points_table.py writes from
# the committed sweeps they name (docs/results/h200-wide/h200-ecf1ee9-nk-kn-sweeps.tar.gz), with the kernel table of
# this build. Usage: check_gemm_points.sh SOURCE_DIR PERFLAB_BIN
set -euo pipefail
src=$1 bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$src/docs/results/h200-wide/h200-ecf1ee9-nk-kn-sweeps.tar.gz" -C "$tmp"
"$bin" gemm --list-kernels --json >"$tmp/kernels.json"
cd "$tmp" # the sources are named by their folders, as when the file was written
python3 "$src/scripts/gemm_points_table.py" --check --kernels kernels.json --out "$src/kernels/gemm/host/heuristic_points.c" \
  nk/comparison.json kn/comparison.json
