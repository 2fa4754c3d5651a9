"""Every schema in schemas/ is valid against its metaschema (ixtool no longer checks this
on each run: it costs more than the validation the gate needs)."""

from __future__ import annotations

import pytest

from inferencex_tools.schemas import _strict_class, load_schema, schema_dir

NAMES = sorted(p.name.removesuffix(".schema.json") for p in schema_dir().glob("*.schema.json"))


def test_there_are_schemas() -> None:
    assert len(NAMES) >= 3


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid(name: str) -> None:
    schema = load_schema(name)
    _strict_class(schema).check_schema(schema)


def test_an_invalid_schema_is_caught() -> None:
    import jsonschema

    bad = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": 5}
    with pytest.raises(jsonschema.SchemaError):
        _strict_class(bad).check_schema(bad)
