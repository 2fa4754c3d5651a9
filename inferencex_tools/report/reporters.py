"""Render a :class:`Result` as text, JSON, GitHub workflow commands or SARIF.

Reporters are pure: they return strings.  The CLI decides where they go
(stdout, ``$GITHUB_STEP_SUMMARY``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from inferencex_tools import __version__
from inferencex_tools.report.findings import Finding, Result, Severity

FORMATS = ("text", "json", "github", "sarif")
JSON_SCHEMA_VERSION = 1


_SNIPPET_WIDTH = 160  # characters of a source line shown around the column


def _source_line(result: Result, f: Finding,
                 cache: dict[str, list[str]] | None = None) -> str | None:
    text: str | None = result.info.get("sources", {}).get(f.file)
    if text is None or not f.line:
        return None
    if cache is None:
        cache = {}
    if f.file not in cache:  # split once per file: findings × file size can be huge
        cache[f.file] = text.split("\n")
    lines = cache[f.file]
    if 1 <= f.line <= len(lines):
        return lines[f.line - 1]
    return None


def _window(line: str, column: int | None) -> tuple[str, int | None]:
    """At most _SNIPPET_WIDTH characters of ``line`` around ``column`` (1-based)."""
    if len(line) <= _SNIPPET_WIDTH:
        return line, column
    col = max(1, min(column or 1, len(line)))
    start = max(0, min(col - 1 - _SNIPPET_WIDTH // 2, len(line) - _SNIPPET_WIDTH))
    head = "…" if start else ""
    tail = "…" if start + _SNIPPET_WIDTH < len(line) else ""
    shown = head + line[start:start + _SNIPPET_WIDTH] + tail
    return shown, (col - start + len(head)) if column else None


def _visible_line(line: str, column: int | None) -> tuple[str, int | None]:
    """``line`` with invisible and bidirectional characters as ``<U+XXXX>`` (a source
    line shown in a terminal must read as what it is: a bidi override would reorder the
    rest of it), and ``column`` moved along."""
    from inferencex_tools.safetext import invisible_chars

    hits = invisible_chars(line)
    if not hits:
        return line, column
    out, col = [], column
    for i, c in enumerate(line):
        if (i, c) in hits:
            mark = f"<U+{ord(c):04X}>"
            out.append(mark)
            if col is not None and i + 1 < (column or 0):
                col += len(mark) - 1
        else:
            out.append(c)
    return "".join(out), col


def _vis(text: str) -> str:
    """Text a person reads (a terminal, an annotation, a table): invisible and bidi
    characters as ``<U+XXXX>``; JSON keeps the data as it is."""
    return _visible_line(text, None)[0]


def _where(f: Finding) -> str:
    if f.line is None:
        return f.file
    return f"{f.file}:{f.line}:{f.column or 1}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line(result: Result) -> str:
    """``3 errors, 1 warning, 2 notes (CL502×2, CL601, SW401, SW407×2)``: counts and the
    rules behind them; notes are counted when there are any (every finding shown, or
    recorded in a baseline, is in the count)."""
    n_err, n_warn = len(result.errors), len(result.warnings)
    n_note = len(result.findings) - n_err - n_warn
    counts: dict[str, int] = {}
    for f in result.findings:
        counts[f.rule] = counts.get(f.rule, 0) + 1
    rules = ", ".join(r if n == 1 else f"{r}×{n}" for r, n in sorted(counts.items()))
    text = f"{_plural(n_err, 'error')}, {_plural(n_warn, 'warning')}"
    if n_note:
        text += f", {_plural(n_note, 'note')}"
    return f"{text} ({rules})" if rules else text


def render_text(result: Result, *, color: bool = False) -> str:
    def paint(s: str, code: str) -> str:
        return f"\x1b[{code}m{s}\x1b[0m" if color else s

    out: list[str] = []
    cache: dict[str, list[str]] = {}
    for f in result.sorted():
        sev = paint(f.severity.value, "31;1" if f.severity is Severity.ERROR else "33;1")
        out.append(f"{_vis(_where(f))}: {sev} [{f.rule}] {_vis(f.message)}")
        src = _source_line(result, f, cache)
        if src is not None:
            shown, column = _window(*_visible_line(src.replace("\t", "→").rstrip("\r"),
                                                   f.column))
            out.append(f"    {f.line:>5} | {shown}")
            if column:
                out.append(f"          | {' ' * (column - 1)}^")
        if f.hint:
            out.append(f"    hint: {_vis(f.hint)}")
    out.extend(result.done)
    for fix in result.fixes:
        out.append(f"fixed: {fix}")
    status = paint("ok", "32;1") if result.ok else paint("FAILED", "31;1")
    checked = f" in {', '.join(result.checked)}" if result.checked else ""
    remarks = [r for r in (result.info.get("unlisted"), result.info.get("adoption")) if r]
    adopted = f" ({'; '.join(remarks)})" if remarks else ""
    out.append(f"{result.command}: {status}: {summary_line(result)}{checked}{adopted}")
    return "\n".join(out) + "\n"


def result_to_dict(result: Result) -> dict[str, Any]:
    info = {k: v for k, v in result.info.items() if k != "sources"}
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "tool": "ixtool",
        "tool_version": __version__,
        "command": result.command,
        "ok": result.ok,
        "strict": result.strict,
        "summary": {
            "errors": len(result.errors),
            "warnings": len(result.warnings),
            "notes": sum(1 for f in result.findings if f.severity is Severity.NOTE),
        },
        "checked": list(result.checked),
        "fixes": list(result.fixes),
        "info": info,
        "findings": [f.to_dict() for f in result.sorted()],
    }


def render_json(result: Result) -> str:
    return json.dumps(result_to_dict(result), indent=2, sort_keys=False) + "\n"


def _gh_escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_escape_prop(s: str) -> str:
    return _gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def render_github(result: Result) -> str:
    """GitHub workflow commands: one ``::error``/``::warning``/``::notice`` per finding."""
    out: list[str] = []
    for f in result.sorted():
        level = {"error": "error", "warning": "warning", "note": "notice"}[f.severity.value]
        props = [f"file={_gh_escape_prop(f.file)}"]
        if f.line is not None:
            props.append(f"line={f.line}")
            if f.column is not None:
                props.append(f"col={f.column}")
        props.append(f"title={_gh_escape_prop(f.rule)}")
        msg = _vis(f.message if not f.hint else f"{f.message}\nhint: {f.hint}")
        out.append(f"::{level} {','.join(props)}::{_gh_escape_data(msg)}")
    out.append(f"{result.command}: {summary_line(result)}")
    return "\n".join(out) + "\n"


def _md_cell(s: str) -> str:
    """A table cell of PR-derived text that renders as that text (report.inert: no
    image, link, HTML, mention, heading or cell break a message could carry)."""
    from inferencex_tools.report.inert import prose

    return prose(_vis(s))


def render_markdown_summary(result: Result) -> str:
    """The job-summary table written to ``$GITHUB_STEP_SUMMARY``: every finding's text
    inert (a PR controls file names, config keys and the messages quoting them)."""
    from inferencex_tools.report.inert import code

    icon = "✅" if result.ok else "❌"
    lines = [
        f"### {icon} `ixtool {result.command}`: {summary_line(result)}",
        "",
    ]
    if result.findings:
        lines += ["| severity | rule | location | message | fix |", "|---|---|---|---|---|"]
        for f in result.sorted():
            lines.append(
                f"| {f.severity.value} | `{f.rule}` | {code(_vis(_where(f)), table=True)} | "
                f"{_md_cell(f.message)} | {_md_cell(f.hint or '')} |"
            )
    else:
        lines.append("No findings.")
    if result.fixes:
        lines += ["", "Fixes applied:", *[f"- {_md_cell(x)}" for x in result.fixes]]
    return "\n".join(lines) + "\n"


def render_sarif(result: Result) -> str:
    """SARIF 2.1.0 log with one run, the rules that fired and their results."""
    from inferencex_tools.report.findings import RULES

    used = sorted({f.rule for f in result.findings})
    rules_meta = []
    for rid in used:
        r = RULES.get(rid)
        meta: dict[str, Any] = {"id": rid}
        if r is not None:
            meta["shortDescription"] = {"text": r.summary}
            meta["help"] = {"text": r.fix}
            meta["defaultConfiguration"] = {
                "level": {"error": "error", "warning": "warning", "note": "note"}[r.severity.value]
            }
        rules_meta.append(meta)
    index = {rid: i for i, rid in enumerate(used)}
    results = []
    for f in result.sorted():
        loc: dict[str, Any] = {"artifactLocation": {"uri": f.file}}
        if f.line is not None and f.line >= 1:  # SARIF lines/columns are 1-based
            region: dict[str, Any] = {"startLine": f.line}
            if f.column is not None and f.column >= 1:
                region["startColumn"] = f.column
            loc["region"] = region
        text = _vis(f.message if not f.hint else f"{f.message} (fix: {f.hint})")
        res: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": {"error": "error", "warning": "warning", "note": "note"}[
                f.severity.value
            ],
            "message": {"text": text},
            "locations": [{"physicalLocation": loc}],
        }
        if f.data:  # the finding's machine-readable facts, as in JSON (property bag)
            res["properties"] = {"data": f.data}
        results.append(res)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ixtool",
                        "version": __version__,
                        "informationUri": "https://github.com/SemiAnalysisAI/InferenceX",
                        "rules": rules_meta,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


RENDERERS: dict[str, Callable[[Result], str]] = {
    "text": render_text,
    "json": render_json,
    "github": render_github,
    "sarif": render_sarif,
}


def render(result: Result, fmt: str, *, color: bool = False) -> str:
    if fmt == "text":
        return render_text(result, color=color)
    try:
        return RENDERERS[fmt](result)
    except KeyError:
        from inferencex_tools.errors import UsageError

        raise UsageError(
            f"unknown format {fmt!r}", hint=f"use one of: {', '.join(FORMATS)}"
        ) from None
