"""Access to the JSON Schemas in ``schemas/`` (the single source of structure).

In a source checkout they live at the repository root; in a wheel they are
packaged as ``inferencex_tools/schemas``.  jsonschema is imported lazily.

:func:`schema_issues` / :func:`schema_findings` are the one place where jsonschema's
errors become ixtool's issues and findings (path, unknown key, readable message).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError
from inferencex_tools.report.findings import Finding, Rule, Severity

_HERE = Path(__file__).resolve().parent
_CANDIDATES = (_HERE / "schemas", _HERE.parent / "schemas")


def schema_dir() -> Path:
    for c in _CANDIDATES:
        if c.is_dir():
            return c
    raise InputError("ixtool's schemas/ directory is missing from the installation",
                     hint="reinstall ixtool (pip install -e .)")


@cache
def load_schema(name: str) -> dict[str, Any]:
    path = schema_dir() / f"{name}.schema.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read schema {path}: {exc.strerror}",
                         hint="reinstall ixtool (pip install -e .)") from None
    return data


def _strict_class(schema: dict[str, Any]) -> Any:
    """The schema's validator class with a strict "integer": ``4.0`` is not an integer
    (jsonschema's default accepts floats with a zero fraction); booleans never are."""
    import jsonschema

    base = jsonschema.validators.validator_for(schema)
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _c, i: isinstance(i, int) and not isinstance(i, bool))
    return jsonschema.validators.extend(base, type_checker=checker)


@cache
def validator(name: str) -> Any:
    """A compiled validator for ``schemas/<name>.schema.json`` (strict integers).

    The schemas ship with ixtool and are checked against their metaschema by the tests
    (tests/test_schema_files.py), not on every run: that check costs more than a PR
    gate's own validation."""
    schema = load_schema(name)
    return _strict_class(schema)(schema, format_checker=None)


@cache
def def_validator(name: str, definition: str) -> Any:
    """Validator for one ``$defs`` member of a schema (e.g. a changelog entry)."""
    schema = load_schema(name)
    sub = {
        "$schema": schema.get("$schema"),
        "$defs": schema.get("$defs", {}),
        "$ref": f"#/$defs/{definition}",
    }
    return _strict_class(schema)(sub)


# ------------------------------------------------------------------- schema → findings

@dataclass(frozen=True)
class SchemaIssue:
    """One schema violation in ixtool's terms (what every area's findings are made of)."""

    path: tuple[Any, ...]  # keys and indexes from the validated document's root
    keyword: str  # the failed keyword: type, required, additionalProperties, enum …
    detail: str  # jsonschema's own message
    instance: Any  # the offending value
    expected: Any  # the keyword's value in the schema (e.g. "integer" for type)
    allowed: tuple[str, ...] = ()  # additionalProperties: the declared properties

    @property
    def where(self) -> str:
        """``a/b/0``; empty at the root."""
        return "/".join(str(p) for p in self.path)

    @property
    def unknown_key(self) -> str | None:
        """additionalProperties: the first key that is not declared."""
        if self.keyword != "additionalProperties" or not isinstance(self.instance, dict):
            return None
        return next((str(k) for k in self.instance if k not in self.allowed), None)

    @property
    def at(self) -> tuple[Any, ...]:
        """Where to point: the unknown key itself, else :attr:`path`."""
        key = self.unknown_key
        return (*self.path, key) if key is not None else self.path

    @property
    def message(self) -> str:
        """A readable message for the common keywords, jsonschema's otherwise."""
        key = self.unknown_key
        if key is not None:
            return f"unknown key {key!r}"
        if self.keyword == "type":
            return (f"must be {self.expected}, found {short_repr(self.instance)} "
                    f"({type(self.instance).__name__})")
        return self.detail


_MAX_SHOWN = 200  # characters of a value shown in a message


def short_repr(value: Any, limit: int = _MAX_SHOWN) -> str:
    """``repr(value)`` cut to about ``limit`` characters, safe for any value (a huge
    integer has no decimal repr in Python; a huge string or list is not for a finding)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"<integer of {value.bit_length():,} bits>"
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"… ({len(value):,} characters)"
    if isinstance(value, list | dict | tuple) and len(value) > 20:
        return f"<{type(value).__name__} of {len(value):,} items>"
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "…"


def _bounded(text: str, limit: int = 4 * _MAX_SHOWN) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"


def schema_issues(name: str, instance: Any, *, definition: str | None = None
                  ) -> list[SchemaIssue]:
    """Validate ``instance`` against ``schemas/<name>.schema.json`` (or one of its
    ``$defs``); the violations, ordered by path."""
    v = def_validator(name, definition) if definition else validator(name)
    issues = []
    try:
        for er in v.iter_errors(instance):
            props = er.schema.get("properties") if isinstance(er.schema, dict) else None
            issues.append(SchemaIssue(
                path=tuple(er.absolute_path), keyword=str(er.validator),
                detail=_bounded(er.message), instance=er.instance, expected=er.validator_value,
                allowed=tuple(props) if isinstance(props, dict) else ()))
    except (ValueError, RecursionError) as exc:
        # jsonschema formats every offending value into its message; a value Python cannot
        # format (an integer past 4,300 decimal digits) or nesting past the stack ends here
        issues.append(SchemaIssue(
            path=(), keyword="limit", detail=f"a value cannot be checked: {_bounded(str(exc))}",
            instance=None, expected=None))
    return sorted(issues, key=lambda i: [str(p) for p in i.path])


Describe = Callable[[SchemaIssue], "tuple[Rule, str, str | None] | None"]
Locate = Callable[[SchemaIssue], "tuple[int | None, int | None]"]


def schema_findings(name: str, instance: Any, *, file: str, rule: Rule,
                    definition: str | None = None, describe: Describe | None = None,
                    locate: Locate | None = None, limit: int | None = None,
                    severity: Severity | None = None) -> list[Finding]:
    """The schema violations of ``instance`` as findings of ``file``.

    ``describe`` maps an issue to (rule, message, hint) — None drops it (e.g. a
    duplicate); by default ``rule`` with ``<where>: <message>``.  ``locate`` gives
    (line, column), by default unknown.  ``limit`` keeps the first N issues.
    """
    out: list[Finding] = []
    for issue in schema_issues(name, instance, definition=definition)[:limit]:
        described = describe(issue) if describe else (
            rule, f"{issue.where or '(root)'}: {issue.message}", None)
        if described is None:
            continue
        r, message, hint = described
        line, col = locate(issue) if locate else (None, None)
        out.append(r.at(file, line, col, message, hint=hint, severity=severity))
    return out
