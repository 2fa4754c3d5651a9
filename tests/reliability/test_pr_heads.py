"""The shadow bench of real PR heads (benchmarks/pr_heads.py, issue 33) on a fixed sample
of three heads of ``inferencex-pr-heads-upto-0714.bundle``: each replayed as CI judges
it (head checkout, ``--base`` the merge-base with main, ``--pr N``), its record holding
what the summary and the judgements need, a rerun resuming instead of replaying."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED
from tests.reliability.helpers import replay_harness

pytestmark = pytest.mark.slow

HEADS = SHARED / "corpus" / "inferencex-pr-heads-upto-0714.bundle"
MERGED_CLEAN = 2100  # two empty variables added to the multi-node template: passes
# a head the gate fails: its branch deleted two historical entries (CL401 x2). Was #1680,
# whose errors were a mid-file entry (CL403, a warning since the layout rules judge only
# what a change adds: c31889e) and runners.yaml findings its base had (D4c/D8, 3cd9da8)
MERGED_FAILING = 1999
UNMERGED = 1944  # never merged: no squash commit to compare with


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, Path, list[str]]:
    if not HEADS.is_file():
        pytest.skip(f"PR-heads bundle not found at {HEADS}")
    h = replay_harness("pr_heads")
    tmp = tmp_path_factory.mktemp("pr-heads")
    out, judged = tmp / "heads.jsonl", tmp / "judgements.json"
    argv = ["--workdir", str(tmp / "work"), "--out", str(out), "--judgements", str(judged),
            "--prs", str(MERGED_CLEAN), str(MERGED_FAILING), str(UNMERGED)]
    judged.write_text("{}")
    assert h.main(argv) == 0
    return h, out, judged, argv


def _records(out: Path) -> dict[int, dict[str, Any]]:
    lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    assert len(lines) == len({r["pr"] for r in lines}), "a head recorded twice"
    return {r["pr"]: r for r in lines}


def test_each_head_is_recorded_as_ci_judges_it(bench: tuple[Any, Path, Path, list[str]]
                                               ) -> None:
    _, out, _, _ = bench
    recs = _records(out)
    assert sorted(recs) == sorted((MERGED_CLEAN, MERGED_FAILING, UNMERGED))
    for r in recs.values():
        assert r["internal"] is None and r["exit"] in (0, 1), r
        assert r["verdict"] == ("pass" if r["exit"] == 0 else "fail")
        assert set(r["stages"]) >= {"plan", "changelog", "configs", "policy"}
        assert r["cpu"] > 0 and r["seconds"] > 0 and r["load"] >= 0
        assert len(r["sha"]) == 40 and len(r["base"]) == 40 and r["base"] != r["sha"]
        assert r["date"] <= r["pushed"]
        for f in r["findings"]:
            assert set(f) == {"rule", "severity", "file", "line", "message"} and f["rule"]
    clean, failing, open_ = recs[MERGED_CLEAN], recs[MERGED_FAILING], recs[UNMERGED]
    assert clean["exit"] == 0 and clean["merged"] and clean["main"]["same-change"]
    assert failing["exit"] == 1 and failing["merged"]
    assert [f for f in failing["findings"] if f["severity"] == "error"]
    assert failing["main"]["squash"] == failing["squash"] and failing["merged_on"]
    assert not open_["merged"] and open_["squash"] is None and open_["main"] is None


def test_summary_counts_judged_and_unjudged_errors(bench: tuple[Any, Path, Path, list[str]]
                                                   ) -> None:
    h, out, _, _ = bench
    recs = list(h.load(out).values())
    failing = next(r for r in recs if r.pr == MERGED_FAILING)
    errors = h.errors(failing)
    s = h.summary(recs, {})
    assert s["heads"] == 3 and s["merged"] == 2 and s["internal"] == {}
    assert s["merged-with-an-error"] == 1 and s["merged-with-an-error-%"] == 50.0
    assert len(s["merged-judged"]["unjudged"]) == len(errors)
    first = errors[0]
    j = {f"{MERGED_FAILING}/{first['rule']}/{first['file']}:{first['line']}":
         {"judged": "false", "class": "test", "why": "judged false by the test"}}
    s = h.summary(recs, j)
    assert s["merged-judged"]["heads-with-a-false-error"] == [MERGED_FAILING]
    assert s["merged-judged"]["false-by-class"]["test"]["heads"] == [MERGED_FAILING]
    same = [e for e in errors if (e["rule"], e["file"], e["line"])
            == (first["rule"], first["file"], first["line"])]
    assert s["merged-judged"]["false-errors"] == len(same)
    assert len(s["merged-judged"]["unjudged"]) == len(errors) - len(same)
    assert s["cpu-seconds"]["max"] >= s["cpu-seconds"]["median"] > 0
    assert "judged false by the test" in h.table(recs, j)


def test_a_rerun_resumes(bench: tuple[Any, Path, Path, list[str]]) -> None:
    h, out, _, argv = bench
    before = out.read_text()
    assert h.main(argv) == 0
    assert out.read_text() == before  # every head already there: nothing replayed
