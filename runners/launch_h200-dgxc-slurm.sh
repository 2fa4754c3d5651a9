#!/usr/bin/env bash
# Launcher for the h200-dgxc-slurm runner family (runner names h200-dgxc-slurm_<n>).
#
# Runs one benchmark row: resolves the benchmark script of the row (SWEEP.md §7) and runs it
# inside a Slurm allocation, in the row's container, with the row's variables exported.
# `srun` (and `sbatch` for detached runs) are taken from PATH, so tests can put recorders first.
#
# Inputs (environment, set by the workflow from the matrix row):
#   RUNNER_NAME          concrete runner, e.g. h200-dgxc-slurm_7 (informational)
#   EXP_NAME             exp-name; its first '_' field is the model prefix
#   MODEL IMAGE          model id and container image of the config key
#   PRECISION FRAMEWORK  script-name parts (fp8, vllm, …)
#   SCENARIO_TYPE        agentic-coding | fixed-seq-len
#   SPEC_DECODING        mtp | draft_model | none
#   TP EP CONC           tensor / expert parallel size, concurrency
#   PP DCP_SIZE PCP_SIZE DP_ATTENTION   (optional, default 1/1/1/false)
#   KV_OFFLOADING        none | dram (agentic)
#   KV_OFFLOAD_BACKEND TOTAL_CPU_DRAM_GB   (agentic with dram offload)
#   DURATION             agentic run length in seconds (default 3600)
#   ISL OSL MAX_MODEL_LEN                  (fixed-seq-len rows)
#   EVAL_ONLY RUN_EVAL   true for eval rows (default false)
#   GITHUB_WORKSPACE     checkout to mount (default: the current directory)
#   SLURM_PARTITION      partition (default: h200), SLURM_ACCOUNT (optional)
#   SLURM_TIME           time limit in minutes (default: the run's DURATION + 60 min for
#                        model load, warm-up and evals)
#   LAUNCH_DETACHED      true: submit with sbatch instead of running with srun
#
# Exported into the job: all of the above plus GPU_COUNT, PORT, RESULT_DIR, HF_HOME.
set -euo pipefail

: "${EXP_NAME:?}" "${MODEL:?}" "${IMAGE:?}" "${PRECISION:?}" "${FRAMEWORK:?}" "${TP:?}" "${CONC:?}"
WORKSPACE=${GITHUB_WORKSPACE:-$PWD}
SCENARIO_TYPE=${SCENARIO_TYPE:-fixed-seq-len}
SPEC_DECODING=${SPEC_DECODING:-none}
export EP=${EP:-1} PP=${PP:-1} DCP_SIZE=${DCP_SIZE:-1} PCP_SIZE=${PCP_SIZE:-1}
export DP_ATTENTION=${DP_ATTENTION:-false}
export KV_OFFLOADING=${KV_OFFLOADING:-none} DURATION=${DURATION:-3600}
export EVAL_ONLY=${EVAL_ONLY:-false} RUN_EVAL=${RUN_EVAL:-false}
export GPU_COUNT=$((TP * PP * PCP_SIZE))
export PORT=${PORT:-8888}
export RESULT_DIR=${RESULT_DIR:-/workspace/results/$EXP_NAME}
export HF_HOME=${HF_HOME:-/workspace/.hf}
export MODEL IMAGE PRECISION FRAMEWORK TP CONC SCENARIO_TYPE SPEC_DECODING EXP_NAME

# --- benchmark script (SWEEP.md §7) ---------------------------------------------------
if [[ $SCENARIO_TYPE == agentic-coding ]]; then SUB=agentic/; else SUB=fixed_seq_len/; fi
PREFIX=${EXP_NAME%%_*}
SUFFIX=""
if [[ $SPEC_DECODING == mtp ]]; then SUFFIX=_mtp; fi
TRT=""
if [[ $FRAMEWORK == trt ]]; then TRT=_trt; fi
BASE=benchmarks/single_node/${SUB}${PREFIX}_${PRECISION}_h200
SCRIPT=${BASE}_${FRAMEWORK}${SUFFIX}.sh
if [[ ! -f $WORKSPACE/$SCRIPT ]]; then
    SCRIPT=${BASE}${TRT}${SUFFIX}.sh
fi
if [[ ! -f $WORKSPACE/$SCRIPT ]]; then
    echo "error: no benchmark script for $EXP_NAME: tried ${BASE}_${FRAMEWORK}${SUFFIX}.sh and $SCRIPT" >&2
    exit 1
fi
echo "launch: $SCRIPT (tp=$TP ep=$EP conc=$CONC kv=$KV_OFFLOADING eval_only=$EVAL_ONLY)"

ALLOC_ARGS=(
    --nodes=1 --ntasks=1 --exclusive
    --gres="gpu:$GPU_COUNT"
    --partition="${SLURM_PARTITION:-h200}"
    --time="${SLURM_TIME:-$(( (DURATION + 3600 + 59) / 60 ))}"
    --job-name="ix-$EXP_NAME"
    --export=ALL
)
if [[ -n ${SLURM_ACCOUNT:-} ]]; then ALLOC_ARGS+=(--account="$SLURM_ACCOUNT"); fi
SRUN_ARGS=(
    "${ALLOC_ARGS[@]}"
    --container-image="$IMAGE"
    --container-mounts="$WORKSPACE:/workspace"
    --container-workdir=/workspace
)

if [[ ${LAUNCH_DETACHED:-false} == true ]]; then
    exec sbatch --parsable "${ALLOC_ARGS[@]}" \
        --wrap "srun $(printf '%q ' "${SRUN_ARGS[@]}")bash $(printf '%q' "$SCRIPT")"
fi
exec srun "${SRUN_ARGS[@]}" bash "$SCRIPT"
