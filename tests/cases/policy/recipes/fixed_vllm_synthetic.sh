#!/usr/bin/env bash
# Test recipe (fixed-seq-len, vLLM EAGLE3): synthetic acceptance outside AgentX.
set -euo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
SPEC='{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.83}'
vllm serve "$MODEL" --max-model-len "$MAX_MODEL_LEN" --speculative-config "$SPEC" &
wait_for_server_ready --port 8888 --server-pid "$!"
run_benchmark_serving --model "$MODEL" --port 8888 --concurrency "$CONC" --duration 600 --result-dir results
