"""``ixtool ci gate`` decides on the findings as the repository adopts them: a rule the
repository disables (``.ixtool.toml``) or a finding known in its baseline does not turn
the gate's ``$GITHUB_OUTPUT`` decisions red (gate, errors, sweep, shards).  The
repository's settings are those of the base revision (the PR's own never count:
tests/ci/test_gate_trust.py), so each test commits them on the base first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TempRepo, copy_corpus

ENTRY = """
- config-keys:
    - dsr1-fp8-h200-sglang
  description:
    - "Re-run the DSR1 H200 recipe."
  pr-link: TBD
"""


@pytest.fixture
def pr_repo(temp_repo: TempRepo, corpus: Path) -> tuple[TempRepo, str, str]:
    """The real configs and changelog (base) and a PR appending an entry whose pr-link
    is a placeholder (head): an error finding of the changelog stage."""
    copy_corpus(corpus, temp_repo.path)
    base = temp_repo.commit("base")
    with (temp_repo.path / "perf-changelog.yaml").open("a") as fh:
        fh.write(ENTRY)
    head = temp_repo.commit("Re-run DSR1 on H200")
    return temp_repo, base, head


def _gate(repo: TempRepo, base: str, head: str, tmp: Path) -> tuple[int, dict[str, str],
                                                                      dict[str, Any]]:
    out = tmp / "github_output"
    out.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["GITHUB_OUTPUT"] = str(out)
    proc = subprocess.run(
        [sys.executable, "-m", "inferencex_tools", "ci", "gate", "--base", base, "--head", head,
         "--label", "sweep-enabled", "--no-policy", "--priority", "none", "--format", "json"],
        cwd=repo.path, env=env, capture_output=True, text=True, timeout=300)
    pairs: dict[str, str] = {}
    lines = out.read_text().splitlines()
    i = 0
    while i < len(lines):  # NAME=value or NAME<<DELIM … DELIM
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            pairs[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        name, _, value = line.partition("=")
        pairs[name] = value
        i += 1
    doc = json.loads(proc.stdout) if proc.stdout.startswith("{") else {}
    return proc.returncode, pairs, doc


def _on_the_base(repo: TempRepo, base: str, head: str, rel: str, text: str
                 ) -> tuple[str, str]:
    """The maintainers commit ``rel`` on the base; the PR is rebased onto it."""
    repo.git("checkout", "-q", "--detach", base)
    repo.write(rel, text)
    new_base = repo.commit("adopt ixtool")
    repo.git("cherry-pick", head)
    return new_base, repo.git("rev-parse", "HEAD").strip()


def _rules(doc: dict[str, Any]) -> list[str]:
    return sorted(f["rule"] for f in doc.get("findings", []) if f["severity"] == "error")


def test_disabled_rule_does_not_fail_the_gate_outputs(
        pr_repo: tuple[TempRepo, str, str], tmp_path: Path) -> None:
    repo, base, head = pr_repo
    rc, out, doc = _gate(repo, base, head, tmp_path)
    rules = _rules(doc)
    assert rc == 1 and rules, doc
    assert (out["gate"], out["sweep"], out["jobs"]) == ("fail", "false", "0")
    assert out["errors"] == str(len(rules))
    # the repository disables the rule(s): the outputs are the clean gate's
    base, head = _on_the_base(repo, base, head, ".ixtool.toml", "disable = ["
                              + ", ".join(f'"{r}"' for r in set(rules)) + "]\n")
    rc, out, doc = _gate(repo, base, head, tmp_path)
    assert rc == 0 and _rules(doc) == [], doc
    assert (out["gate"], out["sweep"], out["errors"]) == ("pass", "true", "0")
    assert int(out["jobs"]) > 0 and json.loads(out["shard-1"])


def test_baselined_finding_does_not_fail_the_gate_outputs(
        pr_repo: tuple[TempRepo, str, str], tmp_path: Path) -> None:
    repo, base, head = pr_repo
    rc, _, doc = _gate(repo, base, head, tmp_path)
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert rc == 1 and errors
    baseline = {"version": 1, "tool": "ixtool", "findings": [
        {"command": "ci gate", "rule": f["rule"], "file": f["file"],
         "identity": f["message"]} for f in doc["findings"]]}
    base, head = _on_the_base(repo, base, head, ".ixtool-baseline.json", json.dumps(baseline))
    rc, out, doc = _gate(repo, base, head, tmp_path)
    assert rc == 0 and _rules(doc) == [], doc
    assert (out["gate"], out["sweep"], out["errors"]) == ("pass", "true", "0")
