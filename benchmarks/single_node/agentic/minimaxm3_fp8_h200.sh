#!/usr/bin/env bash
# MiniMax-M3 (FP8) on one 8xH200 node: vLLM without speculative decoding, AgentX agentic coding.
# Config key: minimaxm3-fp8-h200-vllm-agentic (configs/nvidia-master.yaml), launched by
# runners/launch_h200-dgxc-slurm.sh, which exports:
#   MODEL TP EP CONC KV_OFFLOADING EVAL_ONLY  (required here)
#   KV_OFFLOAD_BACKEND TOTAL_CPU_DRAM_GB      (when KV_OFFLOADING=dram)
#   DURATION PORT RESULT_DIR                  (optional: 3600, 8888, ./results)
#
# The non-MTP sibling of minimaxm3_fp8_h200_mtp.sh: the same serve shape without the EAGLE3
# drafter (no --speculative-config; the CUDA-graph capture size is MAX_NUM_SEQS, one token
# per decode step).
#
# Memory fraction: the seed PR does not give this recipe's value; 0.95 is chosen here (our
# choice, not a measured one).  Without a drafter there are no draft weights, draft KV
# cache or 1+K-token CUDA graphs to leave room for, so it may run above the 0.90 the MTP
# recipe needs.  Do not copy 0.95 into the MTP recipe: that is the #2423 OOM.
set -euo pipefail

source "$(dirname "$0")/../../benchmark_lib.sh"
require_vars MODEL TP CONC KV_OFFLOADING

EP=${EP:-1}
EVAL_ONLY=${EVAL_ONLY:-false}
DURATION=${DURATION:-3600}
PORT=${PORT:-8888}
RESULT_DIR=${RESULT_DIR:-$PWD/results}
mkdir -p "$RESULT_DIR"

MAX_NUM_SEQS=$((2 * CONC))
# every decode step of every sequence runs one token
CUDAGRAPH_MAX=$MAX_NUM_SEQS

PARALLEL_ARGS=(--tensor-parallel-size "$TP")
if (( EP > 1 )); then
    PARALLEL_ARGS+=(--enable-expert-parallel)
fi

OFFLOAD_ARGS=()
MOONCAKE_PID=""
case $KV_OFFLOADING in
    none) ;;
    dram)
        require_vars TOTAL_CPU_DRAM_GB
        if [[ ${KV_OFFLOAD_BACKEND:-mooncake} != mooncake ]]; then
            echo "error: KV_OFFLOAD_BACKEND=$KV_OFFLOAD_BACKEND; this recipe offloads with mooncake" >&2
            exit 1
        fi
        MOONCAKE_CONFIG_PATH=$RESULT_DIR/mooncake.json
        printf '{"local_hostname":"127.0.0.1","metadata_server":"P2PHANDSHAKE","protocol":"tcp","master_server_address":"127.0.0.1:50051","global_segment_size":"%sGB","local_buffer_size":"4GB"}\n' \
            "$TOTAL_CPU_DRAM_GB" > "$MOONCAKE_CONFIG_PATH"
        export MOONCAKE_CONFIG_PATH
        mooncake_master --port 50051 > "$RESULT_DIR/mooncake_master.log" 2>&1 &
        MOONCAKE_PID=$!
        OFFLOAD_ARGS=(--kv-transfer-config '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}')
        ;;
    *)
        echo "error: unsupported KV_OFFLOADING=$KV_OFFLOADING (none or dram)" >&2
        exit 1
        ;;
esac

SERVER_CMD=(
    vllm serve "$MODEL"
    --port "$PORT"
    "${PARALLEL_ARGS[@]}"
    --gpu-memory-utilization 0.95
    --kv-cache-dtype fp8
    --attention-backend TRITON_ATTN
    --block-size 128
    --language-model-only
    --max-num-seqs "$MAX_NUM_SEQS"
    --max-cudagraph-capture-size "$CUDAGRAPH_MAX"
    --enable-auto-tool-choice
    --tool-call-parser minimax_m3
    --reasoning-parser minimax_m3
    --default-chat-template-kwargs '{"thinking_mode":"enabled"}'
    "${OFFLOAD_ARGS[@]}"
)
write_command "$RESULT_DIR/server_command.txt" "${SERVER_CMD[@]}"

SERVER_LOG=$RESULT_DIR/server.log
"${SERVER_CMD[@]}" > "$SERVER_LOG" 2>&1 &
SERVER_PID=$!
cleanup() {
    stop_server "$SERVER_PID"
    if [[ -n $MOONCAKE_PID ]]; then stop_server "$MOONCAKE_PID"; fi
}
trap cleanup EXIT

wait_for_server_ready --port "$PORT" --server-pid "$SERVER_PID" --server-log "$SERVER_LOG"

if [[ $EVAL_ONLY == true ]]; then
    run_eval --model "$MODEL" --port "$PORT" --result-dir "$RESULT_DIR/eval"
else
    run_benchmark_serving --model "$MODEL" --port "$PORT" --concurrency "$CONC" \
        --duration "$DURATION" --result-dir "$RESULT_DIR/bench"
fi
