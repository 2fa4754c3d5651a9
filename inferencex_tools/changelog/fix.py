"""Safe fixes for the new entries of a change (``validate --fix``), pure.

The output is always *base bytes* + one empty line + the new entries' blocks,
each normalised (trailing whitespace stripped, exactly one empty line between
entries, one final newline) with placeholder-like links replaced: entries written
mid-file move to the end (CL403), separators and the end of the file are normalised
(CL407/CL408/CL409), and history's layout is restored (CL411: the base bytes are the
history).  A fix is refused when history itself changed (deleted or edited entries,
a historical line that is not blank removed or rewritten: CL401/CL402/CL404).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from inferencex_tools.changelog.layout import lines_of
from inferencex_tools.changelog.links import PLACEHOLDER, check_new_link, pr_url
from inferencex_tools.changelog.model import Changelog, Entry
from inferencex_tools.changelog.rules import SEPARATOR_BEFORE
from inferencex_tools.changelog.validate import ChangeAnalysis, Options
from inferencex_tools.report.words import plural

_LINK_RX = re.compile(rb"^  pr-link:[^\n]*\n((?:    [^\n]*\n|[ ]*\n(?=    ))*)", re.M)


@dataclass
class FixOutcome:
    data: bytes | None  # None: nothing to fix, or refused
    applied: list[str] = field(default_factory=list)
    refused: str | None = None


def replace_link(block: bytes, new_link: str) -> bytes:
    """Replace the ``  pr-link:`` line (and a folded continuation) inside one block."""
    m = _LINK_RX.search(block)
    if m is None:
        return block
    return block[: m.start()] + f"  pr-link: {new_link}\n".encode() + block[m.end():]


def _normalise_block(block: bytes) -> bytes:
    lines = block.rstrip(b"\n").split(b"\n")
    return b"\n".join(ln.rstrip(b" \t\r") for ln in lines) + b"\n"


def _has_trailing_ws(block: bytes) -> bool:
    return any(ln != ln.rstrip(b" \t\r") for ln in block.split(b"\n"))


def fix_change(a: ChangeAnalysis, opts: Options, *, placeholder: bool = True) -> FixOutcome:
    """Safe fixes for the new entries; ``data`` is base bytes + the fixed new blocks.

    A placeholder-like link becomes the PR's URL when ``opts.pr`` is known, else 'XXX'
    (what a branch carries until its PR exists) — or stays as it is with ``placeholder``
    False (a review without a PR number: its gate judges in main mode, where 'XXX' is
    CL502 too)."""
    head, base = a.head, a.base
    refused = _refusal(a)
    if refused is not None:
        return FixOutcome(None, refused=refused)
    restored = ["restored history's blank lines and spacing from the base"] \
        if a.history_layout else []
    if not a.new_entries:
        return FixOutcome(base.raw, restored) if restored else FixOutcome(None)
    if not a.findings:  # clean: its layout is fine as it is
        return FixOutcome(None)
    applied: list[str] = []
    blocks: list[bytes] = []
    kept: list[bytes] = []  # the blocks as written (for the layout comparison)
    for e in a.new_entries:
        block = head.raw[e.start:e.end]
        kept.append(block if block.endswith(b"\n") else block + b"\n")
        blocks.append(_fixed_block(head, e, block, opts, applied, placeholder))
    sep = _separator(a)
    result = base.raw + sep + b"\n".join(blocks)
    if result == head.raw:
        return FixOutcome(None)
    if not a.appended:
        moved = plural(len(a.new_entries), "new entry", "new entries")
        applied.append(f"moved {moved} to the end of the file")
    elif head.raw != base.raw + sep + b"\n".join(kept) and not restored:
        applied.append("normalised the separators and the final newline of the new entries")
    return FixOutcome(result, applied + restored)


def _separator(a: ChangeAnalysis) -> bytes:
    """What goes between the base bytes and the first new entry: the change's own lines
    there when they are fine (no CL407), else one empty line — none after the blank lines
    the base already ends with (the separator is the base's then)."""
    base, head = a.base.raw, a.head.raw
    first = min(a.new_entries, key=lambda e: e.start)
    if (a.appended and head.startswith(base)
            and not any(f.rule == SEPARATOR_BEFORE.id for f in a.findings)):
        return head[len(base):first.start]
    return b"" if not base or not lines_of(base)[-1].strip(b" \t\r") else b"\n"


def fix_in_place(a: ChangeAnalysis, opts: Options, *, placeholder: bool = True) -> FixOutcome:
    """The per-entry fixes of :func:`fix_change` (trailing whitespace, the pr-link) with
    every new entry left where it is: what can be suggested on the PR's own lines when
    the whole fix also moves entries."""
    head = a.head
    if _refusal(a) is not None or not a.new_entries:
        return FixOutcome(None)
    applied: list[str] = []
    out = bytearray()
    pos = 0
    for e in sorted(a.new_entries, key=lambda e: e.start):
        block = head.raw[e.start:e.end]
        fixed = _fixed_block(head, e, block, opts, applied, placeholder)
        if not block.endswith(b"\n"):
            fixed = fixed.rstrip(b"\n")
        out += head.raw[pos:e.start] + fixed
        pos = e.end
    out += head.raw[pos:]
    result = bytes(out)
    return FixOutcome(result if result != head.raw else None, applied)


def _refusal(a: ChangeAnalysis) -> str | None:
    """Why the change cannot be fixed safely (None: it can)."""
    head, base = a.head, a.base
    if not head.parsed or not head.spans_ok:
        return "the file does not parse; fix the YAML first"
    if not base.parsed or not base.spans_ok:
        return "the base's entries cannot be read (CL120); lay out the change by hand"
    if a.structural:
        return ("historical entries were deleted or edited; restore them by hand "
                "(git checkout BASE -- FILE) and re-run")
    if a.corrections:
        return ("the change also corrects historical pr-links; split the corrections and "
                "the new entries into separate PRs")
    if a.history_changed:
        return ("a historical line was removed or rewritten; restore it "
                "(git checkout BASE -- FILE) and append your entry at the end")
    return None


def _fixed_block(head: Changelog, e: Entry, block: bytes, opts: Options,
                 applied: list[str], placeholder: bool) -> bytes:
    """One new entry's block, normalised, with a placeholder-like or folded link rewritten."""
    norm = _normalise_block(block)
    if _has_trailing_ws(block):
        applied.append(f"{e.describe()}: stripped trailing whitespace / CR")
    _, folded = head.link_line(e)
    verdict = check_new_link(e.link, opts.repo, opts.pr, pending=opts.pending)
    new_link: str | None = None
    if not verdict.ok and verdict.fixable and (opts.pr is not None or placeholder):
        new_link = pr_url(opts.repo, opts.pr) if opts.pr is not None else PLACEHOLDER
    elif folded and isinstance(e.mapping.get("pr-link"), str):
        new_link = e.link
    if (new_link is not None and new_link != e.link) or folded:
        norm = replace_link(norm, new_link if new_link is not None else e.link)
        applied.append(f"{e.describe()}: pr-link → {new_link or e.link}")
    return norm
