#!/usr/bin/env bash
# Test launcher: for evals, deletes the TRT forcing variable from the recipe.
set -euo pipefail
CONFIG_PATH="${CONFIG_FILE%%:*}"
mkdir -p srt-slurm && cd srt-slurm
mkdir -p "$(dirname "$CONFIG_PATH")"
cp "$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/${CONFIG_PATH#recipes/}" "$CONFIG_PATH"
if [[ "${EVAL_ONLY:-false}" == "true" ]]; then
    sed -i '/TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS/d' "$CONFIG_PATH"
fi
srtctl apply -f "$CONFIG_FILE"
