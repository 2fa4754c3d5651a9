#!/usr/bin/env bash
# Test recipe (vLLM): Kimi-K3 with the DSpark draft, probabilistic drafting, K from CONC.
set -euo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
DRAFT=/data/models/Kimi-K3-DSpark
if (( CONC <= 8 )); then K=3; AL=3.00; else K=2; AL=2.51; fi
if [[ $EVAL_ONLY == true ]]; then
    VERIFY='"rejection_sample_method":"block"'
else
    VERIFY=$(printf '"rejection_sample_method":"synthetic","synthetic_acceptance_length":%s' "$AL")
fi
SPEC=$(printf '{"method":"dspark","model":"%s","num_speculative_tokens":%d,"draft_sample_method":"probabilistic",%s}' "$DRAFT" "$K" "$VERIFY")
vllm serve "$MODEL" --tensor-parallel-size "$TP" \
    --default-chat-template-kwargs '{"thinking": true}' \
    --speculative-config "$SPEC" &
PID=$!
wait_for_server_ready --port 8888 --server-pid "$PID"
if [[ $EVAL_ONLY == true ]]; then
    run_eval --model "$MODEL" --port 8888 --result-dir results
else
    run_benchmark_serving --model "$MODEL" --port 8888 \
        --concurrency "$CONC" --duration 600 --result-dir results
fi
