#!/usr/bin/env bash
# Test launcher: submits CONFIG_FILE as it is (no runner injection).
set -euo pipefail
CONFIG_PATH="${CONFIG_FILE%%:*}"
mkdir -p srt-slurm && cd srt-slurm
mkdir -p "$(dirname "$CONFIG_PATH")"
cp "$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/${CONFIG_PATH#recipes/}" "$CONFIG_PATH"
srtctl apply -f "$CONFIG_FILE"
