"""One "new vs already there" rule for config findings: ``ci gate``, ``config validate
--base`` and ``review`` report the same findings as the change's, on the real tree.

The PR touches a block that already has a finding (SW401: a runner label runners.yaml
does not list), leaves runners.yaml (SW406×2) alone, and moves a recipe to a runner
label runners.yaml does not list: the findings of that label, and only those, are the
PR's for all three.  A second PR deletes a benchmark script a block it does not touch
uses: the SW403 it causes is new for all three.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GIT_ENV, clone_real_tree, git

TOUCHED_OLD = "dsv4-fp4-gb300-dynamo-vllm"  # SW401 'gb300-nv' at the base already
NEW_KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
DELETED = "benchmarks/single_node/agentic/minimaxm3_fp8_h100_mtp.sh"  # another key's script


def _ixtool(root: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in GIT_ENV.items() if not k.startswith(("GITHUB_", "GH_"))}
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", *args, "--format", "json"],
                       cwd=root, env=env, capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    return doc


def _config_findings(findings: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return sorted((f["rule"], f["file"], f["message"]) for f in findings
                  if f["rule"].startswith("SW"))


def _three(root: Path) -> tuple[list[Any], list[Any], list[Any], dict[str, Any]]:
    gate = _ixtool(root, "ci", "gate", "--base", "main", "--pr", "7", "--no-policy")
    validate = _ixtool(root, "config", "validate", "--base", "main")
    review = _ixtool(root, "review", "--base", "main", "--pr", "7",
                     "--repo", "SemiAnalysisAI/InferenceX")
    return (_config_findings(gate["findings"]), _config_findings(validate["findings"]),
            _config_findings(review["findings"]), review)


@pytest.fixture
def tree(real_tree: Path, tmp_path: Path) -> Path:
    root = clone_real_tree(real_tree, tmp_path / "tree")
    git(root, "checkout", "-q", "-b", "pr")
    return root


def test_gate_validate_and_review_agree_on_what_a_pr_adds(tree: Path) -> None:
    master = tree / "configs" / "nvidia-master.yaml"
    text = master.read_text()
    text = text.replace(f"\n{TOUCHED_OLD}:\n", f"\n{TOUCHED_OLD}:\n  # reviewed\n", 1)
    at = text.index(f"\n{NEW_KEY}:\n")
    block_end = text.index("\n\n", at)
    block = text[at:block_end].replace("runner: cluster:h200-dgxc", "runner: cluster:h200-new")
    master.write_text(text[:at] + block + text[block_end:])
    git(tree, "commit", "-qam", "a reviewed block, a runner label not listed")

    gate, validate, review, doc = _three(tree)
    # the label's own findings: not listed (SW401), no hardware for its agentic arm (SW314)
    assert {r for r, _, _ in gate} == {"SW401", "SW314"}, gate
    assert all("h200-new" in m for _, _, m in gate), gate
    assert validate == gate and review == gate
    # what the review lists as already there is the gate's own split, not another rule
    old = _config_findings(doc["preexisting-findings"])
    assert any(r == "SW401" and TOUCHED_OLD in m for r, _, m in old), old
    assert sum(1 for r, _, _ in old if r == "SW406") == 2, old


@pytest.mark.slow  # three commands on the real tree again (~40 CPU-s)
def test_a_deleted_script_is_new_for_all_three(tree: Path) -> None:
    git(tree, "rm", "-q", DELETED)
    git(tree, "commit", "-qm", "drop a script another recipe uses")
    gate, validate, review, _ = _three(tree)
    assert [r for r, _, _ in gate] == ["SW403"], gate
    assert validate == gate and review == gate
