"""Which lines a change adds, which of history's lines it changes, and how it lays out
its entries — judged on the change's own lines only (issue 33, D7).

Pure: base and head bytes (and the head's new entries) in, facts out.  A separator or a
blank line at the end of the file that the base already had is history's, not the
change's: the change is judged by what it adds.  ``validate`` turns the facts into
findings:

* a historical line that is not blank was removed, changed or added to (re-quoting,
  trailing whitespace stripped after text, a comment written into history): CL404,
  an error — the repository's own changelog processing fails on such a diff
  ("Deletions are not allowed"), and history is immutable;
* only blank lines of history changed (a whitespace-only line emptied, a blank line
  added or removed): CL411, a warning ``--fix`` repairs;
* the lines the change adds before, between and after its entries: CL407 / CL408 /
  CL409, warnings ``--fix`` repairs (the blank lines the base already ends with are
  the base's; the change may add at most one empty line after them).
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field

from inferencex_tools.report.words import plural

_DIFF_CELLS = 4_000_000  # above this many line pairs the middle is compared as a multiset


def lines_of(raw: bytes) -> list[bytes]:
    """The file's lines without their ``\\n`` (a final newline ends the last line)."""
    out = raw.split(b"\n")
    return out[:-1] if raw.endswith(b"\n") else out


def blank(line: bytes) -> bool:
    return not line.strip(b" \t\r")


def comment(line: bytes) -> bool:
    return line.lstrip(b" \t").startswith(b"#")


@dataclass
class LineChanges:
    """A line diff of base → head (1-based line numbers)."""

    added: set[int] = field(default_factory=set)  # head lines not paired with a base line
    removed: dict[int, int] = field(default_factory=dict)  # base line → head line at its place


def line_changes(base: bytes, head: bytes) -> LineChanges:
    """The one line diff of the changelog: ``validate``'s per-line rules and the layout
    rules judge the same added lines.  A base line keeps its place when only its newline
    was added (a base without a final newline, then an append).  Common leading and
    trailing lines are trimmed first; a small middle is diffed line by line, a large one
    (a whole-file reformat) is judged as a multiset (a line is kept while an equal line on
    the other side is left to pair it with)."""
    out = LineChanges()
    if base == head:
        return out
    if (head.startswith(base) and base.endswith(b"\n")) or not base:
        # a plain append (the common case): counted, not split
        last = head.count(b"\n") + (0 if head.endswith(b"\n") else 1)
        out.added = set(range(base.count(b"\n") + 1, last + 1))
        return out
    bl, hl = lines_of(base), lines_of(head)
    lo = 0
    while lo < len(bl) and lo < len(hl) and bl[lo] == hl[lo]:
        lo += 1
    hi_b, hi_h = len(bl), len(hl)
    while hi_b > lo and hi_h > lo and bl[hi_b - 1] == hl[hi_h - 1]:
        hi_b -= 1
        hi_h -= 1
    mid_b, mid_h = bl[lo:hi_b], hl[lo:hi_h]
    if len(mid_b) * len(mid_h) <= _DIFF_CELLS:
        sm = difflib.SequenceMatcher(None, mid_b, mid_h, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag != "equal":
                out.added.update(range(lo + j1 + 1, lo + j2 + 1))
                out.removed.update({lo + i + 1: lo + j1 + 1 for i in range(i1, i2)})
        return out
    left = Counter(mid_h)
    for i, line in enumerate(mid_b):
        if left[line] > 0:
            left[line] -= 1
        else:
            out.removed[lo + i + 1] = lo + 1
    right = Counter(mid_b)
    for j, line in enumerate(mid_h):
        if right[line] > 0:
            right[line] -= 1
        else:
            out.added.add(lo + j + 1)
    return out


@dataclass(frozen=True)
class Block:
    """A new entry's lines in the head (first and last line, 1-based)."""

    first: int
    last: int


@dataclass
class HistoryChange:
    """What a change did to history's lines (outside its entries and their separators)."""

    # historical lines that are not blank, removed or rewritten (head line at their
    # place, the base line): what git diff shows as a deleted line
    removed: list[tuple[int, bytes]] = field(default_factory=list)
    blank_added: list[int] = field(default_factory=list)  # head lines
    blank_removed: list[int] = field(default_factory=list)  # head lines at their place
    other: list[int] = field(default_factory=list)  # other lines added or re-spaced

    @property
    def layout(self) -> int:
        return len(self.blank_added) + len(self.blank_removed) + len(self.other)

    def first_layout(self) -> int:
        return min(self.blank_added + self.blank_removed + self.other)

    def describe_layout(self) -> str:
        parts = []
        if self.blank_added:
            parts.append(f"adds {plural(len(self.blank_added), 'blank line')}")
        if self.blank_removed:
            parts.append(f"removes or empties {plural(len(self.blank_removed), 'blank line')}")
        if self.other:
            parts.append(f"adds or re-spaces {plural(len(self.other), 'other line')}")
        return ", ".join(parts)


def _gap_before(lines: list[bytes], first: int) -> list[int]:
    """The blank or comment lines right before head line ``first`` (1-based)."""
    out = []
    n = first - 1
    while n >= 1 and (blank(lines[n - 1]) or comment(lines[n - 1])):
        out.append(n)
        n -= 1
    return out[::-1]


def _gap_after(lines: list[bytes], last: int) -> list[int]:
    out = []
    n = last + 1
    while n <= len(lines) and (blank(lines[n - 1]) or comment(lines[n - 1])):
        out.append(n)
        n += 1
    return out


def _last_lines(raw: bytes) -> list[bytes]:
    """The file's last line that is not blank and the lines after it (all of them when
    every line is blank): :func:`base_tail`'s input without splitting the whole file."""
    end = len(raw)
    while end:
        start = raw.rfind(b"\n", 0, end - 1) + 1
        if not blank(raw[start:end].rstrip(b"\n")):
            return lines_of(raw[start:])
        end = start
    return lines_of(raw)


def base_tail(base_lines: list[bytes]) -> list[bytes]:
    """The blank lines the base ends with: a separator waiting for the next entry."""
    n = len(base_lines)
    while n >= 1 and blank(base_lines[n - 1]):
        n -= 1
    return base_lines[n:]


def runs(lines: list[bytes], blocks: list[Block]) -> list[list[Block]]:
    """The new entries in runs of consecutive ones (only blank or comment lines between)."""
    out: list[list[Block]] = []
    for b in blocks:
        prev = out[-1][-1].last if out else 0
        if out and b.first - 1 in (prev, *_gap_after(lines, prev)):
            out[-1].append(b)
        else:
            out.append([b])
    return out


def history_of(head: bytes, blocks: list[Block]) -> tuple[list[bytes], list[int], set[int]]:
    """The head's lines without the change's entries and the blank or comment lines around
    them, each with its head line number, and the places (1-based positions in that list)
    where a run of new entries sat between historical lines: the separator the base had
    there is the run's business (CL403), not a change to history."""
    hl = lines_of(head)
    drop: set[int] = set()
    seams: list[int] = []
    for run in runs(hl, blocks):
        start = (_gap_before(hl, run[0].first) or [run[0].first])[0]
        after = _gap_after(hl, run[-1].last)
        end = after[-1] if after else run[-1].last
        drop.update(range(start, end + 1))
        if end < len(hl):  # historical lines follow: the run sits between them
            seams.append(end + 1)
        else:  # the run ends the file: everything after it is the change's
            drop.update(range(end + 1, len(hl) + 1))
    keep = [n for n in range(1, len(hl) + 1) if n not in drop]
    place = {n: j for j, n in enumerate(keep, 1)}
    return [hl[n - 1] for n in keep], keep, {place[n] for n in seams if n in place}


def history_change(base: bytes, head: bytes, blocks: list[Block]) -> HistoryChange:
    """History's lines the change touched.

    ``removed``: the base's non-blank lines a plain line diff of base → head shows as
    removed (git diff's ``-`` lines: the repository's changelog processing refuses them).
    The rest is layout: the head without the change's entries and their separators
    (:func:`history_of`) against the base, the blank lines the base ends with aside (the
    separator of the next entry)."""
    if not base or (base.endswith(b"\n") and head.startswith(base)):
        # every historical line is kept as it was; what follows the base's bytes is the
        # change's, judged by ``separators`` (the common case: a plain append)
        return HistoryChange()
    bl = lines_of(base)
    plain = line_changes(base, head)
    out = HistoryChange(removed=[(h, bl[b - 1]) for b, h in sorted(plain.removed.items())
                                 if not blank(bl[b - 1])])
    gone = {b for b, _ in plain.removed.items() if not blank(bl[b - 1])}
    hist, origin, seams = history_of(head, blocks)
    tail = len(bl) - len(base_tail(bl))
    ch = line_changes(b"".join(x + b"\n" for x in bl), b"".join(x + b"\n" for x in hist))

    def at(j: int) -> int:  # the head line of history line j (1-based), or after the last
        return origin[j - 1] if j <= len(origin) else (origin[-1] + 1 if origin else 1)

    for j in sorted(ch.added):
        (out.blank_added if blank(hist[j - 1]) else out.other).append(at(j))
    for b_n, j in sorted(ch.removed.items()):
        if b_n > tail or b_n in gone or (j in seams and blank(bl[b_n - 1])):
            continue
        (out.blank_removed if blank(bl[b_n - 1]) else out.other).append(at(j))
    if out.removed:  # history must be restored anyway (CL404): its layout is no news
        out.blank_added, out.blank_removed, out.other = [], [], []
    return out


def gap_words(lines: list[bytes]) -> str:
    """``no empty line``, ``2 empty lines``, ``a whitespace-only line``, …"""
    if not lines:
        return "no empty line"
    empty = sum(1 for x in lines if not x.strip(b"\r"))
    comments = sum(1 for x in lines if comment(x))
    spaces = len(lines) - empty - comments
    parts = []
    for n, what in ((empty, "empty line"), (spaces, "whitespace-only line"),
                    (comments, "comment line")):
        if n:
            parts.append(f"{'an' if what[0] == 'e' else 'a'} {what}" if n == 1
                         else plural(n, what))
    return " and ".join(parts)


@dataclass
class Separator:
    """A gap the change is responsible for, with what it added there."""

    kind: str  # "before" (history → first new entry), "between", "end"
    block: Block
    added: list[bytes]  # the gap lines the change added
    kept: list[bytes]  # the gap lines the base already had (its blank lines at the end)


def separators(base: bytes, head: bytes, blocks: list[Block]) -> list[Separator]:
    """The separators of appended entries that are not exactly one empty line: before
    the first (after the blank lines the base ends with, unchanged, the change may add at
    most one empty line), between them, and after the last (nothing)."""
    hl = lines_of(head)
    out = []
    tail = [x.rstrip(b"\r") for x in base_tail(_last_lines(base))]
    for i, b in enumerate(blocks):
        gap = [hl[n - 1].rstrip(b"\r") for n in _gap_before(hl, b.first)]  # CR: CL102
        if i:
            if gap != [b""]:
                out.append(Separator("between", b, gap, []))
            continue
        kept = tail if tail and gap[:len(tail)] == tail else []
        added = gap[len(kept):]
        ok = (not added if b.first == 1 else
              added in ([], [b""]) if kept else added == [b""])
        if not ok:
            out.append(Separator("before", b, added, kept))
    if blocks:
        trail = [hl[n - 1] for n in _gap_after(hl, blocks[-1].last)]
        if trail:
            out.append(Separator("end", blocks[-1], trail, []))
    return out
