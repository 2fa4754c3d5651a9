"""Parse ``perf-changelog.yaml`` bytes into entries with their byte spans.

:func:`parse` never raises for bad content: it returns a :class:`Changelog`
whose ``findings`` hold every file-level problem found (spec §1) and whose
``entries`` are usable only when ``parsed`` is true.  Entry spans come from the
``- config-keys:`` header lines, so every entry knows its first line, its last
non-blank line and its exact bytes without a round-trip parse.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.changelog.rules import (
    BOM,
    CONFLICT,
    CR,
    DUP_KEY,
    FINAL_NEWLINE,
    LIMIT,
    LINE_SEP,
    NOT_MAPPING,
    NUL,
    ROOT,
    TAB,
    UTF8,
    YAML_SYNTAX,
)
from inferencex_tools.changelog.rules import HEADER as HEADER_RULE
from inferencex_tools.errors import LimitExceeded, YamlError
from inferencex_tools.io.yamlio import DEFAULT_LIMITS, Limits, load_rt, load_safe
from inferencex_tools.report.findings import Finding

HEADER = b"- config-keys:"
_HEADER_RX = re.compile(rb"^- config-keys:[^\r\n]*\r?\n", re.M)
_BOM = b"\xef\xbb\xbf"
_CONFLICT_RX = re.compile(rb"^(<<<<<<<|=======|>>>>>>>|\|\|\|\|\|\|\|)(?: |$)", re.M)
_CONFLICT_MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||")  # what _CONFLICT_RX needs
_LINK_LINE_RX = re.compile(rb"^  pr-link:[ ]?(.*)$", re.M)
MAX_PER_RULE = 20  # per-line findings of one byte rule before the rest is elided


def canonical_json(data: Any) -> str:
    """Deep-equality key of loaded YAML data; never raises.

    Keys of mixed types (``~: x`` next to ``a: y``), non-string keys (``? [a, b]``) or
    a self-referencing alias cannot go through ``json.dumps(sort_keys=True)``; such
    data falls back to its ``repr`` (insertion-ordered, still deterministic).
    """
    try:
        return json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return "repr:" + repr(data)


@dataclass
class Entry:
    index: int  # 0-based position in the file
    data: Any  # the raw YAML value (normally a dict)
    start: int = -1  # byte offset of the '- config-keys:' line (-1: unknown)
    end: int = -1  # byte offset just past the newline of the last non-blank line
    span_end: int = -1  # offset of the next entry header (or EOF)
    line: int | None = None  # 1-based line of the header
    last_line: int | None = None
    _sig: str | None = field(default=None, repr=False, compare=False)

    @property
    def signature(self) -> str:
        """Canonical JSON of the entry's data (deep-equality key, cached)."""
        if self._sig is None:
            self._sig = canonical_json(self.data)
        return self._sig

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def mapping(self) -> dict[str, Any]:
        return self.data if isinstance(self.data, dict) else {}

    @property
    def link(self) -> str:
        v = self.mapping.get("pr-link")
        return "" if v is None else _text(v)

    @property
    def keys(self) -> list[str]:
        v = self.mapping.get("config-keys")
        return [_text(k) for k in v] if isinstance(v, list) else []

    def describe(self) -> str:
        keys = ", ".join(self.keys) or "?"
        link = self.link or "(no link)"
        return f"entry {self.number} [{keys}] ({link})"


@dataclass
class Changelog:
    raw: bytes
    label: str
    text: str | None = None
    data: Any = None
    entries: list[Entry] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    parsed: bool = False  # YAML loaded and root is a list
    spans_ok: bool = False  # header lines map 1:1 onto entries
    _newlines: list[int] | None = field(default=None, repr=False)

    def line_of(self, offset: int) -> int:
        """1-based line number of a byte offset (O(log n) after one scan)."""
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer(b"\n", self.raw)]
        return bisect.bisect_left(self._newlines, offset) + 1

    def col_of(self, offset: int) -> int:
        return offset - (self.raw.rfind(b"\n", 0, offset) + 1) + 1

    def block(self, e: Entry) -> bytes:
        """The entry's bytes up to and including its last non-blank line."""
        return self.raw[e.start : e.end] if e.start >= 0 else b""

    def link_line(self, e: Entry) -> tuple[int | None, bool]:
        """(1-based line of the entry's ``  pr-link:`` line, value-on-next-line flag)."""
        if e.start < 0:
            return (None, False)
        m = _LINK_LINE_RX.search(self.raw, e.start, e.end)
        if m is None:
            return (None, False)
        folded = False
        if m.group(1).strip() == b"":  # value on the next line, or no value at all
            stop = self.raw.find(b"\n", m.end() + 1)
            nxt = self.raw[m.end() + 1 : stop if stop >= 0 else len(self.raw)]
            folded = nxt.startswith(b"   ") and nxt.strip() != b""
        return (self.line_of(m.start()), folded)


def header_offsets(raw: bytes) -> list[int]:
    """Offsets of the ``- config-keys:`` entry header lines (a leading BOM is
    reported by its own rule, CL106, so line 1 still counts as a header)."""
    offsets = [m.start() for m in _HEADER_RX.finditer(raw)]
    if raw.startswith(_BOM + HEADER):
        offsets.insert(0, 0)
    return offsets


def _content_end(raw: bytes, start: int, stop: int) -> int:
    """Offset past the newline of the last line in [start, stop) that is not blank."""
    pos = stop
    while pos > start:
        nl = raw.rfind(b"\n", start, pos - 1)
        line_start = nl + 1 if nl >= 0 else start
        if raw[line_start:pos].strip(b" \t\r\n"):
            return pos
        pos = line_start
    return start


_CONTROL_RX = re.compile(rb"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LINE_SEP_RX = re.compile(rb"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2\x85|\xe2\x80[\xa8\xa9]")
_SEP_NAMES = {b"\xc2\x85": "U+0085 (NEL)", b"\xe2\x80\xa8": "U+2028 (LINE SEPARATOR)",
              b"\xe2\x80\xa9": "U+2029 (PARAGRAPH SEPARATOR)"}


def _line_sep_findings(raw: bytes, label: str, out: list[Finding], cl: Changelog) -> None:
    """CL108: control characters (YAML cannot hold them) and the Unicode line breaks that
    ``str.splitlines`` (the reference's entry count) and YAML 1.1 split lines at; all
    invisible in most editors.  One finding per line."""
    last_line = 0
    reported = 0
    for m in _LINE_SEP_RX.finditer(raw):
        line = cl.line_of(m.start())
        if line == last_line:
            continue
        last_line = line
        ch = m.group(0)
        name = _SEP_NAMES.get(ch) or f"control character 0x{ch[0]:02x}"
        out.append(LINE_SEP.at(label, line, cl.col_of(m.start()), f"{name}"))
        reported += 1
        if reported >= MAX_PER_RULE:
            break


def _byte_checks(raw: bytes, label: str, out: list[Finding], cl: Changelog) -> bool:
    """Spec §1 rules 1–5 plus BOM/conflict markers.  Returns False if YAML can't be tried."""
    if not raw:
        out.append(ROOT.at(label, 1, 1, "the file is empty; expected a list of entries"))
        return False
    if not raw.endswith(b"\n"):
        last = raw.count(b"\n") + 1
        out.append(FINAL_NEWLINE.at(label, last, None, "file does not end with a newline"))
    for rule, needle, what in (
        (CR, b"\r", "CR character"),
        (TAB, b"\t", "TAB character"),
        (NUL, b"\0", "NUL byte"),
    ):
        i = raw.find(needle)
        reported = 0
        while i >= 0 and reported < MAX_PER_RULE:
            out.append(rule.at(label, cl.line_of(i), cl.col_of(i), what))
            reported += 1
            nl = raw.find(b"\n", i + 1)
            if nl < 0:
                break
            i = raw.find(needle, nl + 1)
    control = _CONTROL_RX.search(raw) is not None
    # _LINE_SEP_RX as plain substring tests where it can be (memchr speed)
    if control or any(sep in raw for sep in _SEP_NAMES):
        _line_sep_findings(raw, label, out, cl)
    if raw.startswith(_BOM):
        out.append(BOM.at(label, 1, 1, "file starts with a UTF-8 byte-order mark"))
    # YAML cannot hold NUL or other C0 controls: CL104 / CL108 say it all
    ok = b"\0" not in raw and not control
    markers = any(m in raw for m in _CONFLICT_MARKERS)
    for m in _CONFLICT_RX.finditer(raw) if markers else ():
        ok = False
        marker = m.group(1).decode()
        out.append(CONFLICT.at(label, cl.line_of(m.start()), 1,
                                 f"conflict marker '{marker}'"))
    try:
        cl.text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        out.append(UTF8.at(label, cl.line_of(exc.start), cl.col_of(exc.start),
                             f"invalid UTF-8 byte 0x{raw[exc.start]:02x}"))
        return False
    return ok


def parse(raw: bytes, label: str, *, limits: Limits = DEFAULT_LIMITS) -> Changelog:
    """Parse a snapshot; file-level problems become findings on the result."""
    big = _oversize(raw, label, limits)
    if big is not None:
        return big
    cl = Changelog(raw=raw, label=label)
    if not _byte_checks(raw, label, cl.findings, cl):
        return cl
    try:
        data = load_safe(cl.text or "", source=label, limits=limits)
    except YamlError as exc:
        _yaml_finding(cl, exc)
        return cl
    _build(cl, data, header_offsets(raw))
    return cl


_APPEND_RX = re.compile(rb"(?:[ ]*\n)*- config-keys:")
# A keep-chomping block scalar header (``|+``, ``>2+`` …) ends its line; such a
# scalar would absorb the blank lines before an appended entry.
_KEEP_CHOMP_RX = re.compile(rb"[|>][1-9]?\+[ ]*(?:#[^\n]*)?$", re.M)
_TOKEN_BEFORE = frozenset(b" \t\r\n[{,")
_NOT_NAME = frozenset(b" \t\r\n[]{},")


def _may_alias(data: bytes) -> bool:
    """Whether ``data`` may use an alias (``*name`` starting a token).  A suffix
    without one cannot reference a base anchor nor add to the base's alias count."""
    i = data.find(b"*")
    while i >= 0:
        if (i == 0 or data[i - 1] in _TOKEN_BEFORE) and i + 1 < len(data) \
                and data[i + 1] not in _NOT_NAME:
            return True
        i = data.find(b"*", i + 1)
    return False


def _oversize(raw: bytes, label: str, limits: Limits) -> Changelog | None:
    """A snapshot over the size limit: one CL112 finding, no further work."""
    if len(raw) <= limits.max_bytes:
        return None
    cl = Changelog(raw=raw, label=label)
    cl.findings.append(LIMIT.at(
        label, None, None,
        f"file is {len(raw) / 2**20:.1f} MiB, over the {limits.max_bytes // (1024 * 1024)} MiB "
        "limit", hint="a changelog is a few hundred kB; check that the right file was given"))
    return cl


def parse_extending(base: Changelog, raw: bytes, label: str, *,
                    limits: Limits = DEFAULT_LIMITS) -> Changelog:
    """Parse ``raw``, reusing ``base`` when ``raw`` is ``base.raw`` plus whole new entries.

    Only the appended suffix is loaded as YAML, so a PR that appends to a large
    changelog costs one parse of the base instead of two full parses.  Falls back
    to :func:`parse` whenever the shortcut could differ from a full parse (the
    suffix does not start a new top-level entry, the base uses keep-chomping block
    scalars, the suffix may use an alias, or the suffix alone does not load).
    """
    n = len(base.raw)
    suffix = raw[n:]
    if not (base.parsed and base.spans_ok and n and raw.startswith(base.raw)
            and base.raw.endswith(b"\n") and _APPEND_RX.match(suffix)
            and not _KEEP_CHOMP_RX.search(base.raw) and not _may_alias(suffix)
            and len(raw) <= limits.max_bytes):
        return parse(raw, label, limits=limits)
    cl = Changelog(raw=raw, label=label)
    if not _byte_checks(raw, label, cl.findings, cl):
        return cl
    try:
        extra = load_safe(suffix.decode("utf-8"), source=label, limits=limits)
    except (YamlError, UnicodeDecodeError):
        return parse(raw, label, limits=limits)
    if not isinstance(extra, list):
        return parse(raw, label, limits=limits)
    starts = [e.start for e in base.entries] + [n + s for s in header_offsets(suffix)]
    _build(cl, [*base.data, *extra], starts)
    for old, new in zip(base.entries, cl.entries, strict=False):
        new._sig = old._sig
    return cl


def _yaml_finding(cl: Changelog, exc: YamlError) -> None:
    if isinstance(exc, LimitExceeded) or exc.kind == "limit":
        cl.findings.append(LIMIT.at(cl.label, exc.line, exc.column, exc.detail, hint=exc.hint))
        return
    rule = DUP_KEY if exc.kind == "duplicate-key" else YAML_SYNTAX
    cl.findings.append(rule.at(cl.label, exc.line, exc.column, exc.detail))


def _build(cl: Changelog, data: Any, starts: list[int]) -> None:
    """Attach the loaded document and the entry spans to ``cl``."""
    label, raw, out = cl.label, cl.raw, cl.findings
    cl.data = data
    if not isinstance(data, list):
        from inferencex_tools.schemas import kind_of

        what = "empty" if data is None else kind_of(data)
        out.append(ROOT.at(label, 1, 1, f"root must be a YAML list of entries, found {what}"))
        return
    cl.parsed = True
    cl.entries = [Entry(index=i, data=d) for i, d in enumerate(data)]
    if len(starts) == len(data):
        cl.spans_ok = True
        bounds = [*starts, len(raw)]
        for i, e in enumerate(cl.entries):
            e.start, e.span_end = bounds[i], bounds[i + 1]
            e.end = _content_end(raw, e.start, e.span_end)
            e.line = cl.line_of(e.start)
            e.last_line = cl.line_of(max(e.start, e.end - 1))
    else:
        _report_headers(cl, len(starts))
    for e in cl.entries:
        if not isinstance(e.data, dict):
            out.append(NOT_MAPPING.at(label, e.line, 1 if e.line else None,
                                        f"entry {e.number} is {_kind(e.data)}, "
                                        "not a mapping"))


def _report_headers(cl: Changelog, n_headers: int) -> None:
    """Entries whose first line is not '- config-keys:' (round-trip marks, slow path)."""
    rt: Any
    try:
        rt = load_rt(cl.text or "", source=cl.label)
    except YamlError:
        rt = None
    reported = 0
    if rt is not None and isinstance(rt, list):
        marks: Any = getattr(rt, "lc")  # noqa: B009  (ruamel CommentedSeq)
        lines = (cl.text or "").splitlines()
        for i, item in enumerate(rt):
            line, col = marks.item(i)
            text = lines[line] if line < len(lines) else ""
            first_key = next(iter(item), None) if isinstance(item, dict) else None
            if not text.startswith("- config-keys:") or first_key != "config-keys":
                reported += 1
                shown = text.strip()[:60]
                cl.findings.append(HEADER_RULE.at(
                    cl.label, line + 1, col + 1,
                    f"entry {i + 1} starts with {shown!r}; every entry must start with "
                    "'- config-keys:' at column 0",
                ))
            if i < len(cl.entries):
                cl.entries[i].line = line + 1
    if not reported:
        cl.findings.append(HEADER_RULE.at(
            cl.label, 1, 1,
            f"{n_headers} lines start with '- config-keys:' but the file has "
            f"{len(cl.entries)} entries",
        ))


def _text(value: Any) -> str:
    """A scalar as the YAML author wrote it (``true``, ``null``), not Python's ``True``."""
    if isinstance(value, str):
        return value
    from inferencex_tools.schemas import yaml_value

    return yaml_value(value, 120)


def _kind(value: Any) -> str:
    from inferencex_tools.schemas import kind_of

    return kind_of(value)
