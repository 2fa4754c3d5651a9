"""Data-driven cases (tests/cases/changelog): each through the pure core, some through the CLI."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from inferencex_tools.changelog import rules as R
from inferencex_tools.changelog.validate import Options, analyze_change, validate_standalone
from inferencex_tools.report.findings import RULES, Finding, Severity
from tests.changelog.casedata import LABEL, MASTER_FILE, Case, all_cases
from tests.changelog.clihelp import ixtool
from tests.conftest import TempRepo

CASES = all_cases()
CLI_CASES = [c for c in CASES if c.cli]


def _key(findings: list[tuple[str, int | None]]) -> list[tuple[str, int]]:
    return sorted((r, line if line is not None else 0) for r, line in findings)


def run_core(case: Case) -> list[Finding]:
    opts = Options(repo=case.repo, pr=case.pr, master_keys=case.master_keys)
    if case.base is None:
        return validate_standalone(case.head, LABEL, opts).findings
    return analyze_change(case.base, case.head, LABEL, opts).findings


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_core(case: Case) -> None:
    found = run_core(case)
    got = _key([(f.rule, f.line) for f in found])
    assert got == _key(case.findings), "\n".join(
        f"{f.rule} {f.severity.value} line {f.line}: {f.message}" for f in found
    )
    # every finding is complete: rule, severity, file, message and a fix hint
    for f in found:
        assert f.rule in RULES and f.file == LABEL and f.message and f.hint


def test_case_count_and_modes() -> None:
    modes = Counter(c.mode for c in CASES)
    assert len(CASES) >= 100
    assert modes["standalone"] >= 10 and modes["pr"] >= 50 and modes["main"] >= 8


def test_every_rule_has_positive_and_negative_case() -> None:
    positive = {r for c in CASES for r, _ in c.findings}
    negative = {r for c in CASES for r in c.expected.get("negative_for", [])}
    ours = {rid for rid, r in RULES.items()  # notes (CL702, --fix) are tested in test_fix
            if r.area == "changelog" and rid < "CL800" and r.severity is not Severity.NOTE}
    assert ours - positive == set(), "rules without a case where they fire"
    assert ours - negative == set(), "rules without a near-miss case"
    # a negative case really does not report the rule it is a near miss for
    for c in CASES:
        for rid in c.expected.get("negative_for", []):
            assert rid not in {r for r, _ in c.findings}, (c.name, rid)


def test_error_rules_are_errors_in_diff_mode() -> None:
    """Warnings only come from the documented warning rules (history quirks, CL603,
    invisible characters in prose, and the layout rules ``--fix`` repairs: issue 33 D7)."""
    warn_rules = {R.TRAILING_WS.id, R.SEPARATOR_STYLE.id, R.HISTORY_LINK.id, R.NO_CONFIGS.id,
                  R.TRAILING_BLANK.id, R.LINK_FOLDED.id, R.INVISIBLE_TEXT.id,
                  R.INSERTED.id, R.SEPARATOR_BEFORE.id, R.SEPARATOR_BETWEEN.id,
                  R.HISTORY_BLANKS.id, R.BASE_INVALID.id}
    for c in CASES:
        for f in run_core(c):
            if f.severity is Severity.WARNING:
                assert f.rule in warn_rules, (c.name, f.rule)


# ------------------------------------------------------------------------- the CLI


def make_case_repo(temp_repo: TempRepo, case: Case) -> None:
    """main: base + master configs committed; working tree: the head bytes on branch 'pr'."""
    assert case.base is not None
    if case.master_keys is not None and "master_keys" not in case.expected:
        temp_repo.write("configs/nvidia-master.yaml", MASTER_FILE.read_bytes())
    temp_repo.write("README", "test\n")
    if case.base:
        temp_repo.write(LABEL, case.base)
    temp_repo.commit("base")
    temp_repo.git("checkout", "-q", "-b", "pr")
    temp_repo.write(LABEL, case.head)


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.name for c in CLI_CASES])
def test_case_cli(case: Case, temp_repo: TempRepo) -> None:
    make_case_repo(temp_repo, case)
    args = ["changelog", "validate", "--base", "main", "--repo", case.repo, "--format", "json"]
    if case.pr is not None:
        args += ["--pr", str(case.pr)]
    p = ixtool(temp_repo.path, *args)
    assert "Traceback" not in p.stderr
    doc = json.loads(p.stdout)
    got = _key([(f["rule"], f["line"]) for f in doc["findings"]])
    assert got == _key(case.findings)
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert p.returncode == (1 if errors else 0)
    assert doc["info"]["mode"] == ("pr" if case.pr is not None else "diff")


def test_cli_cases_cover_both_outcomes() -> None:
    assert any(not c.findings for c in CLI_CASES)
    assert sum(1 for c in CLI_CASES if c.findings) >= 8
