"""The difference rule of ``policy check --base`` and ``ci gate`` (issue 32 item 2, issue 33
D4): an error the full check of the base reports in the same row is not the change's —
it is reported as already on main (a note), and only new errors fail.

Real temporary git repositories: the seed recipe with a wrong forced AL at the base (a
standing PO403), then a pull request that touches that row (a comment line in the recipe,
its config block) keeps it standing, and one that changes the AL again is a new error."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.policy.service import CheckRequest, run_check
from inferencex_tools.sandbox.trace import namespaces_available
from tests.ci.test_gate_trust import ENTRY, _gate
from tests.conftest import ROOT, TempRepo
from tests.policy.test_check import KEY, SEED, seed_repo

pytestmark = pytest.mark.skipif(not namespaces_available(),
                                reason="user namespaces unavailable")


def _repo(tmp: Path, corpus: Path, al: str) -> tuple[TempRepo, str]:
    path = tmp / "repo"
    path.mkdir()
    repo = TempRepo(path)
    seed_repo(path, ("GOLDEN_AL=2.83", f"GOLDEN_AL={al}"))
    shutil.copytree(corpus / "golden_al_distribution", path / "golden_al_distribution")
    shutil.copyfile(ROOT / "golden_al_distribution" / "registry.yaml",
                    path / "golden_al_distribution" / "registry.yaml")
    repo.write("perf-changelog.yaml", ENTRY.format(
        key=KEY, text="First.", link="https://github.com/SemiAnalysisAI/InferenceX/pull/1"))
    return repo, repo.commit("base: the recipe forces AL 3.60 (standing)")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _check(repo: TempRepo, base: str, head: str) -> list[tuple[str, str, str]]:
    res = run_check(CheckRequest(root=repo.path, base=base, head=head, timeout=60))
    return [(f.rule, f.severity.value, f.message) for f in res.findings
            if f.rule != "PO305"]


def _errors(found: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [f for f in found if f[1] == "error"]


EDITS: dict[str, tuple[str, str, str]] = {
    "a line of the recipe": (SEED, "set -euo pipefail\n", "set -euo pipefail\nexport TIDIER=1\n"),
    "the key's config block": ("configs/nvidia-master.yaml", "dram-utilization: 0.80",
                               "dram-utilization: 0.75"),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_standing_error_of_a_touched_row_is_already_on_main(tmp_path: Path, corpus: Path,
                                                              edit: str) -> None:
    repo, base = _repo(tmp_path, corpus, "3.60")
    rel, old, new = EDITS[edit]
    _edit(repo.path / rel, old, new)
    head = repo.commit(f"touch {edit}")
    found = _check(repo, base, head)
    assert not _errors(found), found
    notes = [f for f in found if f[0] == "PO403"]
    assert notes and all(f[1] == "note" and "already on main" in f[2] for f in notes), found


def test_a_new_error_in_a_row_with_a_standing_one_is_the_change_s(tmp_path: Path,
                                                                  corpus: Path) -> None:
    repo, base = _repo(tmp_path, corpus, "3.60")
    _edit(repo.path / SEED, "GOLDEN_AL=3.60", "GOLDEN_AL=3.40")
    head = repo.commit("another wrong AL")
    errors = _errors(_check(repo, base, head))
    assert any(r == "PO403" and "3.4" in m for r, _, m in errors), errors


def test_an_error_the_base_does_not_have_fails(tmp_path: Path, corpus: Path) -> None:
    repo, base = _repo(tmp_path, corpus, "2.83")
    _edit(repo.path / SEED, "GOLDEN_AL=2.83", "GOLDEN_AL=3.60")
    head = repo.commit("a wrong AL")
    errors = _errors(_check(repo, base, head))
    assert any(r == "PO403" and "3.6" in m for r, _, m in errors), errors


def test_the_gate_passes_a_pr_that_leaves_a_standing_error_alone(tmp_path: Path,
                                                                 corpus: Path) -> None:
    repo, base = _repo(tmp_path, corpus, "3.60")
    _edit(repo.path / SEED, "set -euo pipefail\n", "set -euo pipefail\nexport TIDIER=1\n")
    with (repo.path / "perf-changelog.yaml").open("a") as fh:
        fh.write("\n" + ENTRY.format(key=KEY, text="Tidier recipe.", link="XXX"))
    head = repo.commit("tidier recipe")
    rc, outputs, doc = _gate(repo.path, "base", base, head)
    findings: list[dict[str, Any]] = doc["findings"]
    assert rc == 0 and outputs["gate"] == "pass", findings
    assert any(f["rule"] == "PO403" and f["severity"] == "note" for f in findings), findings
