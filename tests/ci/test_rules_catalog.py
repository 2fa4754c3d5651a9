"""``ixtool rules``: the catalog from the code; docs/rules.md must match it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from inferencex_tools.report.catalog import REGENERATE, render_markdown
from inferencex_tools.report.findings import all_rules

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_docs_rules_md_is_current() -> None:
    want = render_markdown(all_rules())
    have = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert have == want, (
        f"docs/rules.md is stale (rules were added or changed); regenerate it with:\n"
        f"    {REGENERATE}"
    )


def test_every_rule_is_complete_and_ids_are_well_formed() -> None:
    rules = all_rules()
    assert any(r.id.startswith("CI") for r in rules)
    for r in rules:
        assert r.id[:2].isalpha() and r.id[:2].isupper(), r
        assert r.id[2:].isdigit(), r
        assert r.summary.strip() and r.fix.strip() and r.area, r


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inferencex_tools", "rules", *args],
                          capture_output=True, text=True, check=False, timeout=60)


def test_cli_formats() -> None:
    md = run("--format", "markdown")
    assert md.returncode == 0 and md.stdout == render_markdown(all_rules())
    js = run("--format", "json")
    data = json.loads(js.stdout)
    assert {r["id"] for r in data["rules"]} == {r.id for r in all_rules()}
    txt = run("--area", "ci")
    assert txt.returncode == 0 and "CI101" in txt.stdout and "CL101" not in txt.stdout
    bad = run("--area", "nope")
    assert bad.returncode == 2 and "no rules in area" in bad.stderr
