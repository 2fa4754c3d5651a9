"""Text from a pull request, made inert for Markdown that ixtool posts under its own name
(pure).

What a PR controls (file names, config keys and values, changelog text, script lines, the
messages that quote them) reaches GitHub only through these helpers:

* :func:`prose` — one line of Markdown that renders as the literal text: no heading, list,
  quote, emphasis, link, image, HTML, table cell break; no live ``@user``/``@org/team``
  mention, no ``#123``/``GH-123`` cross-reference, no autolink (URLs become code spans);
  control and bidirectional-override characters are shown as ``U+XXXX``.
* :func:`code` — an inline code span no content can close (a backtick run longer or shorter
  than any inside, CommonMark 6.1).
* :func:`fence` — a fenced block whose fence is longer than any backtick run inside
  (CommonMark 4.5), so no line of the content closes it early.
* :func:`cap` — a comment body at most :data:`MAX_COMMENT` characters (GitHub's limit),
  cut at a line with any open fence closed and a note saying so.
"""

from __future__ import annotations

import re

MAX_COMMENT = 65_536  # GitHub: "Body is too long (maximum is 65536 characters)"
ZWSP = "\u200b"  # breaks a mention or a reference without changing what one reads

# C0/C1 controls, DEL, line/paragraph separators, bidi embeddings/overrides/isolates,
# zero-width and BOM characters: shown as their code point, never passed through
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\u200b-\u200f\u2060\ufeff]")
_URL = re.compile(r"(?i)\b(?:https?://|ftp://|www\.)[^\s<>]*[^\s<>.,;:!?)\]'\"]")
# everywhere: code, emphasis, link and image brackets, HTML and entities, table cells,
# strikethrough, math; ``_`` only where it could open or close emphasis (not in a word)
_ESCAPE = re.compile(r"[\\`*\[\]|~<>&$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# where a line starts: a heading, quote, list item, setext underline, thematic break
_LEADING = re.compile(r">|#{1,6}(?=\s|$)|[-+](?=\s|$)|[-=]+(?=\s*$)|\d{1,9}(?=[.)](?:\s|$))")
_MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
_REF = re.compile(r"(?i)(#|\bgh-)(?=\d)")
_TICKS = re.compile(r"`+")


def visible(text: str) -> str:
    """``text`` with tabs and newlines as spaces and hidden characters as ``U+XXXX``."""
    text = text.replace("\t", " ").replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return _HIDDEN.sub(lambda m: f"U+{ord(m.group()):04X}", text)


def _escape(text: str) -> str:
    text = _REF.sub(lambda m: m.group(1) + ZWSP, _MENTION.sub("@" + ZWSP, text))
    return _ESCAPE.sub(lambda m: {"<": "&lt;", ">": "&gt;", "&": "&amp;"}.get(
        m.group(), "\\" + m.group()), text)


def _lead(text: str) -> str:
    """``text`` with a first character escaped that would start a block where the text
    starts a line (``# x``, ``> x``, ``- x``, ``1. x`` …)."""
    m = _LEADING.match(text)
    if m is None:
        return text
    if m.group()[0].isdigit():
        return m.group() + "\\" + text[m.end():]
    return "\\" + text


def prose(text: str) -> str:
    """``text`` as one line of Markdown prose that shows exactly these characters and
    does nothing else (URLs are shown as code)."""
    text = visible(text)
    out: list[str] = []
    pos = 0
    for m in _URL.finditer(text):
        out.append(_escape(text[pos:m.start()]))
        out.append(code(m.group()))
        pos = m.end()
    out.append(_escape(text[pos:]))
    return _lead("".join(out).lstrip(" "))


def code(text: str, *, table: bool = False) -> str:
    """``text`` as an inline code span that its content cannot close; ``table``: inside
    a GFM table cell (``|`` escaped, which GitHub shows as ``|`` in code)."""
    text = visible(text)
    if table:
        text = text.replace("|", "\\|")
    runs = {len(r) for r in _TICKS.findall(text)}
    n = 1
    while n in runs:
        n += 1
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") or not text else ""
    ticks = "`" * n
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(content: str, info: str = "") -> str:
    """A fenced code block holding ``content`` verbatim (a final newline added when it
    has none); the fence is longer than any backtick run in it."""
    if content and not content.endswith("\n"):
        content += "\n"
    longest = max((len(r) for r in _TICKS.findall(content)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{content}{ticks}"


def length(text: str) -> int:
    """Characters as GitHub counts them at most (UTF-16 code units: an emoji is two)."""
    return len(text.encode("utf-16-le")) // 2


_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _open_fence(lines: list[str]) -> str | None:
    """The fence of the block still open after ``lines`` (None: none is open)."""
    open_: str | None = None
    for ln in lines:
        m = _FENCE_LINE.match(ln)
        if m is None:
            continue
        run, rest = m.group(1), m.group(2)
        if open_ is None:
            if not (run[0] == "`" and "`" in rest):
                open_ = run
        elif run[0] == open_[0] and len(run) >= len(open_) and not rest.strip():
            open_ = None
    return open_


def cap(body: str, limit: int = MAX_COMMENT, *, what: str = "this comment") -> str:
    """``body`` when it fits in ``limit`` characters; otherwise its longest prefix (whole
    lines, or a cut line when the first one alone is too long) that fits together with
    any open fence closed and a truncation note."""
    if length(body) <= limit:
        return body
    note = (f"\n\n**Truncated:** {what} was {length(body):,} characters, over GitHub's "
            f"{limit:,}; the rest is left out. Run `ixtool review` for all of it.\n")
    budget = limit - length(note)
    kept: list[str] = []
    used = reserve = 0  # reserve: room for the closing fence of any fence seen so far
    for ln in body.split("\n"):
        m = _FENCE_LINE.match(ln)
        need = max(reserve, len(m.group(1)) + 1 if m else 0)
        n = length(ln) + (1 if kept else 0)
        if used + n + need > budget:
            room = budget - used - need - (1 if kept else 0)
            if not kept and room > 0:
                kept.append(ln[:room // 2])  # code points: at most two UTF-16 units each
            break
        kept.append(ln)
        used += n
        reserve = need
    head = "\n".join(kept)
    opened = _open_fence(kept)
    if opened is not None:
        head += "\n" + opened
    return head + note
