#!/usr/bin/env bash
# Shared helpers for this repository's benchmark scripts (sourced, never executed).
#
# Functions:
#   require_vars VAR...                 fail unless every VAR is set and non-empty
#   write_command FILE ARG...           record a launch command (shell-quoted) in FILE
#   wait_for_server_ready --port P --server-pid PID [--server-log LOG] [--timeout S]
#                                       poll http://127.0.0.1:P/health until it answers;
#                                       fail early when PID dies
#   run_benchmark_serving --model M --port P --concurrency C --duration S --result-dir D
#                                       agentic replay client (aiperf) against the server
#   run_eval --model M --port P --result-dir D
#                                       accuracy eval (lm_eval, local-completions API)
#   stop_server PID                     stop the server process and its children
#
# `ixtool policy check` traces the scripts as they are (these helpers included: only the
# programs they start are stubbed): keep them runnable without a GPU or a network.

require_vars() {
    local v missing=0
    for v in "$@"; do
        if [[ -z "${!v:-}" ]]; then
            echo "error: required variable $v is not set" >&2
            missing=1
        fi
    done
    return "$missing"
}

write_command() {
    local file=$1
    shift
    printf '%q ' "$@" > "$file"
    printf '\n' >> "$file"
}

_flag() {  # _flag NAME ARGS... -> value following --NAME
    local name=$1
    shift
    while [[ $# -gt 0 ]]; do
        if [[ $1 == "--$name" ]]; then
            printf '%s' "${2:-}"
            return 0
        fi
        shift
    done
    return 1
}

wait_for_server_ready() {
    local port pid log timeout waited=0
    port=$(_flag port "$@") || { echo "wait_for_server_ready: --port required" >&2; return 2; }
    pid=$(_flag server-pid "$@") || { echo "wait_for_server_ready: --server-pid required" >&2; return 2; }
    log=$(_flag server-log "$@") || log=""
    timeout=$(_flag timeout "$@") || timeout=3600
    until curl -sf "http://127.0.0.1:${port}/health" > /dev/null; do
        if ! kill -0 "$pid" 2> /dev/null; then
            echo "error: server (pid $pid) exited before becoming ready" >&2
            [[ -n $log && -f $log ]] && tail -n 50 "$log" >&2
            return 1
        fi
        if (( waited >= timeout )); then
            echo "error: server not ready after ${timeout}s" >&2
            return 1
        fi
        sleep 5
        waited=$((waited + 5))
    done
}

run_benchmark_serving() {
    local model port conc duration dir
    model=$(_flag model "$@") && port=$(_flag port "$@") && conc=$(_flag concurrency "$@") \
        && duration=$(_flag duration "$@") && dir=$(_flag result-dir "$@") \
        || { echo "run_benchmark_serving: --model --port --concurrency --duration --result-dir required" >&2; return 2; }
    mkdir -p "$dir"
    python3 -m aiperf profile \
        --model "$model" \
        --url "http://127.0.0.1:${port}" \
        --endpoint-type chat \
        --streaming \
        --concurrency "$conc" \
        --benchmark-duration "$duration" \
        --artifact-dir "$dir"
}

run_eval() {
    local model port dir
    model=$(_flag model "$@") && port=$(_flag port "$@") && dir=$(_flag result-dir "$@") \
        || { echo "run_eval: --model --port --result-dir required" >&2; return 2; }
    mkdir -p "$dir"
    python3 -m lm_eval \
        --model local-completions \
        --model_args "model=${model},base_url=http://127.0.0.1:${port}/v1/completions,num_concurrent=16" \
        --tasks gsm8k \
        --output_path "$dir"
}

stop_server() {
    local pid=${1:-}
    [[ -n $pid ]] || return 0
    pkill -TERM -P "$pid" 2> /dev/null || true
    kill -TERM "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
}
