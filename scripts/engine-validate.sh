#!/usr/bin/env bash
# On a GPU machine, with a build made elsewhere: the engine's GPU tests one at a time (each with CK_VERBOSITY=verbose,
# so a slow or hanging test names its case), the e2e: targets at the shapes docs/perf/engine.md reports, a
# per-kernel profile of the fused decode step, PyTorch's layers (scripts/torch_engine_layer.py,
# scripts/torch_engine_moe_layer.py), and perflab serve on Llama-3-8B. Every step has a time limit; the logs and
# every artifact folder are packed into one archive, $OUT/engine-validate.tgz (a remote GPU machine may return a
# bounded number of files), and a summary comes last.
#
#   BUILD=build STEPS="tests e2e profile torch serve" scripts/engine-validate.sh
set -uo pipefail
out=${OUT:-engine-validate-out}
build=${BUILD:-build}
mkdir -p "$out"
logs=$(mktemp -d)
export NCCL_NVLS_ENABLE=0 PATH=/usr/local/cuda/bin:$PATH CK_VERBOSITY=verbose
. "$(dirname "$0")/carried-build.sh"
out_final=$out
out=$logs # step() writes its logs here; they are archived at the end

nvidia-smi --query-gpu=name,memory.total,power.limit,driver_version --format=csv,noheader 2>&1 | tee "$out/env.txt"
for s in ${STEPS:-tests e2e profile torch serve}; do
  case $s in
  tests)
    for t in ${ENGINE_TESTS:-engine_model engine_layer engine_moe serve_gpu energy_gpu}; do
      step "test_$t" "${TEST_LIMIT_S:-300}" "$src_path/build/tests/test_$t"
    done ;;
  e2e)
    step layer_decode 90 "$bin" run --targets e2e:layer_decode --artifacts-dir "$out/runs"
    step layer_decode_8x8192 90 "$bin" run --targets e2e:layer_decode \
      --target-extra-arg 'e2e:layer_decode=--batch 8 --cache-len 8192' --artifacts-dir "$out/runs"
    step layer_prefill 120 "$bin" run --targets e2e:layer_prefill --artifacts-dir "$out/runs"
    step model_decode 120 "$bin" run --targets e2e:model_decode --artifacts-dir "$out/runs"
    step moe_layer_decode 120 "$bin" run --targets e2e:moe_layer_decode --artifacts-dir "$out/runs" ;;
  profile)
    step profile_decode 300 "$bin" profile e2e:layer_decode --variant fused --no-nsys --artifacts-dir "$out/profile" ;;
  torch)
    step torch_layer 300 python3 scripts/torch_engine_layer.py --json "$out/torch_layer.json"
    step torch_moe 300 python3 scripts/torch_engine_moe_layer.py --json "$out/torch_moe.json" ;;
  serve)
    step serve_max 300 "$bin" serve --model llama3-8b --num-prompts 64 --random-input-len 2048 \
      --random-output-len 2048 --request-rate inf --artifacts-dir "$out/serve"
    step serve_sweep 300 "$bin" serve --model llama3-8b --num-prompts 32 --random-input-len 2048 \
      --random-output-len 128 --request-rate 4,16,inf --slo-ttft-ms 500 --artifacts-dir "$out/serve" ;;
  esac
  tar czf "$out_final/engine-validate.tgz" -C "$logs" . # after every phase: a run cut short keeps what ran
done
cat "$summary"
