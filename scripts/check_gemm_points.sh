#!/usr/bin/env bash
# The committed GEMM points (kernels/gemm/host/heuristic_points.c) are what scripts/gemm_points_table.py writes from
# the committed sweeps they name (docs/results/h200-wide/: the BF16 wide sweeps of ecf1ee9, d534b30 and aad0b30 on an
# H200 and of aad0b30 on an H100 SXM, and two seeds of 40 random shapes in both layouts of bbc4910 on an H200, clean
# trees whose BF16 kernels are today's), with the kernel table of this build.
# Usage: check_gemm_points.sh SOURCE_DIR PERFLAB_BIN
set -euo pipefail
src=$1 bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in h200-ecf1ee9-nk-kn d534b30-aad0b30 h200-bbc4910-random; do
  tar -xzf "$src/docs/results/h200-wide/$t-sweeps.tar.gz" -C "$tmp"
done
"$bin" gemm --list-kernels --json >"$tmp/kernels.json"
cd "$tmp" # the sources are named by their folders, as when the file was written
python3 "$src/scripts/gemm_points_table.py" --check --kernels kernels.json --out "$src/kernels/gemm/host/heuristic_points.c" \
  nk/comparison.json kn/comparison.json h200-d534b30/comparison.json h200-aad0b30/comparison.json \
  h100-aad0b30/comparison.json h200-bbc4910-random-*/comparison.json
