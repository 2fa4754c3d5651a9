"""Findings → review comments on the exact lines (pure).

* A fixable change (what ``changelog validate --fix`` would write, including the PR URL for
  a placeholder ``pr-link``) becomes a comment with a ```` ```suggestion ```` block per
  changed stretch of lines, naming the findings it fixes.
* Any other finding on a line the change added becomes a line comment with its hint.
* Findings elsewhere go to the summary.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from inferencex_tools.report.findings import Finding
from inferencex_tools.review.model import LineComment

_ICON = {"error": "🛑", "warning": "⚠️", "note": "ℹ️"}


def opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """``difflib`` opcodes of ``a`` → ``b``, the common head and tail cut off first (an
    append-only changelog of thousands of lines differs in a few at its end)."""
    n = min(len(a), len(b))
    p = 0
    while p < n and a[p] == b[p]:
        p += 1
    q = 0
    while q < n - p and a[len(a) - 1 - q] == b[len(b) - 1 - q]:
        q += 1
    mid = difflib.SequenceMatcher(None, a[p:len(a) - q], b[p:len(b) - q],
                                  autojunk=False).get_opcodes()
    out: list[tuple[str, int, int, int, int]] = [
        (t, i1 + p, i2 + p, j1 + p, j2 + p) for t, i1, i2, j1, j2 in mid if t != "equal"]
    return out


def added_lines(base: bytes | None, head: bytes) -> set[int]:
    """1-based head line numbers the change added or modified."""
    a = (base or b"").decode("utf-8", "replace").splitlines()
    b = head.decode("utf-8", "replace").splitlines()
    out: set[int] = set()
    for tag, _i1, _i2, j1, j2 in opcodes(a, b):
        if tag in ("replace", "insert"):
            out.update(range(j1 + 1, j2 + 1))
    return out


def finding_line(f: Finding) -> str:
    icon = _ICON.get(f.severity.value, "")
    return f"{icon} **{f.rule}** {f.message}".strip()


def suggestions(path: str, head: bytes, fixed: bytes, findings: list[Finding],
                commentable: set[int], why: str) -> tuple[list[LineComment], list[Finding]]:
    """Comments turning ``head`` into ``fixed`` (one per changed stretch on commentable
    lines) and the findings they cover."""
    a = head.decode("utf-8", "replace").splitlines(keepends=True)
    b = fixed.decode("utf-8", "replace").splitlines(keepends=True)
    comments: list[LineComment] = []
    covered: list[Finding] = []
    for _tag, i1, i2, j1, j2 in opcodes(a, b):
        if i1 == i2:  # pure insertion: anchor on the line before (or the first line)
            if i1 == 0:
                start, end, text = 1, 1, "".join(b[j1:j2]) + (a[0] if a else "")
            else:
                start, end, text = i1, i1, a[i1 - 1] + "".join(b[j1:j2])
        else:
            start, end, text = i1 + 1, i2, "".join(b[j1:j2])
        if not all(n in commentable for n in range(start, end + 1)):
            continue
        if text and not text.endswith("\n"):
            text += "\n"
        mine = [f for f in findings
                if f.file == path and f.line is not None and start <= f.line <= end]
        covered += mine
        body = "\n".join(finding_line(f) for f in mine) or f"**ixtool** {why}"
        comments.append(LineComment(path, end, body, start_line=start if start < end else None,
                                    suggestion=text, rules=sorted({f.rule for f in mine})))
    return comments, covered


def line_comments(findings: Iterable[Finding], commentable: dict[str, set[int]]
                  ) -> tuple[list[LineComment], list[Finding]]:
    """Plain comments (message + hint) for findings on commentable lines; the rest."""
    by_place: dict[tuple[str, int], list[Finding]] = {}
    rest: list[Finding] = []
    for f in findings:
        if f.line is not None and f.line in commentable.get(f.file, set()):
            by_place.setdefault((f.file, f.line), []).append(f)
        else:
            rest.append(f)
    out: list[LineComment] = []
    for (path, line), fs in sorted(by_place.items()):
        parts = []
        for f in fs:
            parts.append(finding_line(f) + (f"\n\n> {f.hint}" if f.hint else ""))
        out.append(LineComment(path, line, "\n\n".join(parts),
                               rules=sorted({f.rule for f in fs})))
    return out, rest


def value_suggestion(path: str, text: str, line: int, old: str, new: str, body: str,
                     rules: list[str]) -> LineComment | None:
    """A suggestion replacing the literal ``old`` by ``new`` on one line, when the line
    holds it exactly once (e.g. a pinned AL)."""
    lines = text.splitlines(keepends=True)
    if not 1 <= line <= len(lines):
        return None
    src = lines[line - 1]
    if src.count(old) != 1 or old == new:
        return None
    fixed = src.replace(old, new)
    if not fixed.endswith("\n"):
        fixed += "\n"
    return LineComment(path, line, body, suggestion=fixed, rules=rules)
