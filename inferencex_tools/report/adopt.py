"""Adoption controls, pure: what a repository says about ixtool's findings.

Applied in one place (``cli.common.emit``) to the result of every command that reports
findings, in this order:

1. **settings** (``[tool.ixtool]`` in pyproject.toml or ``.ixtool.toml``, schema
   ``schemas/ixtool-config.schema.json``): per-rule severity (``"off"`` disables),
   ``disable`` (ids or prefixes), ``per-path-ignores`` (glob → ids or prefixes);
2. **known findings**: those of a baseline file, or those already present at a base ref
   (``config validate --base``), are dropped.

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
        )

    @property
    def empty(self) -> bool:
        return not (self.severity or self.disable or self.per_path_ignores)


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


def drop_known(result: Result, known: Counter[tuple[str, str, str, str]],
               relpath: Callable[[str], str], *, reason: str) -> int:
    """Drop the findings whose fingerprint is in ``known`` (as many times as it is
    there); returns how many were dropped and records it in ``result.info[reason]``."""
    left = Counter(known)
    kept: list[Finding] = []
    dropped = 0
    for f in result.sorted():
        fp = fingerprint(result.command, f, relpath)
        if left[fp] > 0:
            left[fp] -= 1
            dropped += 1
            continue
        kept.append(f)
    result.findings = kept
    if dropped:
        result.info[reason] = dropped
    return dropped


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
