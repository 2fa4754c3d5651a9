"""The changelog gate, pure: bytes in, findings out (spec §1–§3, tightened).

* :func:`validate_standalone` — one snapshot: file invariants + schema; history
  quirks (whitespace-only lines, odd separators, non-canonical links) are warnings.
* :func:`analyze_change` — base vs head: entry-level alignment (deleted, changed,
  inserted mid-file, link corrections, appended), byte-level rules for the
  appended block, link rules (main or PR mode), config keys, scaffold markers.
  Unlike the reference it does not stop at the first problem.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from inferencex_tools.changelog.configkeys import resolve_items
from inferencex_tools.changelog.layout import (
    Block,
    Separator,
    gap_words,
    history_change,
    line_changes,
    separators,
)
from inferencex_tools.changelog.links import DEFAULT_REPO, check_new_link, is_canonical
from inferencex_tools.changelog.model import Changelog, Entry, parse, parse_extending
from inferencex_tools.changelog.rules import (
    APPEND_ONLY_MIX,
    BASE_INVALID,
    CHANGED,
    CORRECTION_BYTES,
    CORRECTION_LINK,
    CR,
    DELETED,
    GLOB_EMPTY,
    HISTORY_BLANKS,
    HISTORY_BYTES,
    HISTORY_LINK,
    INSERTED,
    INVISIBLE_TEXT,
    KEY_INVISIBLE,
    KEY_UNKNOWN,
    LINE_SEP,
    LINK_FOLDED,
    LINK_MAIN,
    LINK_PR,
    MIXED,
    NO_CONFIGS,
    NUL,
    SCAFFOLD,
    SCHEMA,
    SEPARATOR_BEFORE,
    SEPARATOR_BETWEEN,
    SEPARATOR_STYLE,
    TAB,
    TRAILING_BLANK,
    TRAILING_WS,
    UNKNOWN_KEY,
)
from inferencex_tools.report.findings import Finding, Rule, Severity
from inferencex_tools.report.words import plural
from inferencex_tools.safetext import code_points, invisible_chars, shown
from inferencex_tools.schemas import SchemaIssue

_SCAFFOLD_RX = re.compile(r"\bTEMP\b|\bDO[ _-]?NOT[ _-]?MERGE\b|\bDNM\b", re.I)
_TEMP_CASE_RX = re.compile(r"\bTEMP\b")
_SCHEMA_NAME = "perf-changelog"
_KNOWN_KEYS = ("config-keys", "description", "pr-link", "evals-only", "all-evals",
               "append-only", "eval-min-prefill-ep", "scenario-type")


@dataclass
class Options:
    repo: str = DEFAULT_REPO
    pr: int | None = None
    master_keys: list[str] | None = None  # None: configs unavailable
    pending: bool = False  # no PR yet (pre-commit, local branch): XXX is the expected link


@dataclass
class ChangeAnalysis:
    """Everything the gate learned about a base → head change."""

    base: Changelog
    head: Changelog
    findings: list[Finding] = field(default_factory=list)
    new_entries: list[Entry] = field(default_factory=list)  # head entries that are new
    appended: bool = True  # all new entries sit after every base entry
    corrections: list[tuple[Entry, Entry]] = field(default_factory=list)  # (base, head)
    structural: bool = False  # deleted/changed entries (history semantically altered)
    history_changed: bool = False  # a non-blank historical line removed or rewritten (CL404)
    history_layout: bool = False  # history's blank lines or spacing changed (CL411)

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)


# ---------------------------------------------------------------------------- schema

def schema_findings(cl: Changelog, entries: list[Entry], severity: Severity | None = None
                    ) -> list[Finding]:
    """Validate entries against schemas/perf-changelog.schema.json (line-precise)."""
    from inferencex_tools.schemas import schema_findings as findings_of

    out: list[Finding] = []
    for e in entries:
        if isinstance(e.data, dict):
            out += findings_of(_SCHEMA_NAME, e.data, definition="entry", file=cl.label,
                               rule=SCHEMA, describe=partial(_describe, e),
                               locate=_entry_locator(cl, e), severity=severity)
    return out


def _entry_locator(cl: Changelog, e: Entry) -> Callable[[SchemaIssue], tuple[int | None,
                                                                             int | None]]:
    """(line, column) of an issue inside entry ``e``; the entry is loaded round-trip for
    marks on the first call only (the failure path)."""
    from inferencex_tools.io.yamlio import rt_path_position

    loaded: list[Any] = []

    def locate(issue: SchemaIssue) -> tuple[int | None, int | None]:
        if not loaded:
            loaded.append(_rt_entry(cl, e))
        if loaded[0] is not None and e.line is not None:
            rl, rc = rt_path_position(loaded[0], list(issue.at))
            if rl is not None:
                return e.line + rl - 1, rc
        return e.line, 1

    return locate


def _rt_entry(cl: Changelog, e: Entry) -> Any:
    """Round-trip load of one entry's block, for marks (only on the failure path)."""
    from inferencex_tools.errors import YamlError
    from inferencex_tools.io.yamlio import load_rt

    if e.start < 0:
        return None
    try:
        doc = load_rt(cl.raw[e.start:e.end], source=cl.label)
    except YamlError:
        return None
    return doc[0] if isinstance(doc, list) and doc else None


def _describe(e: Entry, issue: SchemaIssue) -> tuple[Rule, str, str | None]:
    """(rule, message, hint) of a schema issue in entry ``e``."""
    head = e.describe()
    key, first = issue.unknown_key, (issue.path[0] if issue.path else None)
    if key is not None:
        spelled = key.replace("_", "-")
        if spelled in _KNOWN_KEYS:
            return (UNKNOWN_KEY, f"{head}: key {key!r} is the Python field name, not the "
                    "YAML key", f"write '{spelled}:' (with a hyphen)")
        return UNKNOWN_KEY, f"{head}: unknown key {key!r}", None
    if issue.keyword == "required":
        return SCHEMA, f"{head}: {issue.message}", None
    if issue.keyword == "const" and first in ("evals-only", "all-evals"):
        return (APPEND_ONLY_MIX, f"{head}: append-only cannot be combined with {first}: "
                "true", None)
    rule = SCHEMA
    where = issue.where or "entry"
    msg = f"{head}: {where}: {issue.message}"
    if issue.keyword == "type" and first == "eval-min-prefill-ep":
        rule = APPEND_ONLY_MIX if e.data.get("append-only") is True else SCHEMA
    elif issue.keyword == "type" and issue.instance is None:
        msg = f"{head}: {where} has no value"
    return rule, msg, None


# ---------------------------------------------------------------------- standalone

def _whitespace_findings(cl: Changelog, lines: range | None = None,
                         severity: Severity | None = None) -> list[Finding]:
    out = []
    text_lines = cl.raw.split(b"\n")
    rng = lines if lines is not None else range(1, len(text_lines) + 1)
    for n in rng:
        if n - 1 >= len(text_lines):
            break
        ln = text_lines[n - 1].rstrip(b"\r")
        if ln and ln != ln.rstrip(b" \t"):
            what = "whitespace-only line" if not ln.strip() else "trailing whitespace"
            out.append(TRAILING_WS.at(cl.label, n, len(ln.rstrip(b" \t")) + 1, what,
                                        severity=severity))
    return out


def _separator_findings(cl: Changelog) -> list[Finding]:
    out = []
    for prev, nxt in zip(cl.entries, cl.entries[1:], strict=False):
        if prev.end < 0:
            break
        sep = cl.raw[prev.end:nxt.start]
        if sep != b"\n":
            shown = sep.decode("utf-8", "replace").replace("\n", "\\n")
            out.append(SEPARATOR_STYLE.at(
                cl.label, cl.line_of(prev.end), 1,
                f"between entries {prev.number} and {nxt.number}: separator {shown!r} is not "
                "exactly one empty line"))
    return out


def validate_standalone(raw: bytes, label: str, opts: Options) -> Changelog:
    """Whole-file check; returns the parsed changelog with its findings filled in."""
    cl = parse(raw, label)
    if not cl.parsed:
        return cl
    cl.findings.extend(schema_findings(cl, cl.entries))
    if cl.spans_ok:
        cl.findings.extend(_whitespace_findings(cl))
        cl.findings.extend(_separator_findings(cl))
        if cl.raw.endswith(b"\n\n"):
            cl.findings.append(TRAILING_BLANK.at(
                label, cl.line_of(len(cl.raw) - 1), 1, "file ends with a blank line",
                severity=Severity.WARNING))
    for e in cl.entries:
        if not isinstance(e.data, dict):
            continue
        line, folded = cl.link_line(e)
        link = e.link
        if folded:
            cl.findings.append(LINK_FOLDED.at(
                label, line, 3, f"{e.describe()}: pr-link value is on a continuation line",
                severity=Severity.WARNING))
        if not is_canonical(link, opts.repo):
            cl.findings.append(HISTORY_LINK.at(
                label, line or e.line, 3,
                f"{e.describe()}: pr-link {link!r} is not a canonical "
                f"https://github.com/{opts.repo}/pull/N URL"))
    return cl


# Rules that report history's quirks in a whole-file (standalone) check: bytes that are
# immutable once merged, so nobody can act on them in the file itself.
HISTORY_QUIRKS = frozenset({TRAILING_WS.id, SEPARATOR_STYLE.id, HISTORY_LINK.id,
                            LINK_FOLDED.id, TRAILING_BLANK.id})


@dataclass
class Folded:
    """A standalone check's findings with the history quirks taken out."""

    findings: list[Finding]
    quirks: dict[str, int]  # rule id → count, for the quirks that are not listed

    def summary(self, listing: str | None = "--history lists them") -> str | None:
        """``95 history quirks not listed: CL301×47, …; --history lists them``."""
        n = sum(self.quirks.values())
        if not n:
            return None
        rules = ", ".join(r if c == 1 else f"{r}×{c}" for r, c in sorted(self.quirks.items()))
        return f"{plural(n, 'history quirk')} not listed: {rules}" + (
            f"; {listing}" if listing else "")


def fold_history_quirks(findings: list[Finding], *, listed: bool) -> Folded:
    """The standalone check's default: history quirks are counted, not listed, and never
    fail a run (``--strict`` included).  ``listed``: each quirk is a note instead."""
    from dataclasses import replace

    out = [f for f in findings if f.rule not in HISTORY_QUIRKS]
    quirks = [f for f in findings if f.rule in HISTORY_QUIRKS]
    if listed:
        return Folded(out + [replace(f, severity=Severity.NOTE) for f in quirks], {})
    return Folded(out, dict(Counter(f.rule for f in quirks)))


# --------------------------------------------------------------------------- change

def _changed_fields(a: Any, b: Any) -> list[str]:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return ["<entry>"]
    keys = list(dict.fromkeys([*a, *b]))
    return [str(k) for k in keys if a.get(k, None) != b.get(k, None) or (k in a) != (k in b)]


_LINE_RULES = {CR.id, TAB.id, NUL.id, LINE_SEP.id, TRAILING_WS.id}


def analyze_change(base_raw: bytes, head_raw: bytes, label: str, opts: Options,
                   *, base_label: str | None = None,
                   base_parsed: Changelog | None = None) -> ChangeAnalysis:
    """Judge the change ``base_raw`` → ``head_raw`` (spec §3, tightened).

    ``base_parsed`` may carry an already parsed base snapshot with the same bytes
    (history replays reuse the previous head), saving one full YAML load.
    """
    base, as_is = _read_base(base_raw, base_label or f"{label}@base", base_parsed)
    base_raw = base.raw
    head = parse_extending(base, head_raw, label)
    a = ChangeAnalysis(base=base, head=head)
    new_lines = line_changes(base_raw, head_raw).added
    # the head's own file-level problems (line rules: new lines only)
    a.findings += [f for f in head.findings
                   if f.rule not in _LINE_RULES or f.line in new_lines]
    invalid = _base_invalid(as_is or base, head)
    if invalid is not None:
        a.findings.append(invalid)
    if not head.parsed or not head.spans_ok:
        return a
    if not base.parsed or not base.spans_ok:
        _on_added_lines(a, opts, new_lines)
        return a
    _align(a)
    if not a.structural and not a.new_entries and not a.corrections:
        if base_raw and base_raw != head_raw:
            _layout(a)
        return a
    _change_rules(a, opts, label, new_lines)
    return a


def _read_base(raw: bytes, label: str, parsed: Changelog | None
               ) -> tuple[Changelog, Changelog | None]:
    """(the base the change is compared with, the base as it is when that differs).  A base
    without its final newline (CL101: the base's, CL120) is read as repaired: the change
    that adds the newline changes nothing of its last entry (a block scalar there would
    otherwise gain a line break: "changed", real #333)."""
    as_is = None
    if raw and not raw.endswith(b"\n"):
        as_is = parse(raw, label)
        raw += b"\n"
    if parsed is not None and parsed.raw == raw:
        return parsed, as_is
    return (parse(raw, label) if raw else _empty(label)), as_is


def _base_invalid(base: Changelog, head: Changelog) -> Finding | None:
    """BASE_INVALID (a warning) when the base snapshot is unparsable or has errors of its
    own: they are the base's, not the change's.  The change is judged against the base as
    read (its entries when they load, else the lines the change adds); what the head still
    has wrong is reported on the head by its own rules."""
    first = next((f for f in base.findings if f.severity is Severity.ERROR), None)
    if base.parsed and first is None:
        return None
    detail = (f"{first.rule} {first.message}" + (f" at line {first.line}" if first.line
                                                else "")) if first else "unparsable"
    kept = first is not None and any(f.rule == first.rule and f.severity is Severity.ERROR
                                     for f in head.findings)
    state = "the head still has it" if kept else "the change repairs it"
    how = ("the change is judged against its entries" if base.parsed and base.spans_ok else
           "its entries cannot be read, so the change is judged on the lines it adds "
           "(deleted or edited history is not checked)")
    return BASE_INVALID.at(head.label, None, None, f"the base snapshot {base.label} is not a "
                           f"valid changelog ({detail}; {state}): not the change's error; "
                           f"{how}")


def _on_added_lines(a: ChangeAnalysis, opts: Options, new_lines: set[int]) -> None:
    """A base whose entries cannot be read (YAML error): the head's entries with a line the
    change adds are judged as new, and of their findings those on lines the change adds
    (or on no line) are the change's — a repaired header of a historical entry does not
    make its old link or keys the change's."""
    a.new_entries = [e for e in a.head.entries if e.line is not None
                     and e.last_line is not None
                     and any(n in new_lines for n in range(e.line, e.last_line + 1))]
    a.appended = False
    before = len(a.findings)
    _new_entry_rules(a, opts, new_lines)
    a.findings[before:] = [f for f in a.findings[before:]
                           if f.line is None or f.line in new_lines]


def _change_rules(a: ChangeAnalysis, opts: Options, label: str, new_lines: set[int]) -> None:
    """The rules of a change that adds entries or corrects links (after alignment)."""
    if a.corrections and a.new_entries:
        a.findings.append(MIXED.at(label, a.new_entries[0].line, 1,
                                   f"{plural(len(a.corrections), 'pr-link correction')} and "
                                   f"{plural(len(a.new_entries), 'new entry', 'new entries')} "
                                   "in one change"))
    if not a.structural:
        if a.new_entries:
            _layout(a)
        elif a.corrections and not a.new_entries:
            _correction_bytes(a)
    _new_entry_rules(a, opts, new_lines)
    for b_e, h_e in a.corrections:
        line, _ = a.head.link_line(h_e)
        if not is_canonical(h_e.link, opts.repo):
            a.findings.append(CORRECTION_LINK.at(
                label, line or h_e.line, 3,
                f"{h_e.describe()}: corrected pr-link {h_e.link!r} (was {b_e.link!r}) is not "
                f"a canonical https://github.com/{opts.repo}/pull/N URL"))


def _empty(label: str | None) -> Changelog:
    """The base of a changelog that does not exist yet: no entries, no bytes."""
    return Changelog(raw=b"", label=label or "<none>", text="", data=[], parsed=True,
                     spans_ok=True)


def _related(b: Entry, h: Entry) -> bool:
    """Whether a head entry at a base entry's place is that entry edited (not a new one)."""
    bm, hm = b.mapping, h.mapping
    if not bm or not hm:
        return False
    if bm.get("config-keys") == hm.get("config-keys") or bm.get("description") == hm.get(
        "description"
    ):
        return True
    link = bm.get("pr-link")
    return isinstance(link, str) and link == hm.get("pr-link") and link.rstrip("/")[-1:].isdigit()


_LOOKAHEAD = 64  # head entries searched for a base entry's edited form


def _align(a: ChangeAnalysis) -> None:
    """Match base entries to head entries: kept, link-corrected, changed, deleted, new.

    Entries are matched by deep equality (a difflib alignment of their canonical
    JSON); inside a non-matching stretch, a head entry takes the place of a base
    entry (changed / corrected) only when it is related to it (same config-keys,
    description or PR link); otherwise the base entry was deleted and the head
    entry is new.  A new entry before any kept base entry is "inserted mid-file".
    """
    base, head = a.base.entries, a.head.entries
    if len(base) <= len(head) and all(
            b.data is h.data for b, h in zip(base, head[:len(base)], strict=True)):
        a.new_entries = head[len(base):]  # the head extends the base's own parse
        return
    bs = [e.signature for e in base]
    hs = [e.signature for e in head]
    if bs == hs[: len(bs)]:
        a.new_entries = head[len(bs):]
        return
    kept: list[tuple[int, int]] = []  # (base index, head index): equal or paired
    deleted: list[int] = []
    new: list[int] = []
    sm = difflib.SequenceMatcher(None, bs, hs, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            kept += [(i1 + k, j1 + k) for k in range(i2 - i1)]
        else:
            _match_stretch(a, range(i1, i2), range(j1, j2), kept, deleted, new)
    kept.sort()
    _moved(a, deleted, new)
    _report_deleted(a, deleted, kept)
    _report_new(a, new, kept)


def _match_stretch(a: ChangeAnalysis, b_idx: range, h_idx: range, kept: list[tuple[int, int]],
                   deleted: list[int], new: list[int]) -> None:
    """One non-matching stretch: related pairs are kept (changed or corrected), the other
    base entries deleted, the other head entries new."""
    base, head = a.base.entries, a.head.entries
    bi, hj = b_idx.start, h_idx.start
    i2, j2 = b_idx.stop, h_idx.stop
    while bi < i2 or hj < j2:
        if bi < i2 and hj < j2 and _related(base[bi], head[hj]):
            _pair(a, base[bi], head[hj])
            kept.append((bi, hj))
            bi += 1
            hj += 1
        elif bi < i2 and (hj >= j2 or not any(
                _related(base[bi], head[x]) for x in range(hj, min(j2, hj + _LOOKAHEAD)))):
            deleted.append(bi)
            bi += 1
        else:
            new.append(hj)
            hj += 1


def _report_deleted(a: ChangeAnalysis, deleted: list[int], kept: list[tuple[int, int]]) -> None:
    for bi in deleted:
        b_e = a.base.entries[bi]
        a.structural = True
        before = [h for b2, h in kept if b2 < bi]  # where the entry used to be
        a.findings.append(DELETED.at(
            a.head.label, _deleted_anchor(a.head, before[-1] + 1 if before else 0), 1,
            f"{b_e.describe()} (base line {b_e.line}) was deleted"))


def _report_new(a: ChangeAnalysis, new: list[int], kept: list[tuple[int, int]]) -> None:
    """New entries; one before a kept base entry is inserted mid-file (not appended)."""
    last_kept = max((h for _, h in kept), default=-1)
    for hj in new:
        h_e = a.head.entries[hj]
        a.new_entries.append(h_e)
        if hj < last_kept:
            a.appended = False
            nxt_b = min(b2 for b2, h in kept if h > hj)
            a.findings.append(INSERTED.at(
                a.head.label, h_e.line, 1,
                f"new {h_e.describe()} is inserted before existing "
                f"{a.base.entries[nxt_b].describe()}; new entries go at the end of the file"))


def _moved(a: ChangeAnalysis, deleted: list[int], new: list[int]) -> None:
    """A base entry that reappears unchanged elsewhere was moved, not deleted and re-added:
    one CL402 finding, and it is not a new entry.  Removes the pairs from both lists."""
    by_sig: dict[str, list[int]] = {}
    for hj in new:
        by_sig.setdefault(a.head.entries[hj].signature, []).append(hj)
    for bi in list(deleted):
        b_e = a.base.entries[bi]
        spots = by_sig.get(b_e.signature)
        if not spots:
            continue
        hj = spots.pop(0)
        deleted.remove(bi)
        new.remove(hj)
        h_e = a.head.entries[hj]
        a.structural = True
        a.findings.append(CHANGED.at(
            a.head.label, h_e.line, 1,
            f"{b_e.describe()} was moved to position {h_e.number}; history keeps its order"))


def _pair(a: ChangeAnalysis, b_e: Entry, h_e: Entry) -> None:
    """A head entry in a base entry's place: a link-only correction or a change."""
    bd = {k: v for k, v in b_e.mapping.items() if k != "pr-link"}
    hd = {k: v for k, v in h_e.mapping.items() if k != "pr-link"}
    if isinstance(b_e.data, dict) and isinstance(h_e.data, dict) and bd == hd:
        a.corrections.append((b_e, h_e))
        return
    a.structural = True
    fields = ", ".join(_changed_fields(b_e.data, h_e.data))
    a.findings.append(CHANGED.at(
        a.head.label, _first_changed_line(a, b_e, h_e), 1,
        f"{b_e.describe()} was changed (fields: {fields}); history is immutable "
        "apart from link-only corrections"))


def _first_changed_line(a: ChangeAnalysis, b_e: Entry, h_e: Entry) -> int | None:
    """The head line where a changed entry first differs from its base bytes."""
    if h_e.start < 0 or b_e.start < 0 or h_e.line is None:
        return h_e.line
    old = a.base.raw[b_e.start:b_e.end].split(b"\n")
    new = a.head.raw[h_e.start:h_e.end].split(b"\n")
    for n, line in enumerate(new):
        if n >= len(old) or old[n] != line:
            return h_e.line + n
    return h_e.line


def _deleted_anchor(head: Changelog, j: int) -> int | None:
    if j < len(head.entries):
        return head.entries[j].line
    return head.entries[-1].last_line if head.entries else 1


def _layout(a: ChangeAnalysis) -> None:
    """History's lines and the change's own separators (module ``layout``): judged on the
    lines the change adds, never on bytes the base already had."""
    base, head, label = a.base.raw, a.head.raw, a.head.label
    blocks = [Block(e.line, e.last_line) for e in sorted(a.new_entries, key=lambda e: e.start)
              if e.line is not None and e.last_line is not None]
    hist = history_change(base, head, blocks)
    if hist.removed:
        line, was = hist.removed[0]
        a.history_changed = True
        more = (f" (and {plural(len(hist.removed) - 1, 'other line')})"
                if len(hist.removed) > 1 else "")
        a.findings.append(HISTORY_BYTES.at(
            label, line, 1, f"the change removes or rewrites the historical line "
            f"{_shown(was)}{more}: history is immutable, and the repository's changelog "
            "processing refuses a deleted line"))
    if hist.layout:
        a.history_layout = True
        a.findings.append(HISTORY_BLANKS.at(
            label, hist.first_layout(), 1, f"the change {hist.describe_layout()} in history "
            f"(first at line {hist.first_layout()}); history's bytes are immutable"))
    if not a.appended:
        return
    for sep in separators(base, head, blocks):
        _separator_finding(a, sep)


def _shown(line: bytes) -> str:
    return repr(line.decode("utf-8", "replace"))


def _separator_finding(a: ChangeAnalysis, sep: Separator) -> None:
    label = a.head.label
    e = next(x for x in a.new_entries if x.line == sep.block.first)
    added = gap_words(sep.added)
    if sep.kind == "end":
        a.findings.append(TRAILING_BLANK.at(
            label, a.head.line_of(len(a.head.raw) - 1), 1,
            f"the file ends with {added} after the last entry"))
    elif sep.kind == "between":
        a.findings.append(SEPARATOR_BETWEEN.at(
            label, e.line, 1, f"{e.describe()} is separated from the previous new entry by "
            f"{added}, not exactly one empty line"))
    elif sep.kept:
        a.findings.append(SEPARATOR_BEFORE.at(
            label, e.line, 1, f"{e.describe()}: the change adds {added} before it, after "
            f"{gap_words(sep.kept)} already at the end of the base; add at most one empty "
            "line"))
    else:
        a.findings.append(SEPARATOR_BEFORE.at(
            label, e.line, 1, f"{e.describe()} is separated from history by {added}, not "
            "exactly one empty line"))


def _correction_bytes(a: ChangeAnalysis) -> None:
    bl = a.base.raw.splitlines(keepends=True)
    hl = a.head.raw.splitlines(keepends=True)
    label = a.head.label
    if len(bl) != len(hl):
        a.findings.append(CORRECTION_BYTES.at(
            label, None, None,
            f"a pr-link correction may not add or delete lines ({len(bl)} → {len(hl)})"))
        return
    changed = 0
    for n, (x, y) in enumerate(zip(bl, hl, strict=True), 1):
        if x == y:
            continue
        changed += 1
        if not (x.startswith(b"  pr-link:") and y.startswith(b"  pr-link:")
                and x.endswith(b"\n") and y.endswith(b"\n")):
            a.findings.append(CORRECTION_BYTES.at(
                label, n, 1, f"line {n} changed but is not a '  pr-link:' line"))
    if changed and changed != len(a.corrections) and not any(
        f.rule == CORRECTION_BYTES.id for f in a.findings
    ):
        a.findings.append(CORRECTION_BYTES.at(
            label, None, None,
            f"{plural(changed, 'pr-link line')} changed for "
            f"{plural(len(a.corrections), 'corrected entry', 'corrected entries')}"))


def _new_entry_rules(a: ChangeAnalysis, opts: Options, new_lines: set[int]) -> None:
    head, out, label = a.head, a.findings, a.head.label
    out.extend(schema_findings(head, a.new_entries))
    for e in a.new_entries:
        if not isinstance(e.data, dict):
            continue
        if e.line is not None and e.last_line is not None:
            rng = range(e.line, e.last_line + 1)
            out.extend(_whitespace_findings(head, rng))
        out.extend(_new_link(head, e, opts))
        out.extend(_scaffold_markers(head, e))
        out.extend(_invisible(head, e))
        _key_rules(a, e, opts)
    if a.new_entries and opts.master_keys is None:
        out.append(NO_CONFIGS.at(label, None, None,
                                 "no master configs found; config keys of new entries "
                                 "were not checked"))


def _new_link(head: Changelog, e: Entry, opts: Options) -> list[Finding]:
    """A new entry's pr-link: on its own line, and XXX or the canonical URL."""
    link_line, folded = head.link_line(e)
    if folded:
        return [LINK_FOLDED.at(head.label, link_line, 3,
                               f"{e.describe()}: pr-link value is on a continuation line")]
    if "pr-link" in e.mapping and isinstance(e.mapping.get("pr-link"), str):
        v = check_new_link(e.link, opts.repo, opts.pr, pending=opts.pending)
        if not v.ok:
            # one rule per mistake, whatever the mode: not a canonical PR URL (CL501), or
            # not this change's link: a placeholder, another PR (CL502)
            rule = LINK_MAIN if v.kind == "malformed" else LINK_PR
            hint = (f"{rule.fix}; `ixtool changelog validate --fix` does it" if v.fixable
                    else None)
            return [rule.at(head.label, link_line or e.line, 3, f"{e.describe()}: {v.message}",
                            hint=hint, data={"fixable": v.fixable})]
    return []


def _scaffold_markers(head: Changelog, e: Entry) -> list[Finding]:
    """TEMP / DO NOT MERGE / DNM left in a new entry."""
    out: list[Finding] = []
    block = head.raw[e.start:e.end].decode("utf-8", "replace") if e.start >= 0 else ""
    for n, text in enumerate(block.split("\n")):
        m = _SCAFFOLD_RX.search(text)
        if m and (m.group(0).upper() != "TEMP" or _TEMP_CASE_RX.search(text)):
            out.append(SCAFFOLD.at(head.label, (e.line or 1) + n, m.start() + 1,
                                   f"{e.describe()}: scaffold marker {m.group(0)!r}"))
    return out


_FIELD = re.compile(r"^(?:- |  )([A-Za-z0-9_-]+)\s*:")


def _invisible(head: Changelog, e: Entry) -> list[Finding]:
    """Invisible or bidirectional characters in a new entry: in its config-keys an error
    (CL604: the item does not name the key it looks like), elsewhere a warning (CL304)."""
    block = head.raw[e.start:e.end].decode("utf-8", "replace") if e.start >= 0 else ""
    if block.isascii():
        return []
    out: list[Finding] = []
    field_name: str | None = None
    for n, text in enumerate(block.split("\n")):
        m = _FIELD.match(text)
        field_name = m.group(1) if m else field_name
        hits = invisible_chars(text)
        if not hits:
            continue
        line, col = (e.line or 1) + n, hits[0][0] + 1
        hint = f"delete {code_points(c for _, c in hits)}"
        value = shown(text.strip().removeprefix("- ").removeprefix(f"{field_name}:").strip())
        if field_name == "config-keys":
            out.append(KEY_INVISIBLE.at(
                head.label, line, col, f"entry {e.number}: config key {value} "
                "holds invisible or bidirectional characters: it does not name the key it "
                "looks like", hint=hint))
        else:
            out.append(INVISIBLE_TEXT.at(
                head.label, line, col, f"entry {e.number}: {field_name or 'text'} "
                f"{value} holds invisible or bidirectional characters: it may "
                "read differently from what it is", hint=hint + " unless it is meant"))
    return out


def _item_line(lines: list[bytes], item: str, first: int | None) -> int | None:
    """Line of a ``config-keys`` item inside an entry block (exact item first)."""
    needle = item.encode()
    for n, text in enumerate(lines):
        if n and text.strip().removeprefix(b"-").strip().strip(b"'\"") == needle:
            return (first or 1) + n
    for n, text in enumerate(lines):
        if n and needle in text:
            return (first or 1) + n
    return first


def _key_rules(a: ChangeAnalysis, e: Entry, opts: Options) -> None:
    if opts.master_keys is None:
        return
    items = e.mapping.get("config-keys")
    if not isinstance(items, list):
        return
    lines = a.head.raw[e.start:e.end].split(b"\n") if e.start >= 0 else []
    for r in resolve_items([str(i) for i in items if isinstance(i, str)], opts.master_keys):
        if r.matches:
            continue
        line = _item_line(lines, r.item, e.line)
        if r.is_glob:
            out = GLOB_EMPTY.at(a.head.label, line, None,
                                  f"{e.describe()}: pattern {r.item!r} matches no key of the "
                                  "master configs")
        else:
            close = difflib.get_close_matches(r.item, opts.master_keys, n=1)
            hint = f"did you mean {close[0]!r}?" if close else None
            out = KEY_UNKNOWN.at(a.head.label, line, None,
                                   f"{e.describe()}: config key {r.item!r} is not defined in "
                                   "the master configs", hint=hint)
        a.findings.append(out)
