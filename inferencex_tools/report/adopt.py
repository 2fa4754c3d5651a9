"""Adoption controls, pure: what a repository says about ixtool's findings.

Applied in one place (``cli.common.emit``) to the result of every command that reports
findings, in this order:

1. **settings** (``[tool.ixtool]`` in pyproject.toml or ``.ixtool.toml``, schema
   ``schemas/ixtool-config.schema.json``): per-rule severity (``"off"`` disables),
   ``disable`` (ids or prefixes), ``per-path-ignores`` (glob → ids or prefixes);
2. **known findings**: those of a baseline file, or those already present at a base ref
   (``config validate --base``), are dropped.

In a PR context (:class:`TrustedBase`) settings and baseline are the base revision's, never
the change's; :func:`settings_delta` / :func:`baseline_delta` say what the change would
alter (docs/security.md).

A finding is matched by its **fingerprint**: command, rule, repository-relative file and
identity — the message with line/column numbers removed — never by its line, so a
finding that moved because lines were inserted above it is still the same finding.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from inferencex_tools.report.findings import Finding, Result, Severity

BASELINE_VERSION = 1


@dataclass(frozen=True)
class Settings:
    severity: dict[str, str] = field(default_factory=dict)  # rule id → severity | "off"
    disable: tuple[str, ...] = ()  # rule ids or prefixes
    per_path_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, selectors)
    baseline: str | None = None
    source: str | None = None  # the file the settings came from
    layout: tuple[str, ...] = ()  # master-configs / runners-config, as written (io.layout)

    @classmethod
    def from_mapping(cls, data: dict[str, Any], source: str | None = None) -> Settings:
        """Settings from a ``[tool.ixtool]`` table already checked against its schema."""
        ppi = data.get("per-path-ignores") or {}
        return cls(
            severity={str(k): str(v) for k, v in (data.get("severity") or {}).items()},
            disable=tuple(str(x) for x in data.get("disable") or ()),
            per_path_ignores=tuple((str(g), tuple(str(r) for r in rules))
                                   for g, rules in ppi.items()),
            baseline=data.get("baseline"),
            source=source,
            layout=tuple(f"{k} = {data[k]!r}" for k in ("master-configs", "runners-config")
                         if k in data),
        )

    @property
    def empty(self) -> bool:
        return not (self.severity or self.disable or self.per_path_ignores)


@dataclass(frozen=True)
class TrustedBase:
    """A PR context: settings and baselines come from the merge-base of ``ref`` and the
    head, never from the change.  ``ref`` None: the context names no base revision
    (then none apply); ``head`` None: the head is the working tree."""

    ref: str | None
    head: str | None = None


def settings_delta(base: Settings, head: Settings) -> list[str]:
    """What ``head``'s settings change against ``base``'s, in words ([] when nothing)."""
    out: list[str] = []
    added = [x for x in head.disable if x not in base.disable]
    dropped = [x for x in base.disable if x not in head.disable]
    if added:
        out.append("disable adds " + ", ".join(added))
    if dropped:
        out.append("disable drops " + ", ".join(dropped))
    for rid in sorted(set(base.severity) | set(head.severity)):
        a, b = base.severity.get(rid), head.severity.get(rid)
        if a != b:
            out.append(f"severity of {rid}: {a or 'default'} → {b or 'default'}")
    return out + _paths_delta(base, head)


def _paths_delta(base: Settings, head: Settings) -> list[str]:
    """The per-path ignores, the baseline file and the layout keys that differ."""
    out: list[str] = []
    ba, hb = dict(base.per_path_ignores), dict(head.per_path_ignores)
    for glob in sorted(set(ba) | set(hb)):
        if ba.get(glob) != hb.get(glob):
            out.append(f"per-path-ignores {glob!r}: {', '.join(ba.get(glob, ())) or 'none'}"
                       f" → {', '.join(hb.get(glob, ())) or 'none'}")
    if base.baseline != head.baseline:
        out.append(f"baseline {base.baseline or '(default)'} → {head.baseline or '(default)'}")
    if base.layout != head.layout:
        out.append(f"where the master configs are read: {'; '.join(base.layout) or 'default'}"
                   f" → {'; '.join(head.layout) or 'default'}")
    return out


def baseline_delta(base: Counter[tuple[str, str, str, str]],
                   head: Counter[tuple[str, str, str, str]]) -> str | None:
    """The known findings ``head`` adds and drops against ``base``, in words."""
    added, dropped = head - base, base - head
    if not added and not dropped:
        return None
    rules = sorted({fp[1] for fp in added})
    parts = []
    if added:
        parts.append(f"adds {sum(added.values())} known finding(s)"
                     + (f" ({', '.join(rules[:8])}{' …' if len(rules) > 8 else ''})"
                        if rules else ""))
    if dropped:
        parts.append(f"drops {sum(dropped.values())}")
    return " and ".join(parts)


def _selected(rule: str, selectors: Iterable[str]) -> bool:
    return any(s == "*" or rule.startswith(s) for s in selectors)


def _path_match(path: str, pattern: str) -> bool:
    """``fnmatch`` on the repository-relative path (``*`` crosses ``/``); a pattern
    ending in ``/`` matches everything below that folder."""
    if pattern.endswith("/"):
        return path.startswith(pattern)
    return fnmatch.fnmatchcase(path, pattern)


def apply_settings(result: Result, settings: Settings, relpath: Callable[[str], str]) -> None:
    """Drop disabled and path-ignored findings, change severities (in place)."""
    if settings.empty:
        return
    kept: list[Finding] = []
    dropped = 0
    for f in result.findings:
        sev = settings.severity.get(f.rule)
        path = relpath(f.file)
        if sev == "off" or _selected(f.rule, settings.disable) or any(
                _path_match(path, g) and _selected(f.rule, rules)
                for g, rules in settings.per_path_ignores):
            dropped += 1
            continue
        kept.append(replace(f, severity=Severity(sev)) if sev else f)
    result.findings = kept
    if dropped:
        result.info["ignored_by_settings"] = dropped


_LINE_REF = re.compile(r"\b(?:lines?|columns?|col)\s+\d+(?:\s*[-–]\s*\d+)?|:\d+(?::\d+)?\b", re.I)


def identity(f: Finding) -> str:
    """What makes a finding the same finding across commits: its message without line and
    column numbers (``data["identity"]`` when the producer set one)."""
    ident = f.data.get("identity") if f.data else None
    if isinstance(ident, str):
        return ident
    return _LINE_REF.sub("", f.message).strip()


def fingerprint(command: str, f: Finding, relpath: Callable[[str], str]
                ) -> tuple[str, str, str, str]:
    return (command, f.rule, relpath(f.file), identity(f))


def split_known(findings: Iterable[Finding], base: Iterable[Finding],
                relpath: Callable[[str], str] = str) -> tuple[list[Finding], list[Finding]]:
    """The one "new vs already there" rule (``ci gate``'s configs stage, ``config validate
    --base``, ``review``; baselines too): (new, known).  A finding is known when ``base``
    holds one with the same fingerprint — rule, repository-relative file, identity (the
    message without line/column numbers) — as many times as it is there; a finding that
    only moved is not new."""
    return _split(findings, Counter(fingerprint("", f, relpath) for f in base), "", relpath)


def _split(findings: Iterable[Finding], known: Counter[tuple[str, str, str, str]],
           command: str, relpath: Callable[[str], str]) -> tuple[list[Finding], list[Finding]]:
    left = Counter(known)
    new: list[Finding] = []
    old: list[Finding] = []
    for f in sorted(findings, key=Finding.sort_key):
        fp = fingerprint(command, f, relpath)
        if left[fp] > 0:
            left[fp] -= 1
            old.append(f)
        else:
            new.append(f)
    return new, old


def drop_known(result: Result, known: Counter[tuple[str, str, str, str]],
               relpath: Callable[[str], str], *, reason: str) -> int:
    """Drop the findings whose fingerprint is in ``known`` (:func:`split_known`'s rule);
    returns how many were dropped and records it in ``result.info[reason]``."""
    result.findings, old = _split(result.findings, known, result.command, relpath)
    if old:
        result.info[reason] = len(old)
    return len(old)


def fingerprints(result: Result, relpath: Callable[[str], str]
                 ) -> Counter[tuple[str, str, str, str]]:
    return Counter(fingerprint(result.command, f, relpath) for f in result.findings)


def baseline_document(results: Iterable[Result], relpath: Callable[[str], str],
                      previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The baseline file for ``results``; entries of other commands in ``previous`` are
    kept (one baseline file can serve several commands)."""
    commands = set()
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for r in results:
        commands.add(r.command)
        counts.update(fingerprints(r, relpath))
    entries = [e for e in (previous or {}).get("findings", [])
               if e.get("command") not in commands]
    for (command, rule, file, ident), n in counts.items():
        e: dict[str, Any] = {"command": command, "rule": rule, "file": file,
                             "identity": ident}
        if n > 1:
            e["count"] = n
        entries.append(e)
    entries.sort(key=lambda e: (e["command"], e["file"], e["rule"], e["identity"]))
    return {"version": BASELINE_VERSION, "tool": "ixtool", "findings": entries}


def baseline_known(doc: dict[str, Any]) -> Counter[tuple[str, str, str, str]]:
    """The fingerprints a baseline document (already schema-checked) holds."""
    out: Counter[tuple[str, str, str, str]] = Counter()
    for e in doc.get("findings", []):
        out[(e["command"], e["rule"], e["file"], e["identity"])] += int(e.get("count", 1))
    return out
