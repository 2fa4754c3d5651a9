"""docs/changelog.md stays true to the code: every rule with its severity, the options."""

from __future__ import annotations

import re
from pathlib import Path

from inferencex_tools.changelog import rules as _rules  # noqa: F401  (registers the rules)
from inferencex_tools.report.findings import RULES

DOC = Path(__file__).resolve().parents[2] / "docs" / "changelog.md"


def test_every_rule_is_documented_with_its_severity() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(CL\d{3})` \| (\w+) \|", text, re.M))
    ours = {rid: r for rid, r in RULES.items() if r.area == "changelog" and rid < "CL800"}
    assert set(rows) == set(ours)
    for rid, r in ours.items():
        assert rows[rid] == r.severity.value, rid


def test_options_are_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for opt in ("--base", "--head", "--pr", "--repo", "--configs", "--fix", "--strict",
                "--format", "--traceback"):
        assert f"`{opt}" in text, opt


def test_history_figures_match_the_test() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "| all (2025-12-15 → 2026-08-22) | 831 | 472 | **359 (43.2 %)** |" in text
    assert "| since 2026-06-19 (after #1853) | 278 | 183 | 95 (34.2 %) |" in text
    assert "| 2026-08 | 107 | 77 | 30 |" in text
