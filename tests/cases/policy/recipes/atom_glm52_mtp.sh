#!/usr/bin/env bash
# Test recipe (ATOM): GLM-5.2 native MTP, K = 3, AL given in the rate form computed by awk.
set -euo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
K=3
GOLDEN=2.99
SPEC=(--method mtp --num-speculative-tokens "$K")
if [[ $EVAL_ONLY != true ]]; then
    RATE=$(awk -v al="$GOLDEN" -v k="$K" 'BEGIN { printf "%.6f", (al - 1) / k }')
    SPEC+=(--spec-decode-acceptance-rate "$RATE")
fi
python3 -u -m atom.entrypoints.openai_server --model "$MODEL" -tp "$TP" "${SPEC[@]}" &
PID=$!
wait_for_server_ready --port 8000 --server-pid "$PID"
if [[ $EVAL_ONLY == true ]]; then
    run_eval --model "$MODEL" --port 8000 --result-dir results
else
    run_benchmark_serving --model "$MODEL" --port 8000 \
        --concurrency "$CONC" --duration 600 --result-dir results
fi
