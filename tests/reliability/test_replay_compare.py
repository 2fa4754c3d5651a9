"""benchmarks/replay_prs.py --review: how a review's gate section is compared with the
gate's own report (fast, on hand-made reports; the slow test replays real PRs)."""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.helpers import replay_harness

H: Any = replay_harness()
PO = {"rule": "PO301", "severity": "error", "file": "configs/a.yaml", "line": 3,
      "message": "trace exit status 1"}
CL = {"rule": "CL403", "severity": "warning", "file": "perf-changelog.yaml", "line": 9,
      "message": "x"}
STAGES = {"plan": "ok", "policy": "1 finding(s)"}


def _review(verdict: str, code: int, findings: list[dict[str, Any]]) -> dict[str, Any]:
    return {"verdict": verdict, "findings": findings,
            "gate": {"exit-code": code, "stages": dict(STAGES), "findings": findings}}


def _gate(code: int, findings: list[dict[str, Any]]) -> Any:
    return H.Replay(pr=1, sha="0" * 40, date="2026-07-02", exit=code, seconds=1.0,
                    stages=dict(STAGES), findings=findings)


def _edit(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    here = out
    for k in path[:-1]:
        here = here[k]
    here[path[-1]] = value
    return out


SAME = _review("fail", 1, [PO, CL])
CASES = [  # (review doc, review exit, what the comparison must name; None: agrees)
    (SAME, 1, None),
    (_edit(SAME, ("gate", "findings"), [CL, {**PO, "message": "reworded"}]), 1, None),
    (_edit(SAME, ("verdict",), "pass"), 1, "verdict"),
    (SAME, 0, "exit: review 0, gate 1"),
    (_edit(SAME, ("gate", "exit-code"), 0), 1, "gate exit-code"),
    (_edit(SAME, ("gate", "stages"), {"plan": "ok", "policy": "skipped"}), 1, "stages"),
    (_edit(SAME, ("gate", "findings"), [CL]), 1, "1 finding(s) only in gate: PO301/error"),
    (_edit(SAME, ("gate", "findings"), [PO, CL, {**CL, "line": 10}]), 1,
     "1 finding(s) only in review: CL403/warning perf-changelog.yaml:10"),
    (_edit(SAME, ("gate", "findings"), [{**PO, "severity": "warning"}, CL]), 1,
     "only in review: PO301/warning"),
    (_edit(SAME, ("gate", "findings"), [PO, CL, {**CL, "line": 10, "message": "said why"}]),
     1, "perf-changelog.yaml:10 (said why)"),  # a finding on one side shows its message
    ({"verdict": "fail"}, 1, "review has no gate section"),
]


@pytest.mark.parametrize("doc,code,named", CASES)
def test_review_gate_section_against_the_gate(doc: dict[str, Any], code: int,
                                              named: str | None) -> None:
    found = H.compare_review(_gate(1, [PO, CL]), code, doc)
    if named is None:
        assert found == []
    else:
        assert any(named in why for why in found), found


def test_the_table_lists_a_repeated_finding_once_with_its_count() -> None:
    rep = _gate(1, [PO, PO, CL])
    rep.tool_failures = [PO, PO, {**PO, "message": "another"}]
    rows = H.table([rep], {"1/PO301": "true"}).splitlines()[2:]
    assert rows == ["| #1 | 2026-07-02 | PO301 | (2×) trace exit status 1 | true |",
                    "| #1 | 2026-07-02 | PO301 | another | true |"]


def test_a_measured_run_counts_the_cpu_of_its_grandchildren(tmp_path: Path) -> None:
    """run_measured takes CPU from wait4: a shell's child that burns CPU is counted (the
    gate's traces run in its grandchildren), whatever else the harness runs."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    run = H.run_measured(["sh", "-c", f'"{sys.executable}" -c "$0"; echo done', burn],
                         tmp_path, dict(os.environ), 120.0)
    assert run.code == 0 and run.out == "done\n"
    assert run.cpu >= 0.25, run.cpu
