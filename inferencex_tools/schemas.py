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
from inferencex_tools.report.words import plural

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
        """A readable message in YAML's vocabulary (``null``, ``true``, "a list") for the
        keywords the schemas use; jsonschema's own text only for the rare others."""
        key = self.unknown_key
        if key is not None:
            return f"unknown key {key!r}"
        words = _KEYWORD_MESSAGES.get(self.keyword)
        return words(self) if words else self.detail


_TYPE_WORDS = {"string": "a string", "array": "a list", "object": "a mapping",
               "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "null"}


def _type_words(expected: Any) -> str:
    names = expected if isinstance(expected, list) else [expected]
    return " or ".join(_TYPE_WORDS.get(str(n), str(n)) for n in names)


def kind_of(value: Any) -> str:
    """What a loaded YAML value is, in YAML's words: ``null``, ``a boolean``, ``a list``…"""
    if value is None:
        return "null"
    for t, words in ((bool, "a boolean"), (int, "an integer"), (float, "a number"),
                     (str, "a string"), (list, "a list"), (dict, "a mapping")):
        if isinstance(value, t):
            return words
    return type(value).__name__


def yaml_value(value: Any, limit: int = 200) -> str:
    """A value as YAML would show it (``null``, ``true``, ``"text"``, ``[a, b]``), cut to
    about ``limit`` characters; never Python's spelling (``None``, ``True``, ``'x'``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return short_repr(value, limit)
    if isinstance(value, str):
        shown = json.dumps(value[:limit], ensure_ascii=False)
        return shown if len(value) <= limit else shown + f"… ({len(value):,} characters)"
    if isinstance(value, list | tuple):
        if len(value) > 20:
            return f"a list of {len(value):,} items"
        text = "[" + ", ".join(yaml_value(v, limit) for v in value) + "]"
    elif isinstance(value, dict):
        if len(value) > 20:
            return f"a mapping of {len(value):,} keys"
        text = "{" + ", ".join(f"{k}: {yaml_value(v, limit)}" for k, v in value.items()) + "}"
    else:
        return short_repr(value, limit)
    return text if len(text) <= limit else text[:limit] + "…"


def found(value: Any) -> str:
    """A found value and its kind for a message: ``5 (an integer)``, ``null``."""
    shown = yaml_value(value, 80)
    kind = kind_of(value)
    return shown if kind == "null" or shown.startswith(("a list of", "a mapping of")) \
        else f"{shown} ({kind})"


_KEYWORD_MESSAGES: dict[str, Callable[[SchemaIssue], str]] = {
    "type": lambda i: f"must be {_type_words(i.expected)}, found {found(i.instance)}",
    "required": lambda i: "missing required key " + ", ".join(
        repr(k) for k in (i.expected or []) if not (isinstance(i.instance, dict)
                                                    and k in i.instance)),
    "enum": lambda i: (f"{yaml_value(i.instance, 80)} is not allowed; use one of "
                       + ", ".join(yaml_value(v, 40) for v in (i.expected or []))),
    "const": lambda i: f"must be {yaml_value(i.expected, 80)}, found {yaml_value(i.instance, 80)}",
    "pattern": lambda i: (f"{yaml_value(i.instance, 80)} does not have the expected form "
                          f"(pattern {i.expected})"),
    "minItems": lambda i: (f"must have at least {plural(i.expected, 'item')}, "
                           f"found {len(i.instance) if isinstance(i.instance, list) else 0}"),
    "uniqueItems": lambda i: f"has repeated items: {yaml_value(i.instance, 120)}",
    "minLength": lambda i: (f"must have at least {plural(i.expected, 'character')}, found "
                            f"{yaml_value(i.instance, 80)}"),
    "minimum": lambda i: f"must be at least {i.expected}, found {yaml_value(i.instance, 40)}",
    "maximum": lambda i: f"must be at most {i.expected}, found {yaml_value(i.instance, 40)}",
    "exclusiveMinimum": lambda i: (f"must be more than {i.expected}, found "
                                   f"{yaml_value(i.instance, 40)}"),
    "minProperties": lambda i: f"must have at least {plural(i.expected, 'key')}",
}


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
    return sorted(_one_required_per_object(issues), key=lambda i: [str(p) for p in i.path])


def _one_required_per_object(issues: list[SchemaIssue]) -> list[SchemaIssue]:
    """jsonschema reports each missing required key apart; the message of a ``required``
    issue names all of them, so one issue per object is enough."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for i in issues:
        if i.keyword == "required":
            if i.path in seen:
                continue
            seen.add(i.path)
        out.append(i)
    return out


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
