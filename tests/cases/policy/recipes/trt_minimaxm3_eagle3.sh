#!/usr/bin/env bash
# Test recipe (TensorRT-LLM): MiniMax-M3 with the EAGLE3-GQA draft from a local path, K = 3.
set -euo pipefail
source "$(dirname "$0")/../../benchmark_lib.sh"
DRAFT_DIR=/data/models/MiniMax-M3-EAGLE3-GQA
cat > ser.yaml <<YAML
speculative_config:
  decoding_type: Eagle3
  max_draft_len: 3
  speculative_model_dir: $DRAFT_DIR
kv_cache_config:
  free_gpu_memory_fraction: 0.85
YAML
if [[ $EVAL_ONLY != true ]]; then
    export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78
fi
export AIPERF_EXTRA_INPUTS='chat_template_kwargs:{"thinking_mode":"enabled"} thinking:true'
mpirun -n 1 --allow-run-as-root trtllm-serve "$MODEL" --tp_size "$TP" --config ser.yaml &
PID=$!
wait_for_server_ready --port 8000 --server-pid "$PID"
if [[ $EVAL_ONLY == true ]]; then
    run_eval --model "$MODEL" --port 8000 --result-dir results
else
    run_benchmark_serving --model "$MODEL" --port 8000 \
        --concurrency "$CONC" --duration 600 --result-dir results
fi
