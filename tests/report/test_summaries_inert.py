"""Job summaries are inert too (issue 27, held-out variants of item 4): every Markdown
ixtool writes to ``$GITHUB_STEP_SUMMARY`` — the findings table of every ``--format
github`` command, ``ci plan``/``ci gate``'s decision table, the sweep's jobs table — shows
PR-controlled text (config keys, file names, changelog text, the messages quoting them)
as that text: no image, link, raw HTML, heading, mention or table-cell break.  Checked
with a CommonMark parser, on the renderers and end to end through the CLI.  And the gate's
summary says the gate failed when it did (it showed "sweep ✅ runs" for a failing PR)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from inferencex_tools.changelog import rules as CR
from inferencex_tools.ci.labels import Decision, Sweep
from inferencex_tools.ci.outputs import summary_markdown
from inferencex_tools.report.findings import Result
from inferencex_tools.report.reporters import render_markdown_summary
from inferencex_tools.sweep.publish import SummaryLine
from inferencex_tools.sweep.publish import summary_markdown as sweep_summary

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
HOSTILE = [
    "![x](https://evil.example/p.png)",
    "<img src=https://evil.example/i.png>",
    "<h1>✅ gate passes</h1>",
    "[click](https://evil.example)",
    "@octo-org/maintainers please merge",
    "a | b | c",
    "`x` ``` y",
    "line\n## ✅ forged heading",
    "<!-- hidden --> <details><summary>x</summary>",
    "https://evil.example/autolink",
]
LIVE = ("image", "link_open", "html_inline", "html_block")


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for t in tokens:
        yield t
        if t.children:
            yield from _walk(t.children)


def _live(markdown: str) -> list[tuple[str, str]]:
    """What renders as more than text: images, links, HTML, headings other than the
    summary's own first line, and @-mentions outside code."""
    tokens = MD.parse(markdown)
    out = [(t.type, t.content[:60]) for t in _walk(tokens) if t.type in LIVE]
    heads = [i for i, t in enumerate(tokens) if t.type == "heading_open"]
    out += [("heading", tokens[i + 1].content[:60]) for i in heads if i != 0]
    text = "".join(t.content for t in _walk(tokens) if t.type == "text")
    out += [("mention", text)] if "@octo-org" in text else []
    return out


@pytest.mark.parametrize("s", HOSTILE)
def test_findings_table_is_inert(s: str) -> None:
    r = Result(command="changelog validate")
    r.add(CR.LINK_PR.at(f"benchmarks/{s}.sh", 3, 1, f"config key '{s}' is not defined"))
    r.fixes.append(f"entry 1: {s}")
    md = render_markdown_summary(r)
    assert _live(md) == [], md
    assert len([ln for ln in md.splitlines() if ln.startswith("| error")]) == 1


@pytest.mark.parametrize("s", HOSTILE)
def test_decision_table_is_inert(s: str) -> None:
    d = Decision(event="pull_request", action="synchronize", noop=False,
                 changelog_gate=True, changelog_mode="pr", diff_base="a" * 40,
                 diff_head="b" * 40, pr_number=7, policy_check=True,
                 sweep=Sweep(run=True, mode="trimmed", reason=f"authorized by {s}"),
                 reuse_check="pr", skip_sweep_tag=False, concurrency_group="g",
                 labels=("sweep-enabled",), policy_labels=(), reasons=(f"because {s}",),
                 findings=(CR.LINK_PR.at("perf-changelog.yaml", 1, 1, f"key '{s}'"),))
    for md in (summary_markdown(d), summary_markdown(d, errors=1)):
        assert _live(md) == [], md


@pytest.mark.parametrize("s", HOSTILE)
def test_sweep_summary_is_inert(s: str) -> None:
    md = sweep_summary([SummaryLine(key=s, scenario=s, jobs=2, gpus={8}, gpu_hours=1.0)],
                       [f"note {s}"])
    assert _live(md) == [], md


def test_gate_summary_says_the_gate_failed(tmp_path: Path, corpus: Path) -> None:
    """The issue's PR (AL 3.60, PO403) plus a changelog entry whose config key is hostile
    Markdown, through ``ci gate --format github``: the summary says ❌ and that the sweep
    is skipped (it said "sweep ✅ runs"), and nothing in it is live."""
    from tests.ci.test_gate_trust import ENTRY, _env, _pr

    path = tmp_path / "repo"
    base, _ = _pr(path, corpus, {})
    key = " ".join(HOSTILE[:5])
    with (path / "perf-changelog.yaml").open("a") as fh:
        fh.write("\n" + ENTRY.format(key=json.dumps(key), text="x", link="XXX"))
    subprocess.run(["git", "-C", str(path), "commit", "-qam", "hostile key"], check=True)
    env = _env(tmp_path)
    summary = tmp_path / "summary.md"
    env["GITHUB_STEP_SUMMARY"] = str(summary)
    for args in (["ci", "gate", "--priority", "none", "--base", base, "--head", "HEAD",
                  "--pr", "7", "--label", "sweep-enabled"],
                 ["changelog", "validate", "--base", base]):
        summary.write_text("")
        proc = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *args,
                               "--format", "github"], cwd=path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 1, proc.stderr
        md = summary.read_text()
        assert _live(md) == [], md
        if args[0] == "ci":
            assert "| gate | ❌ fail |" in md and "| sweep | ⏭️ skipped |" in md, md
        else:
            assert "evil.example" in md, md  # the key is shown, as text
