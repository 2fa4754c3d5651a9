"""Merge-time byte surgery on ``perf-changelog.yaml`` (spec §6), pure: bytes in, bytes out.

* :func:`canonicalize` — the PR's appended entries get the PR's URL instead of the
  ``XXX`` placeholder; nothing else changes, except the layout warnings (entries written
  mid-file, odd separators, blank lines at the end or in history: CL403, CL407–CL409,
  CL411), which it repairs as ``validate --fix`` does, so main never takes them.
* :func:`resolve_conflict` — main moved on: keep main's bytes exactly and re-append
  the PR's entries (or re-apply its pr-link corrections).

Both run the strict gate (:func:`~inferencex_tools.changelog.validate.analyze_change`
in PR mode) before and after the surgery and raise
:class:`~inferencex_tools.errors.ConflictError` with the exact reason instead of
producing anything doubtful.  Improvements on the reference (spec §12):

* G10 — a PR entry is dropped only when main already holds *this PR's* entry (same
  content and this PR's URL, or the same placeholder link at the same position), not
  merely an entry with the same keys and description;
* G11 — a link written on a continuation line is rewritten onto one line;
* G12 — ``repo`` is honoured for the expected URL and for every link check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.changelog.fix import fix_change, replace_link
from inferencex_tools.changelog.links import check_new_link, check_slug, pr_url
from inferencex_tools.changelog.model import Changelog, Entry, canonical_json, parse_extending
from inferencex_tools.changelog.rules import (
    HISTORY_BLANKS,
    INSERTED,
    LINK_FOLDED,
    LINK_MAIN,
    LINK_PR,
    MERGE_DROPPED,
    MERGE_TWIN,
    NO_CONFIGS,
    SEPARATOR_BEFORE,
    SEPARATOR_BETWEEN,
    TRAILING_BLANK,
)
from inferencex_tools.changelog.validate import ChangeAnalysis, Options, analyze_change
from inferencex_tools.errors import ConflictError, UsageError
from inferencex_tools.report.findings import Finding, Severity

__all__ = ["MergeOutcome", "canonicalize", "resolve_conflict"]

# Rules that say nothing useful at merge time: config keys are not checked here.
_SILENT = frozenset({NO_CONFIGS.id})
# A folded link on an appended entry is repaired by the surgery itself (G11).
_REPAIRED = frozenset({LINK_FOLDED.id})
# The layout warnings canonicalize repairs as ``validate --fix`` does.
_LAYOUT = frozenset({INSERTED.id, SEPARATOR_BEFORE.id, SEPARATOR_BETWEEN.id,
                     TRAILING_BLANK.id, HISTORY_BLANKS.id})
_MAX_REASONS = 5


@dataclass
class MergeOutcome:
    data: bytes  # the resulting file bytes
    changed: bool  # data != the input head (canonicalize) / ours (resolve_conflict)
    message: str  # one human line
    findings: list[Finding] = field(default_factory=list)  # warnings only; errors raise


# ---------------------------------------------------------------------------- helpers

def _check_args(pr: int, repo: str) -> None:
    if isinstance(pr, bool) or not isinstance(pr, int) or pr < 1:
        raise UsageError(f"invalid PR number {pr!r}", hint="pass a positive integer")
    check_slug(repo)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _where(f: Finding) -> str:
    return f"{f.file}:{f.line}" if f.line is not None else f.file


def _reasons(errors: list[Finding]) -> str:
    shown = [f"{_where(f)} [{f.rule}] {f.message}" for f in errors[:_MAX_REASONS]]
    more = len(errors) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _errors(findings: list[Finding], tolerate: frozenset[str]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.ERROR and f.rule not in tolerate]


def _warnings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings
            if f.severity is not Severity.ERROR and f.rule not in _SILENT]


def _gate(base: bytes, head: bytes, *, label: str, base_label: str, repo: str, pr: int,
          refusal: str, tolerate: frozenset[str] = frozenset(),
          base_parsed: Changelog | None = None) -> ChangeAnalysis:
    """The gate in PR mode; any error becomes a ConflictError starting ``refusal``."""
    a = analyze_change(base, head, label, Options(repo=repo, pr=pr, master_keys=None),
                       base_label=base_label, base_parsed=base_parsed)
    errors = _errors(a.findings, tolerate)
    if errors:
        raise ConflictError(f"{refusal}: {_reasons(errors)}", hint=_gate_hint(errors, pr))
    return a


def _gate_hint(errors: list[Finding], pr: int) -> str:
    """What to do about the gate's errors: --fix when it can repair them all."""
    fixable = {LINK_PR.id, LINK_FOLDED.id}
    if all(f.rule in fixable and f.data.get("fixable", True) for f in errors):
        return (f"ixtool changelog validate --base origin/main --pr {pr} --fix writes this "
                "PR's URL; then run the command again")
    return ("fix the change (ixtool changelog validate --base origin/main --pr "
            f"{pr} lists every finding; --fix repairs placeholder links and the layout, "
            "history is restored by hand), then run the command again")


def _check_links(a: ChangeAnalysis, repo: str, pr: int, refusal: str) -> None:
    """Links of appended entries the gate could not judge (folded values, G11)."""
    for e in a.new_entries:
        line, folded = a.head.link_line(e)
        if not folded:
            continue
        verdict = check_new_link(e.link, repo, pr)
        if not verdict.ok:
            rule = LINK_MAIN if verdict.kind == "malformed" else LINK_PR
            raise ConflictError(f"{refusal}: {a.head.label}:{line} [{rule.id}] "
                                f"{e.describe()}: {verdict.message}",
                                hint=_gate_hint([rule.at(a.head.label, line, 3, "",
                                                         data={"fixable": verdict.fixable})],
                                                pr))


def _link_line_or_refuse(cl: Changelog, e: Entry, what: str) -> bool:
    """The entry's folded flag; refuses when no ``  pr-link:`` line can be found."""
    line, folded = cl.link_line(e)
    if line is None:
        raise ConflictError(f"{what}: could not locate exactly one '  pr-link:' line in "
                            f"{e.describe()} ({cl.label}:{e.line})")
    return folded


def _signature(data: Any) -> str:
    """An entry's content without its link (spec §6.1)."""
    body = {k: v for k, v in data.items() if k != "pr-link"} if isinstance(data, dict) else data
    return canonical_json(body)


def _changed(a: Entry, b: Entry) -> str:
    """Names of the fields (other than pr-link) that differ between two entries."""
    x, y = a.mapping, b.mapping
    keys = [k for k in dict.fromkeys([*x, *y]) if k != "pr-link"]
    return ", ".join(str(k) for k in keys if (k in x) != (k in y) or x.get(k) != y.get(k)) or "?"


def _splice(raw: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    """Replace ``raw[start:end]`` by each new block, working from the end of the file."""
    out = raw
    for start, end, block in sorted(edits, key=lambda t: t[0], reverse=True):
        out = out[:start] + block + out[end:]
    return out


# ------------------------------------------------------------------------ canonicalize

def canonicalize(base_raw: bytes, head_raw: bytes, *, pr: int, repo: str,
                 label: str = "perf-changelog.yaml",
                 base_parsed: Changelog | None = None) -> MergeOutcome:
    """Give the PR's appended entries the PR's URL (spec §6.2; G11, G12 fixed).

    ``base_raw`` is the changelog at the merge-base, ``head_raw`` the PR's version;
    ``base_parsed`` may carry ``parse(base_raw)`` when the caller has it (replays).
    Raises :class:`ConflictError` when the change does not pass the strict gate in
    PR mode, or (a bug) when the result would not.
    """
    _check_args(pr, repo)
    original = head_raw
    refusal = f"{label}: refusing to canonicalize for PR #{pr}"
    a = _gate(base_raw, head_raw, label=label, base_label=f"{label}@base", repo=repo, pr=pr,
              refusal=refusal, tolerate=_REPAIRED, base_parsed=base_parsed)
    _check_links(a, repo, pr, refusal)
    laid_out: list[str] = []
    if a.new_entries and any(f.rule in _LAYOUT for f in a.findings):
        # the layout rules are warnings ``validate --fix`` repairs: the merge repairs
        # them too, so main never takes them (issue 33, D7)
        fixed = fix_change(a, Options(repo=repo, pr=pr, master_keys=None))
        if fixed.data is not None:
            head_raw, laid_out = fixed.data, fixed.applied
            a = _gate(base_raw, head_raw, label=label, base_label=f"{label}@base", repo=repo,
                      pr=pr, refusal=refusal, tolerate=_REPAIRED, base_parsed=a.base)
    if not a.new_entries:
        msg = (f"no appended entry ({_plural(len(a.corrections), 'pr-link correction')} "
               "passed through): nothing to canonicalize" if a.corrections
               else "no appended entry: nothing to canonicalize")
        return MergeOutcome(head_raw, False, msg, _warnings(a.findings))
    expected = pr_url(repo, pr)
    edits: list[tuple[int, int, bytes]] = []
    replaced = unfolded = 0
    for e in a.new_entries:
        folded = _link_line_or_refuse(a.head, e, refusal)
        if e.link == expected and not folded:
            continue
        if e.link == expected:
            unfolded += 1
        else:
            replaced += 1
        edits.append((e.start, e.end, replace_link(a.head.block(e), expected)))
    if not edits and not laid_out:
        n = len(a.new_entries)
        what = "the appended entry links" if n == 1 else f"all {n} appended entries link"
        return MergeOutcome(head_raw, False, f"already canonical: {what} to {expected}",
                            _warnings(a.findings))
    data = _splice(head_raw, edits)
    final = _gate(base_raw, data, label=label, base_label=f"{label}@base", repo=repo, pr=pr,
                  refusal=f"{label}: internal error: the canonicalized file fails the gate",
                  base_parsed=a.base)
    parts = [f"laid out: {'; '.join(laid_out)}"] if laid_out else []
    if replaced:
        parts.append(f"replaced {_plural(replaced, 'placeholder link')} with {expected}")
    if unfolded:
        parts.append(f"rewrote {_plural(unfolded, 'folded link')} onto one line")
    return MergeOutcome(data, data != original, "; ".join(parts), _warnings(final.findings))


# --------------------------------------------------------------------- resolve-conflict

def resolve_conflict(merge_base_raw: bytes, ours_raw: bytes, theirs_raw: bytes, *, pr: int,
                     repo: str, label: str = "perf-changelog.yaml",
                     merge_base_parsed: Changelog | None = None) -> MergeOutcome:
    """Main's bytes + the PR's contribution (spec §6.3; G10, G11, G12 fixed).

    ``ours`` is the PR side, ``theirs`` the main side, ``merge_base`` their common
    ancestor (``merge_base_parsed``: its parse, when the caller has it).  Raises
    :class:`ConflictError` with the reason when the two sides cannot be combined
    safely.
    """
    _check_args(pr, repo)
    refusal = f"{label}: cannot resolve the conflict for PR #{pr}"
    if not merge_base_raw:
        raise ConflictError(f"{refusal}: the merge-base has no changelog (both sides created "
                            "the file); resolve by hand")
    a = _gate(merge_base_raw, ours_raw, label=f"{label}@ours", base_label=f"{label}@merge-base",
              repo=repo, pr=pr, refusal=f"{refusal}: the PR side fails the gate",
              tolerate=_REPAIRED, base_parsed=merge_base_parsed)
    _check_links(a, repo, pr, refusal)
    # main usually extends the merge-base: only its new entries are loaded then
    main = parse_extending(a.base, theirs_raw, f"{label}@theirs")
    main_errors = _errors(main.findings, frozenset())
    if main_errors or not main.parsed or not main.spans_ok:
        detail = _reasons(main_errors) if main_errors else "entries cannot be mapped to lines"
        raise ConflictError(f"{refusal}: the main side is not a valid changelog: {detail}")
    if a.new_entries:
        data, message, notes = _re_append(a, main, repo, pr, refusal)
    elif a.corrections:
        data, message, notes = _re_correct(a, main, refusal)
    else:
        raise ConflictError(f"{refusal}: the PR side has no appended entry or pr-link "
                            "correction to preserve")
    final = _gate(theirs_raw, data, label=label, base_label=f"{label}@theirs", repo=repo, pr=pr,
                  refusal=f"{label}: internal error: the resolution fails the gate against main",
                  base_parsed=main)
    return MergeOutcome(data, data != ours_raw, message, notes + _warnings(final.findings))


def _already_on_main(p: Entry, main: Changelog, expected: str) -> Entry | None:
    """Main's copy of this PR's entry: same content and this PR's URL, or the same
    link (placeholder) at the same position.  Another PR's entry with the same keys
    and description is *not* a copy (G10)."""
    sig = _signature(p.data)
    for m in main.entries:
        if _signature(m.data) != sig:
            continue
        if m.link == expected or (m.link == p.link and m.index == p.index):
            return m
    return None


def _re_append(a: ChangeAnalysis, main: Changelog, repo: str, pr: int, refusal: str
               ) -> tuple[bytes, str, list[Finding]]:
    expected = pr_url(repo, pr)
    notes: list[Finding] = []
    blocks: list[bytes] = []
    dropped: list[str] = []
    sigs: dict[str, Entry] = {}
    for m in main.entries:
        sigs.setdefault(_signature(m.data), m)
    for p in a.new_entries:
        copy = _already_on_main(p, main, expected)
        if copy is not None:
            dropped.append(f"{p.describe()} is already on main as {copy.describe()}")
            notes.append(MERGE_DROPPED.at(
                main.label, copy.line, 1,
                f"{p.describe()} is already on main as {copy.describe()}; not appended again"))
            continue
        twin = sigs.get(_signature(p.data))
        if twin is not None:
            notes.append(MERGE_TWIN.at(
                a.head.label, p.line, 1,
                f"{p.describe()} has the same content as main's {twin.describe()}; kept, "
                "because it is a different PR's entry"))
        folded = _link_line_or_refuse(a.head, p, refusal)
        block = a.head.block(p)
        if p.link != expected or folded:
            block = replace_link(block, expected)
        blocks.append(block)
    if not blocks:
        raise ConflictError(f"{refusal}: no changelog contribution remaining: "
                            + "; ".join(dropped))
    main_raw = main.raw
    sep = b"" if main_raw.endswith(b"\n\n") else b"\n"
    data = main_raw + sep + b"\n".join(blocks)
    msg = (f"kept main's {_plural(len(main.entries), 'entry', 'entries')} and re-appended "
           f"{_plural(len(blocks), 'PR entry', 'PR entries')} with {expected}")
    if dropped:
        msg += f" ({len(dropped)} already on main)"
    return data, msg, notes


def _re_correct(a: ChangeAnalysis, main: Changelog, refusal: str
                ) -> tuple[bytes, str, list[Finding]]:
    edits: list[tuple[int, int, bytes]] = []
    present = 0
    for b_e, h_e in a.corrections:
        n = b_e.number
        if b_e.index >= len(main.entries):
            raise ConflictError(f"{refusal}: main is missing corrected entry {n} "
                                f"({b_e.describe()}); main has only "
                                f"{_plural(len(main.entries), 'entry', 'entries')}")
        m = main.entries[b_e.index]
        if _signature(m.data) != _signature(b_e.data):
            raise ConflictError(f"{refusal}: main changed corrected entry {n} "
                                f"({b_e.describe()}; fields: {_changed(b_e, m)}); "
                                "resolve by hand")
        if m.link == h_e.link:
            present += 1
            continue
        if m.link != b_e.link:
            raise ConflictError(f"{refusal}: conflicting pr-link for entry {n}: main has "
                                f"{m.link!r}, the PR sets {h_e.link!r} (merge-base "
                                f"{b_e.link!r})")
        folded = _link_line_or_refuse(main, m, refusal)
        if folded:
            raise ConflictError(f"{refusal}: main's entry {n} has its pr-link on a "
                                "continuation line; a correction cannot be applied as a "
                                "one-line change; resolve by hand")
        edits.append((m.start, m.end, replace_link(main.block(m), h_e.link)))
    if not edits:
        raise ConflictError(f"{refusal}: no changelog contribution remaining: the PR's "
                            f"{_plural(present, 'pr-link correction')} "
                            f"{'is' if present == 1 else 'are'} already present on main")
    data = _splice(main.raw, edits)
    msg = (f"kept main's bytes and re-applied {_plural(len(edits), 'pr-link correction')}"
           + (f" ({present} already on main)" if present else ""))
    return data, msg, []
