"""The base that judges a PR is its base revision, not a fork point the PR chooses
(held-out variants of issue 27, item 2).

A PR author picks where the branch forks from main: any earlier main commit.  When the
settings, the golden curves and the runner allow-list were read at the merge-base, a
branch forked before the maintainers tightened them was judged by the old ones: a
``disable = ["PO403"]`` main had since removed, a curve main had since corrected, a
runner label main had since taken off ``runners.yaml``.  What applies is the base
revision itself (``--base``, the event's base SHA); what the PR *changed* is still
measured from the merge-base (CI601/PO109 name only the PR's own edits).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ci.test_gate_trust import CURVE, ENTRY, KEY, RUNNERS, _at, _gate, _pr
from tests.policy.test_check import SEED

Edit = Callable[[Path], None]


def _write(rel: str, text: str) -> Edit:
    def edit(path: Path) -> None:
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    return edit


def _curve(old: str, new: str) -> Edit:
    def edit(path: Path) -> None:
        text = (path / CURVE).read_text()
        assert old in text
        (path / CURVE).write_text(text.replace(old, new, 1))
    return edit


def _remove(rel: str) -> Edit:
    return lambda path: (path / rel).unlink()


RENAMED = RUNNERS.replace("cluster:h200-dgxc:", "cluster:h200-dgxc-v2:")

# name → (the fork point's lenient state, main's later tightening, the PR pins AL 3.60,
# what the gate must find)
CASES: dict[str, tuple[Edit, Edit, bool, str]] = {
    "settings main removed": (_write(".ixtool.toml", 'disable = ["PO403"]\n'),
                              _remove(".ixtool.toml"), True, "PO403"),
    "baseline main removed": (_write(".ixtool-baseline.json", "@PO403"),
                              _remove(".ixtool-baseline.json"), True, "PO403"),
    "curve main corrected": (_curve("    3: 2.83\n", "    3: 3.60\n"),
                             _curve("    3: 3.60\n", "    3: 2.83\n"), True, "PO403"),
    "runner label main retired": (lambda p: None, _write("configs/runners.yaml", RENAMED),
                                  False, "CI402"),
}


def _history(path: Path, corpus: Path, lenient: Edit, tighten: Edit, pin: bool,
             identity: str) -> tuple[str, str]:
    """(main's tip, the PR's head): main = base → fork point (lenient) → tightened; the
    PR forks at the lenient commit and changes a recipe (AL 3.60 when ``pin``) with its
    changelog entry."""
    base, head = _pr(path, corpus, {})
    repo = _at(path)
    repo.git("checkout", "-q", base)
    lenient(path)
    baseline = path / ".ixtool-baseline.json"
    if baseline.is_file() and baseline.read_text() == "@PO403":
        baseline.write_text(json.dumps({"version": 1, "tool": "ixtool", "findings": [
            {"command": "ci gate", "rule": "PO403", "file": SEED, "identity": identity}]}))
    fork = repo.commit("fork point")
    repo.git("checkout", "-q", "-b", "pr")
    if pin:
        repo.git("checkout", "-q", head, "--", SEED, "perf-changelog.yaml")
    else:
        with (path / "perf-changelog.yaml").open("a") as fh:
            fh.write("\n" + ENTRY.format(key=KEY, text="Rerun.", link="XXX"))
    pr_head = repo.commit("the PR")
    repo.git("checkout", "-q", "-b", "trunk", fork)
    tighten(path)
    tip = repo.commit("main tightens")
    repo.git("checkout", "-q", pr_head)
    return tip, pr_head


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> str:
    from tests.ci.test_gate_trust import _identity

    path = tmp_path_factory.mktemp("id") / "repo"
    base, head = _pr(path, corpus, {})
    return _identity(_gate(path, "base", base, head)[2])


@pytest.mark.parametrize("mode", ["base", "event"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_fork_point_does_not_choose_the_judge(tmp_path: Path, corpus: Path, identity: str,
                                                case: str, mode: str) -> None:
    lenient, tighten, pin, rule = CASES[case]
    path = tmp_path / "repo"
    tip, head = _history(path, corpus, lenient, tighten, pin, identity)
    rc, outputs, doc = _gate(path, mode, tip, head)
    errors = sorted({f["rule"] for f in doc["findings"] if f["severity"] == "error"})
    assert rc == 1 and outputs["gate"] == "fail" and outputs["sweep"] == "false", (case, errors)
    assert errors == [rule], doc["findings"]
    # the PR edited none of these: nothing is named as its change
    assert not [f for f in doc["findings"] if f["rule"] in ("CI601", "PO109")], doc["findings"]


def test_the_pr_s_own_change_is_still_named_against_its_fork_point(
        tmp_path: Path, corpus: Path, identity: str) -> None:
    """Main changed the settings after the fork; the PR edits them too: CI601 names the
    PR's edit (against the fork point), and main's settings apply."""
    path = tmp_path / "repo"
    tip, head = _history(path, corpus, _write(".ixtool.toml", 'disable = ["CL"]\n'),
                         _write(".ixtool.toml", 'disable = ["SW"]\n'), True, identity)
    repo = _at(path)
    repo.git("checkout", "-q", "pr")
    (path / ".ixtool.toml").write_text('disable = ["CL", "PO"]\n')
    head = repo.commit("the PR disables PO too")
    rc, _, doc = _gate(path, "event", tip, head)
    ci601 = [f for f in doc["findings"] if f["rule"] == "CI601"]
    assert rc == 1 and len(ci601) == 1 and "disable adds PO" in ci601[0]["message"], ci601
    assert tip[:12] in ci601[0]["message"]
    assert "PO403" in {f["rule"] for f in doc["findings"] if f["severity"] == "error"}
