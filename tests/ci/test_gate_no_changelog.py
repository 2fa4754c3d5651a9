"""A repository without a changelog (an old head of the real one, or a repository that has
not adopted it): a PR that touches none is not failed for it (CI502, a warning, and an empty
sweep); a PR that deletes the changelog the base has still fails (CI501)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import GIT_ENV, TempRepo

MASTER = "a-key:\n  image: x\n  model-prefix: a\n"
FILES = {"configs/x-master.yaml": MASTER, "configs/runners.yaml": "labels: {}\n",
         "runners/launch_h100.sh": "echo\n", "benchmarks/a.sh": "echo a\n"}


def _gate(root: Path) -> tuple[int, dict[str, Any]]:
    env = {k: v for k, v in GIT_ENV.items() if not k.startswith(("GITHUB_", "GH_"))}
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "gate", "--base",
                        "HEAD~1", "--pr", "7", "--no-policy", "--format", "json"],
                       cwd=root, env=env, capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


def _pr(temp_repo: TempRepo, base: dict[str, str], edits: dict[str, str | None]) -> Path:
    for rel, text in base.items():
        temp_repo.write(rel, text)
    temp_repo.commit("base")
    for rel, edit in edits.items():
        if edit is None:
            temp_repo.git("rm", "-q", rel)
        else:
            temp_repo.write(rel, edit)
    temp_repo.commit("the change")
    return temp_repo.path


def test_no_changelog_at_either_side_is_a_warning(temp_repo: TempRepo) -> None:
    code, doc = _gate(_pr(temp_repo, FILES, {"benchmarks/a.sh": "echo b\n"}))
    rules = [(f["rule"], f["severity"]) for f in doc["findings"]]
    assert code == 0 and rules == [("CI502", "warning")], doc["findings"]
    assert "perf-changelog.yaml exists at neither the base" in doc["findings"][0]["message"]
    assert doc["info"]["outputs"]["gate"] == "pass"
    assert doc["info"]["stages"]["matrix"] in ("ok", "skipped"), doc["info"]["stages"]


def test_a_deleted_changelog_still_fails(temp_repo: TempRepo) -> None:
    code, doc = _gate(_pr(temp_repo, {**FILES, "perf-changelog.yaml": "[]\n"},
                          {"perf-changelog.yaml": None}))
    rules = [f["rule"] for f in doc["findings"] if f["severity"] == "error"]
    assert code == 1 and rules == ["CI501"], doc["findings"]
    assert "does not exist at" in doc["findings"][0]["message"]
