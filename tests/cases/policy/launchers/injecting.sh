#!/usr/bin/env bash
# Test launcher: submits the srt-slurm recipe CONFIG_FILE after the runner's
# synthetic-acceptance injection (like an injecting cluster launcher).
set -euo pipefail
CONFIG_PATH="${CONFIG_FILE%%:*}"
mkdir -p srt-slurm && cd srt-slurm
mkdir -p "$(dirname "$CONFIG_PATH")"
cp "$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/${CONFIG_PATH#recipes/}" "$CONFIG_PATH"
python3 "$GITHUB_WORKSPACE/runners/inject_synthetic_acceptance.py" "$CONFIG_PATH" "$FRAMEWORK"
srtctl apply -f "$CONFIG_FILE" --tags test
