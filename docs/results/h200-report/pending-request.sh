# Prepared, not run (the device time was spent): the strided baseline at a 1M-row stride and the GEMM ladder under
# --profile roofline with ncu, and kv-cache on a GPU's free memory. Run with the devq tools (stage with
# docs/results/h200-report/ceilings-h200.json as an extra path).
mkdir -p /work/wt && ln -sfn "$PWD" /work/wt/reports
A=$OUT_REQ/art; mkdir -p $A
export PERFLAB_CEILINGS=$PWD/docs/results/h200-report/ceilings-h200.json
echo "== run: memory:coalescing at a 1M-row stride + gemm:bf16 2048^3, roofline with ncu"; t0=$(date +%s)
./build/perflab run --targets memory:coalescing,gemm:bf16 --profile roofline --artifacts-dir $A --quiet --max-time-s 1 \
  --target-extra-arg 'memory:coalescing=--stride 1m' --target-extra-arg 'gemm:bf16=--m 2048 --n 2048 --k 2048' 2>&1
echo "run rc=$? $(( $(date +%s)-t0 )) s"
echo "== kv-cache on the GPU's free memory"
./build/perflab calc kv-cache --model llama-3.1-70b --tokens 8192 --batch 16 --dtype fp8 --weights-gb 70.6 2>&1
find $A -name '*.ncu-rep' -delete; find $A -name '*.csv' -path '*ncu*' -delete
du -sh $OUT_REQ
