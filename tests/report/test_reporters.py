"""Exact output of the reporters (text, json, github, job summary, sarif) and of emit()."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferencex_tools import __version__
from inferencex_tools.changelog import rules as R
from inferencex_tools.cli.common import Format, emit
from inferencex_tools.report.findings import Result
from inferencex_tools.report.reporters import render, render_markdown_summary

F = "perf-changelog.yaml"
SOURCE = "- config-keys:\n    - a\tb  \n  pr-link: TBD\n"


def sample() -> Result:
    r = Result(command="changelog validate")
    r.extend([
        R.LINK_PR.at(F, 3, 3, "entry 1 [a] (TBD): pr-link 'TBD' is a placeholder"),
        R.TRAILING_WS.at(F, 2, 9, "trailing whitespace"),
        R.NO_CONFIGS.at(F, None, None, "no master configs found"),
        R.TAB.at(F, 2, 5, "TAB 100% a,b:c | x"),
    ])
    r.checked.append(f"{F} (main..working tree)")
    r.info.update(mode="pr", pr=12, sources={F: SOURCE})
    return r


def clean() -> Result:
    r = Result(command="changelog validate")
    r.checked.append(F)
    r.info.update(mode="standalone", sources={F: ""})
    return r


TEXT = """\
perf-changelog.yaml: warning [CL603] no master configs found
    hint: pass --configs or run from the repository root
perf-changelog.yaml:2:5: error [CL103] TAB 100% a,b:c | x
        2 |     - a→b  
          |     ^
    hint: replace tabs with spaces
perf-changelog.yaml:2:9: warning [CL301] trailing whitespace
        2 |     - a→b  
          |         ^
    hint: strip trailing whitespace (new entries only; history is immutable)
perf-changelog.yaml:3:3: error [CL502] entry 1 [a] (TBD): pr-link 'TBD' is a placeholder
        3 |   pr-link: TBD
          |   ^
    hint: write 'pr-link: XXX' (replaced by the PR URL at merge) or this PR's URL
changelog validate: FAILED: 2 errors, 2 warnings (CL103, CL301, CL502, CL603) in perf-changelog.yaml (main..working tree)
"""  # noqa: W291, E501  (the source line shown has trailing spaces)

GITHUB = """\
::warning file=perf-changelog.yaml,title=CL603::no master configs found%0Ahint: pass --configs or run from the repository root
::error file=perf-changelog.yaml,line=2,col=5,title=CL103::TAB 100%25 a,b:c | x%0Ahint: replace tabs with spaces
::warning file=perf-changelog.yaml,line=2,col=9,title=CL301::trailing whitespace%0Ahint: strip trailing whitespace (new entries only; history is immutable)
::error file=perf-changelog.yaml,line=3,col=3,title=CL502::entry 1 [a] (TBD): pr-link 'TBD' is a placeholder%0Ahint: write 'pr-link: XXX' (replaced by the PR URL at merge) or this PR's URL
changelog validate: 2 errors, 2 warnings (CL103, CL301, CL502, CL603)
"""  # noqa: E501

SUMMARY = """\
### ❌ `ixtool changelog validate`: 2 errors, 2 warnings (CL103, CL301, CL502, CL603)

| severity | rule | location | message | fix |
|---|---|---|---|---|
| warning | `CL603` | `perf-changelog.yaml` | no master configs found | pass --configs or run from the repository root |
| error | `CL103` | `perf-changelog.yaml:2:5` | TAB 100% a,b:c \\| x | replace tabs with spaces |
| warning | `CL301` | `perf-changelog.yaml:2:9` | trailing whitespace | strip trailing whitespace (new entries only; history is immutable) |
| error | `CL502` | `perf-changelog.yaml:3:3` | entry 1 \\[a\\] (TBD): pr-link 'TBD' is a placeholder | write 'pr-link: XXX' (replaced by the PR URL at merge) or this PR's URL |
"""  # noqa: E501


def test_text_exact() -> None:
    assert render(sample(), "text") == TEXT


def test_text_clean_and_color() -> None:
    assert render(clean(), "text") == (
        "changelog validate: ok: 0 errors, 0 warnings in perf-changelog.yaml\n")
    colored = render(sample(), "text", color=True)
    assert "\x1b[31;1merror\x1b[0m" in colored and "\x1b[33;1mwarning\x1b[0m" in colored


def test_json_exact() -> None:
    doc = json.loads(render(sample(), "json"))
    assert doc == {
        "schema_version": 1,
        "tool": "ixtool",
        "tool_version": __version__,
        "command": "changelog validate",
        "ok": False,
        "strict": False,
        "summary": {"errors": 2, "warnings": 2, "notes": 0},
        "checked": ["perf-changelog.yaml (main..working tree)"],
        "fixes": [],
        "info": {"mode": "pr", "pr": 12},  # 'sources' (file texts) never leak into JSON
        "findings": [
            {"rule": "CL603", "severity": "warning", "file": F, "line": None, "column": None,
             "message": "no master configs found",
             "hint": "pass --configs or run from the repository root"},
            {"rule": "CL103", "severity": "error", "file": F, "line": 2, "column": 5,
             "message": "TAB 100% a,b:c | x", "hint": "replace tabs with spaces"},
            {"rule": "CL301", "severity": "warning", "file": F, "line": 2, "column": 9,
             "message": "trailing whitespace",
             "hint": "strip trailing whitespace (new entries only; history is immutable)"},
            {"rule": "CL502", "severity": "error", "file": F, "line": 3, "column": 3,
             "message": "entry 1 [a] (TBD): pr-link 'TBD' is a placeholder",
             "hint": "write 'pr-link: XXX' (replaced by the PR URL at merge) or this PR's URL"},
        ],
    }
    # stable key order, two-space indent, trailing newline
    text = render(sample(), "json")
    assert text.startswith('{\n  "schema_version": 1,\n  "tool": "ixtool",')
    assert text.endswith("}\n")


def test_json_finding_data_is_included() -> None:
    r = Result(command="c")
    r.add(R.LINK_PR.at(F, 1, 3, "m", data={"fixable": True}))
    assert json.loads(render(r, "json"))["findings"][0]["data"] == {"fixable": True}


def test_github_exact() -> None:
    assert render(sample(), "github") == GITHUB


def test_github_escapes_properties_and_newlines() -> None:
    r = Result(command="c")
    r.add(R.TAB.at("dir,1/a:b.yaml", 1, 1, "two\nlines\r"))
    line = render(r, "github").splitlines()[0]
    assert line.startswith("::error file=dir%2C1/a%3Ab.yaml,line=1,col=1,title=CL103::")
    assert "two%0Alines%0D%0Ahint:" in line


def test_markdown_summary_exact() -> None:
    assert render_markdown_summary(sample()) == SUMMARY
    assert render_markdown_summary(clean()) == (
        "### ✅ `ixtool changelog validate`: 0 errors, 0 warnings\n\nNo findings.\n")


def test_markdown_summary_lists_fixes() -> None:
    r = clean()
    r.fixes.append("entry 3: pr-link → XXX")
    assert render_markdown_summary(r).endswith("\nFixes applied:\n- entry 3: pr-link → XXX\n")


def test_sarif_shape() -> None:
    doc = json.loads(render(sample(), "sarif"))
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["CL103", "CL301", "CL502",
                                                                   "CL603"]
    res = run["results"]
    assert [r["ruleId"] for r in res] == ["CL603", "CL103", "CL301", "CL502"]
    assert res[1]["locations"][0]["physicalLocation"]["region"] == {"startLine": 2,
                                                                    "startColumn": 5}
    assert "region" not in res[0]["locations"][0]["physicalLocation"]


def test_unknown_format_is_a_usage_error() -> None:
    from inferencex_tools.errors import UsageError

    with pytest.raises(UsageError):
        render(sample(), "xml")


def test_emit_writes_step_summary_for_github_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("previous step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert emit(sample(), Format.github) == 1
    assert capsys.readouterr().out == GITHUB
    assert summary.read_text(encoding="utf-8") == "previous step\n" + SUMMARY  # appended
    assert emit(sample(), Format.text) == 1
    assert summary.read_text(encoding="utf-8") == "previous step\n" + SUMMARY  # untouched
    assert emit(clean(), Format.json) == 0


def test_emit_strict_and_unwritable_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    r = Result(command="c")
    r.add(R.TRAILING_WS.at(F, 1, 1, "w"))
    assert emit(r, Format.json) == 0
    assert emit(r, Format.json, strict=True) == 1
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing-dir" / "s.md"))
    assert emit(r, Format.github) == 0
    assert "cannot write $GITHUB_STEP_SUMMARY" in capsys.readouterr().err
