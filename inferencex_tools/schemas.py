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
def _def_schema(name: str, definition: str) -> dict[str, Any]:
    schema = load_schema(name)
    return {
        "$schema": schema.get("$schema"),
        "$defs": schema.get("$defs", {}),
        "$ref": f"#/$defs/{definition}",
    }


@cache
def def_validator(name: str, definition: str) -> Any:
    """Validator for one ``$defs`` member of a schema (e.g. a changelog entry)."""
    return _strict_class(load_schema(name))(_def_schema(name, definition))


# ------------------------------------------------------------- valid-instance fast path
#
# Most documents ixtool validates are valid (a PR's new changelog entries, the config
# blocks it touched).  :func:`_valid` decides validity without jsonschema (whose import
# and validator set-up cost more than a PR gate's own checks) for the keywords ixtool's
# schemas use, with jsonschema's semantics under the strict-integer type checker.  It
# answers True (valid), False (invalid) or None (not sure: a keyword, reference or value
# it does not model).  Only True is trusted: anything else goes through jsonschema, which
# also produces the messages.

_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "definitions", "title",
                          "description", "default", "examples", "deprecated", "readOnly",
                          "writeOnly"})
_ASSERTIONS = frozenset({"type", "enum", "const", "properties", "required",
                         "additionalProperties", "items", "minItems", "maxItems",
                         "uniqueItems", "minLength", "maxLength", "pattern", "minimum",
                         "maximum", "exclusiveMinimum", "exclusiveMaximum", "minProperties",
                         "maxProperties", "propertyNames", "allOf", "anyOf", "oneOf", "not",
                         "if", "then", "else", "$ref"})
_MAX_DEPTH = 48  # deeper documents go to jsonschema (whose own recursion limit applies)
_DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


def _is_type(instance: Any, t: Any) -> bool | None:
    if t == "object":
        return isinstance(instance, dict)
    if t == "array":
        return isinstance(instance, list)
    if t == "string":
        return isinstance(instance, str)
    if t == "integer":  # the strict checker of _strict_class
        return isinstance(instance, int) and not isinstance(instance, bool)
    if t == "number":
        if isinstance(instance, bool):
            return False
        if isinstance(instance, int | float):
            return True
        return None if isinstance(instance, complex) or hasattr(instance, "__float__") \
            else False
    if t == "boolean":
        return isinstance(instance, bool)
    if t == "null":
        return instance is None
    return None


def _equal(a: Any, b: Any) -> bool | None:
    """jsonschema's equality for scalars (booleans are never numbers); None for
    containers."""
    if a is b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    if isinstance(a, list | tuple | dict) or isinstance(b, list | tuple | dict):
        return None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    try:
        return bool(a == b)
    except Exception:  # an exotic value: let jsonschema decide
        return None


def _all(results: Any) -> bool | None:
    unsure = False
    for r in results:
        if r is False:
            return False
        if r is None:
            unsure = True
    return None if unsure else True


class _Quick:
    """One validity check of ``instance`` against ``root`` (see :func:`quick_valid`)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def valid(self, schema: Any, x: Any, depth: int = 0) -> bool | None:
        if schema is True or schema is False:
            return schema
        if not isinstance(schema, dict) or depth > _MAX_DEPTH or (
                "$id" in schema and schema is not self.root):
            return None  # a nested $id moves the base of references
        unsure = False
        for kw, v in schema.items():
            if kw in _ANNOTATIONS:
                continue
            if kw not in _ASSERTIONS:
                return None
            r = self._keyword(kw, v, schema, x, depth)
            if r is False:
                return False
            if r is None:
                unsure = True
        return None if unsure else True

    def _ref(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node: Any = self.root
        for part in ref[1:].split("/")[1:]:
            if "~" in part or "%" in part or not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def _keyword(self, kw: str, v: Any, schema: dict[str, Any], x: Any, depth: int
                 ) -> bool | None:
        d = depth + 1
        if kw == "$ref":
            target = self._ref(v)
            return None if target is None else self.valid(target, x, d)
        if kw in _SCALAR_KEYWORDS:
            return _SCALAR_KEYWORDS[kw](v, x)
        if kw in ("allOf", "anyOf", "oneOf"):
            return self._combined(kw, v, x, d)
        if kw == "not":
            r = self.valid(v, x, d)
            return None if r is None else not r
        if kw == "if":
            r = self.valid(v, x, d)
            if r is None:
                return None
            branch = "then" if r else "else"
            return self.valid(schema[branch], x, d) if branch in schema else True
        if kw in ("then", "else"):
            return True  # applied through "if"
        if isinstance(x, dict):
            return self._object(kw, v, schema, x, d)
        if isinstance(x, list):
            return self._array(kw, v, schema, x, d)
        if isinstance(x, str):
            return _string(kw, v, x)
        return _number(kw, v, x)

    def _combined(self, kw: str, v: Any, x: Any, d: int) -> bool | None:
        if not isinstance(v, list) or not v:
            return None
        rs = [self.valid(sub, x, d) for sub in v]
        if kw == "allOf":
            return _all(rs)
        if None in rs:
            return True if kw == "anyOf" and True in rs else None
        return (rs.count(True) >= 1) if kw == "anyOf" else (rs.count(True) == 1)

    def _array(self, kw: str, v: Any, schema: dict[str, Any], x: list[Any], d: int
               ) -> bool | None:
        if kw == "items":
            if not isinstance(v, dict | bool) or "prefixItems" in schema:
                return None
            return _all(self.valid(v, e, d) for e in x)
        if kw in ("minItems", "maxItems"):
            return _bound(kw, len(x), v)
        if kw == "uniqueItems":
            if v is not True:
                return None if v is not False else True
            if not all(isinstance(e, str) for e in x):
                return None
            return len(set(x)) == len(x)
        return True

    def _object(self, kw: str, v: Any, schema: dict[str, Any], x: dict[Any, Any], d: int
                ) -> bool | None:
        if kw == "properties":
            if not isinstance(v, dict):
                return None
            return _all(self.valid(sub, x[k], d) for k, sub in v.items() if k in x)
        if kw == "required":
            if not isinstance(v, list):
                return None
            return all(k in x for k in v)
        if kw == "additionalProperties":
            if "patternProperties" in schema:
                return None
            props = schema.get("properties", {})
            if not isinstance(props, dict):
                return None
            return _all(self.valid(v, x[k], d) for k in x if k not in props)
        if kw == "propertyNames":
            return _all(self.valid(v, k, d) for k in x)
        if kw in ("minProperties", "maxProperties"):
            return _bound(kw, len(x), v)
        return True


def _type_kw(v: Any, x: Any) -> bool | None:
    hits = [_is_type(x, t) for t in (v if isinstance(v, list) else [v])]
    return True if True in hits else (None if None in hits else False)


def _enum_kw(v: Any, x: Any) -> bool | None:
    if not isinstance(v, list):
        return None
    eq = [_equal(x, e) for e in v]
    return True if True in eq else (None if None in eq else False)


_SCALAR_KEYWORDS: dict[str, Callable[[Any, Any], bool | None]] = {
    "type": _type_kw, "enum": _enum_kw, "const": lambda v, x: _equal(x, v)}


def _string(kw: str, v: Any, x: str) -> bool | None:
    if kw in ("minLength", "maxLength"):
        return _bound(kw, len(x), v)
    if kw == "pattern":
        import re

        return None if not isinstance(v, str) else re.search(v, x) is not None
    return True


def _number(kw: str, v: Any, x: Any) -> bool | None:
    if kw not in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return True
    num = _is_type(x, "number")
    if num is None or not isinstance(v, int | float) or isinstance(v, bool):
        return None
    if not num:
        return True
    if kw == "minimum":
        return bool(x >= v)
    if kw == "maximum":
        return bool(x <= v)
    return bool(x > v) if kw == "exclusiveMinimum" else bool(x < v)


def _bound(kw: str, n: int, v: Any) -> bool | None:
    if not isinstance(v, int) or isinstance(v, bool):
        return None
    return n >= v if kw.startswith("min") else n <= v


def quick_valid(name: str, instance: Any, *, definition: str | None = None) -> bool:
    """True when ``instance`` is certainly valid against ``schemas/<name>.schema.json``
    (or one of its ``$defs``) without jsonschema; False means "ask jsonschema"."""
    root = _def_schema(name, definition) if definition else load_schema(name)
    if root.get("$schema") != _DRAFT_2020:
        return False
    try:
        return _Quick(root).valid(root, instance) is True
    except RecursionError:
        return False


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
    if quick_valid(name, instance, definition=definition):
        return []
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
