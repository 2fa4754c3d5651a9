"""Findings → review comments on the exact lines (pure).

* A fixable change (what ``changelog validate --fix`` would write, including the PR URL for
  a placeholder ``pr-link``) becomes a comment with a ```` ```suggestion ```` block per
  changed stretch of lines, naming the findings it fixes.
* Any other finding on a line the change added becomes a line comment with its hint.
* Findings elsewhere go to the summary.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from inferencex_tools.report.findings import Finding
from inferencex_tools.report.inert import prose
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


def finding_line(f: Finding) -> str:
    icon = _ICON.get(f.severity.value, "")
    return f"{icon} **{prose(f.rule)}** {prose(f.message)}".strip()


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
        body = "\n".join(finding_line(f) for f in mine) or f"**ixtool** {prose(why)}"
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
            parts.append(finding_line(f) + (f"\n\n> {prose(f.hint)}" if f.hint else ""))
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
    if src.count(old) != 1 or old == new or not postable(src):
        return None
    fixed = src.replace(old, new)
    if not fixed.endswith("\n"):
        fixed += "\n"
    return LineComment(path, line, body, suggestion=fixed, rules=rules)


def postable(text: str) -> bool:
    """A suggestion text GitHub commits as it is: CommonMark turns NUL into U+FFFD and a
    CR into a line end, so a text holding either is not suggested (prose instead)."""
    return "\x00" not in text and "\r" not in text


def apply(head: bytes, comments: Iterable[LineComment]) -> bytes | None:
    """``head`` with every suggestion committed at once, as GitHub does (each replaces
    its lines ``start_line``..``line``); None when two of them overlap."""
    lines = head.decode("utf-8", "replace").splitlines(keepends=True)
    spans = sorted(((c.start_line or c.line, c.line, c.suggestion) for c in comments
                    if c.suggestion is not None), reverse=True)
    last = len(lines) + 1
    for start, end, text in spans:
        if end >= last or start < 1 or end > len(lines):
            return None
        lines[start - 1:end] = [text] if text else []
        last = start
    return "".join(lines).encode()


_TOP_ITEM = re.compile(rb"(?m)^- ")


def keeps_entries(head: bytes, c: LineComment) -> bool:
    """Committing ``c`` alone keeps every top-level item (changelog entry) of ``head``."""
    alone = apply(head, [c])
    return alone is not None and len(_TOP_ITEM.findall(alone)) >= len(_TOP_ITEM.findall(head))


_NAME = r"-{0,2}[A-Za-z_][\w.-]*"
_SEP = r"""['"]?(?:\s*[:=]\s*|\s+)['"]?"""


def value_lines(text: str, line: int, old: str) -> list[int]:
    """The lines of ``text`` that set the same name as line ``line`` does to the literal
    ``old`` (a YAML ``NAME: 'old'``, a shell ``NAME=old``, a JSON ``"name": old``, a flag
    ``--name old``); just ``line`` when it names nothing before the value."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return []
    lit = re.escape(old) + r"(?![\d.])"
    m = re.search(rf"(?<![\w.-])({_NAME}){_SEP}{lit}", lines[line - 1])
    if m is None:
        return [line] if re.search(rf"(?<![\d.]){lit}", lines[line - 1]) else []
    rx = re.compile(rf"(?<![\w.-]){re.escape(m.group(1))}{_SEP}{lit}")
    return [n for n, ln in enumerate(lines, 1)
            if rx.search(ln) and (n == line or not ln.lstrip().startswith("#"))]
