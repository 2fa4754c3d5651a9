#!/usr/bin/env bash
# Test recipe (SGLang): Qwen3.5 native MTP (EAGLE without a draft path), K = 3.
set -euo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
STEPS=3
if [[ $EVAL_ONLY != true ]]; then
    export SGLANG_SIMULATE_ACC_LEN=3.39
    export SGLANG_SIMULATE_ACC_METHOD=match-expected
    export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token
fi
python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP" \
    --speculative-algorithm EAGLE --speculative-num-steps "$STEPS" \
    --speculative-eagle-topk 1 --speculative-num-draft-tokens $((STEPS + 1)) &
PID=$!
wait_for_server_ready --port 30000 --server-pid "$PID"
if [[ $EVAL_ONLY == true ]]; then
    run_eval --model "$MODEL" --port 30000 --result-dir results
else
    run_benchmark_serving --model "$MODEL" --port 30000 \
        --concurrency "$CONC" --duration 600 --result-dir results
fi
