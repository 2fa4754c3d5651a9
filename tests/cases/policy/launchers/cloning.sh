#!/usr/bin/env bash
# Test launcher: the recipes come from an external srt-slurm checkout at a pinned ref.
set -euo pipefail
git clone https://github.com/example/srt-slurm.git srt-slurm
cd srt-slurm
git checkout v9.9.9
srtctl apply -f "$CONFIG_FILE"
