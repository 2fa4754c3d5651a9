"""Fixtures of the launch tests: this repository as the tree under test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED_KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
CASES = ROOT / "tests" / "cases" / "launch"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    for p in ("configs/nvidia-master.yaml", "runners/launch_h200-dgxc-slurm.sh",
              "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"):
        assert (ROOT / p).is_file(), f"{p} missing from the repository"
    return ROOT


def copy_repo(dest: Path) -> Path:
    """A copy of the parts of the repository a launch needs (configs, runners, benchmarks)."""
    for d in ("configs", "runners", "benchmarks"):
        shutil.copytree(ROOT / d, dest / d, ignore=shutil.ignore_patterns("__pycache__"))
    return dest
