"""Findings and the rule registry.

Every check ixtool performs is a :class:`Rule` with a stable id (``CL106``,
``SW210`` …), a default severity, a one-line summary and a generic fix.  Domain
code creates findings with ``RULE.at(file, line, col, message, hint=…)`` and
collects them in a :class:`Result`; nothing here prints.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    fix: str
    area: str

    def at(
        self,
        file: str,
        line: int | None,
        column: int | None,
        message: str,
        *,
        hint: str | None = None,
        severity: Severity | None = None,
        data: dict[str, Any] | None = None,
    ) -> Finding:
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            file=file,
            line=line,
            column=column,
            message=message,
            hint=hint if hint is not None else self.fix,
            data=dict(data or {}),
        )


RULES: dict[str, Rule] = {}


def rule(rule_id: str, severity: Severity | str, summary: str, fix: str, *, area: str) -> Rule:
    """Register a rule (module import time) and return it."""
    if rule_id in RULES:
        raise ValueError(f"rule id {rule_id} registered twice")
    r = Rule(rule_id, Severity(severity), summary, fix, area)
    RULES[rule_id] = r
    return r


def all_rules() -> list[Rule]:
    """Every rule of every area (imports the domain modules that register them)."""
    import importlib

    for mod in (
        "inferencex_tools.changelog.rules",
        "inferencex_tools.sweep.rules",
        "inferencex_tools.policy.rules",
        "inferencex_tools.ci.rules",
        "inferencex_tools.merge.rules",
        "inferencex_tools.launch.rules",
        "inferencex_tools.al.rules",
    ):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:  # an area not built yet
            if exc.name is None or not mod.startswith(exc.name):
                raise
    return sorted(RULES.values(), key=lambda r: r.id)


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    file: str
    line: int | None
    column: int | None
    message: str
    hint: str | None = None
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.file, self.line or 0, self.column or 0, self.rule)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity.value,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "hint": self.hint,
        }
        if self.data:
            d["data"] = self.data
        return d


@dataclass
class Result:
    """Findings of one command run, plus what was checked (for summaries)."""

    command: str
    findings: list[Finding] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    fixes: list[str] = field(default_factory=list)
    # what the command did (written, appended, resolved): plain lines in text output
    done: list[str] = field(default_factory=list)
    strict: bool = False  # --strict: warnings fail too (``ok``, the exit code, the reports)

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def extend(self, findings: Iterable[Finding]) -> None:
        self.findings.extend(findings)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.sorted())

    def sorted(self) -> list[Finding]:
        return sorted(self.findings, key=Finding.sort_key)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        """No errors (and no warnings under ``strict``): what every report says and the
        exit code follows."""
        return not self.errors and not (self.strict and self.warnings)

    def exit_code(self, *, strict: bool = False) -> int:
        """0 clean, 1 findings (errors; warnings too with ``strict`` or :attr:`strict`)."""
        if self.errors or ((strict or self.strict) and self.warnings):
            return 1
        return 0
