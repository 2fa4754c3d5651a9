"""Access to the JSON Schemas in ``schemas/`` (the single source of structure).

In a source checkout they live at the repository root; in a wheel they are
packaged as ``inferencex_tools/schemas``.  jsonschema is imported lazily.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError

_HERE = Path(__file__).resolve().parent
_CANDIDATES = (_HERE / "schemas", _HERE.parent / "schemas")


def schema_dir() -> Path:
    for c in _CANDIDATES:
        if c.is_dir():
            return c
    raise InputError("ixtool's schemas/ directory is missing from the installation")


@cache
def load_schema(name: str) -> dict[str, Any]:
    path = schema_dir() / f"{name}.schema.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read schema {path}: {exc.strerror}") from None
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
    """A compiled validator for ``schemas/<name>.schema.json`` (strict integers)."""
    schema = load_schema(name)
    cls = _strict_class(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=None)


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
