"""Which lines of a GitHub comment show as plain rendered text (pure).

A ``/reuse-sweep-run`` command counts only where a reader sees it as text: not in a
fenced or indented code block, a code span, a block quote, an HTML comment or any
other raw HTML (``<details>``, ``<pre>``, ``<code>`` …).  :func:`text_lines` returns
the lines that are plain text under GitHub's Markdown (CommonMark), **erring on the
side of excluding**: where a construct is ambiguous the line is dropped, so an
unusual comment can only authorize less, never more.  It is the one reading of
comment bodies for ``ci plan``, ``ci gate`` and ``merge-with-reuse``
(:mod:`inferencex_tools.ci.authorization`).

Two passes, as CommonMark parses: blocks line by line (fences, HTML blocks, block
quotes with their lazy continuation lines, indented code), then, inside each
paragraph, inline code spans, inline HTML comments and inline raw-HTML code elements
that may span lines.
"""

from __future__ import annotations

import re

_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_HTML_START = re.compile(r" {0,3}<[A-Za-z/!?]")
# HTML block kinds and the text that ends them (CommonMark 4.6); others end at a blank
_HTML_END = (
    (re.compile(r" {0,3}<(?:pre|script|style|textarea)(?:[\s>]|$)", re.I),
     re.compile(r"</(?:pre|script|style|textarea)>", re.I)),
    (re.compile(r" {0,3}<!--"), re.compile(r"-->")),
    (re.compile(r" {0,3}<\?"), re.compile(r"\?>")),
    (re.compile(r" {0,3}<![A-Za-z]"), re.compile(r">")),
    (re.compile(r" {0,3}<!\[CDATA\["), re.compile(r"\]\]>")),
)
# inline constructs whose content is not plain text; an unclosed one runs to the end
# of the paragraph (CommonMark would show it literally: excluding is the safe error)
_INLINE_CODE_TAGS = "code|pre|kbd|samp|tt|var|script|style|textarea|template|xmp"
_INLINE_OPEN = re.compile(r"`+|<!--|<(" + _INLINE_CODE_TAGS + r")(?=[\s>/])", re.I)


def _indent(line: str) -> int:
    """Columns of leading whitespace (a tab advances to the next multiple of 4)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _width(prefix: str) -> int:
    """Columns ``prefix`` occupies (a tab advances to the next multiple of 4)."""
    col = 0
    for ch in prefix:
        col += 4 - col % 4 if ch == "\t" else 1
    return col


def _html_end(line: str) -> re.Pattern[str] | None:
    """The pattern ending the HTML block ``line`` opens (None: ends at a blank line)."""
    for start, end in _HTML_END:
        if start.match(line):
            return end
    return None


# a container prefix: block-quote markers and list-item markers, with their spacing
_CONTAINER = re.compile(r"(?:[ \t]*(?:>|(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$)))+[ \t]*"
                        r"|[ \t]*")


def _split(line: str) -> tuple[int, bool, str, int]:
    """(block-quote depth, inside a list item, the text after the container prefix,
    its column) of ``line``."""
    m = _CONTAINER.match(line)
    prefix = m.group(0) if m else ""
    depth = prefix.count(">")
    listed = bool(re.search(r"(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$)", prefix))
    return depth, listed, line[len(prefix):], _width(prefix)


class _Fence:
    """An open fenced code block and the container it opened in."""

    def __init__(self, marker: str, depth: int, column: int, contained: bool) -> None:
        self.marker = marker
        self.depth = depth  # block-quote depth of the opening line
        self.column = column  # column of the opening fence
        self.contained = contained  # opened inside a list item or a block quote

    def ended_by_container(self, line: str) -> bool:
        """``line`` is outside the container the fence opened in (which ends the fence)."""
        if not self.contained or not line.strip():
            return False
        depth, _, rest, col = _split(line)
        return depth < self.depth or (self.depth == 0 and col < self.column and rest != "")

    def closes(self, line: str) -> bool:
        depth, _, rest, col = _split(line)
        if depth != self.depth or col - (self.column if self.contained else 0) > 3:
            return False
        run = len(rest) - len(rest.lstrip(self.marker[0]))
        return run >= len(self.marker) and not rest[run:].strip()


class _Blocks:
    """The block pass: which lines are paragraph text, grouped by paragraph."""

    def __init__(self) -> None:
        self.paragraphs: list[list[tuple[int, str]]] = []  # (line index, text)
        self.candidates: set[int] = set()  # paragraph lines that may be plain text
        self._para: list[tuple[int, str]] = []
        self._fence: _Fence | None = None
        self._html: re.Pattern[str] | bool | None = False  # False: not in an HTML block
        self._quoted = False  # in a block quote's paragraph (lazy continuation)

    def _close_paragraph(self) -> None:
        if self._para:
            self.paragraphs.append(self._para)
        self._para = []

    def feed(self, i: int, line: str) -> None:
        if self._fence is not None:
            if not self._fence.ended_by_container(line):
                if self._fence.closes(line):
                    self._fence = None
                return
            self._fence = None  # the container ended: read the line afresh
        if self._html is not False:
            self._in_html(line)
            return
        if not line.strip():
            self._close_paragraph()
            self._quoted = False
            return
        depth, listed, rest, col = _split(line)
        m = _FENCE_OPEN.match(rest)
        if m:
            self._close_paragraph()
            self._fence = _Fence(m.group(1), depth, col,
                                 contained=depth > 0 or listed or col > 3)
            return
        if _HTML_START.match(rest):
            self._close_paragraph()
            self._html = _html_end(rest)
            self._in_html(rest, opening=True)
            return
        if depth:
            self._close_paragraph()
            self._quoted = True
            return
        if self._quoted:
            return  # a lazy continuation line belongs to the quote
        if _indent(line) >= 4 and not self._para:
            return  # indented code block
        self._para.append((i, line))
        if _indent(line) < 4 and not listed:
            self.candidates.add(i)

    def _in_html(self, line: str, *, opening: bool = False) -> None:
        end = self._html
        if isinstance(end, re.Pattern):
            # the end text may sit on the opening line, after the start
            text = re.sub(r"^ {0,3}<!--", "", line, count=1) if opening else line
            if end.search(text):
                self._html = False
        elif not opening and not line.strip():
            self._html = False

    def finish(self) -> None:
        self._close_paragraph()


def _masked_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) ranges of a paragraph's text that are code spans, HTML comments or
    raw HTML code elements."""
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        m = _INLINE_OPEN.search(text, pos)
        if m is None:
            return out
        token = m.group(0)
        if token.startswith("`"):
            n = len(token)
            closer = re.compile("(?<!`)`{" + str(n) + "}(?!`)")
            c = closer.search(text, m.end())
            if c is None:  # a lone backtick run is literal text
                pos = m.end()
                continue
            out.append((m.start(), c.end()))
            pos = c.end()
            continue
        if token == "<!--":
            end = text.find("-->", m.end())
            stop = len(text) if end < 0 else end + 3
        else:
            c = re.compile(r"</" + re.escape(m.group(1)) + r"\s*>", re.I).search(text, m.end())
            stop = len(text) if c is None else c.end()
        out.append((m.start(), stop))
        pos = stop


def text_lines(body: str) -> list[str]:
    """The lines of ``body`` that render as plain text, in order (``\\r`` stripped)."""
    lines = [ln.rstrip("\r") for ln in body.split("\n")]
    blocks = _Blocks()
    for i, line in enumerate(lines):
        blocks.feed(i, line)
    blocks.finish()
    keep: list[int] = []
    for para in blocks.paragraphs:
        text = "\n".join(ln for _, ln in para)
        spans = _masked_spans(text)
        offset = 0
        for i, ln in para:
            start, end = offset, offset + len(ln)
            offset = end + 1
            if i in blocks.candidates and not any(s < end and start < e for s, e in spans):
                keep.append(i)
    return [lines[i] for i in sorted(keep)]
