"""`ixtool review --base main` on the real InferenceX tree: a branch that changes one real
MTP recipe's pinned AL and appends its changelog entry.  Markdown snapshot."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CPU, GIT_ENV, ROOT, extract_real_tree, git

SNAPSHOT = ROOT / "tests" / "cases" / "review" / "real_tree.md"
SCRIPT = "benchmarks/single_node/agentic/qwen3.5_fp8_b300_sglang_mtp.sh"
KEY = "qwen3.5-fp8-b300-sglang-agentic-mtp"
ENTRY = (f"\n- config-keys:\n    - {KEY}\n  scenario-type:\n    - agentic-coding\n"
         "  description:\n    - \"Pin the synthetic acceptance length 3.45.\"\n"
         "  pr-link: TBD\n")


def normalise(text: str) -> str:
    return re.sub(r"\b[0-9a-f]{12}(?:[0-9a-f]{28})?\b", "<sha>", text)


@pytest.mark.slow
def test_real_tree_review_snapshot(tmp_path: Path) -> None:
    root = extract_real_tree(tmp_path)
    git(root, "checkout", "-q", "-b", "al-change")
    p = root / SCRIPT
    text = p.read_text()
    assert text.count("SGLANG_SIMULATE_ACC_LEN=3.39") == 1
    p.write_text(text.replace("SGLANG_SIMULATE_ACC_LEN=3.39", "SGLANG_SIMULATE_ACC_LEN=3.45"))
    with (root / "perf-changelog.yaml").open("a") as fh:
        fh.write(ENTRY)
    git(root, "commit", "-q", "-am", "qwen3.5 fp8 b300 agentic mtp: AL 3.45")
    env = {k: v for k, v in GIT_ENV.items() if not k.startswith(("GITHUB_", "GH_"))}
    with CPU() as cpu:
        proc = subprocess.run([sys.executable, "-m", "inferencex_tools", "review", "--base",
                               "main"], cwd=root, env=env, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr  # the AL and the TBD link are errors
    out = normalise(proc.stdout)
    # the facts the review must carry, whatever the snapshot says
    assert f"recipes touched: `{KEY}`" in out
    assert "`SGLANG_SIMULATE_ACC_LEN=3.45`" in out and "qwen3.5_mtp.yaml" in out
    # no --pr: the link is not suggested ('XXX' is CL502 in main mode too), it is said
    assert "PO403" in out and "pr-link: XXX" not in out and "PR number is not known" in out
    assert "throughput jobs in 3 arms" in out and "```mermaid" in out
    # the launches render with the job environment of the repository's workflows
    assert "launch not rendered" not in out
    if os.environ.get("IXTOOL_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(out)
    assert out == SNAPSHOT.read_text(), "snapshot differs (IXTOOL_UPDATE_SNAPSHOTS=1 updates)"
    assert cpu.seconds < 120, f"review took {cpu.seconds:.0f} CPU-s"
