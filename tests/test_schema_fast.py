"""schemas.quick_valid (the valid-instance fast path) against jsonschema: it may only say
"valid" where jsonschema finds no error, and on real documents it should say so."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools import schemas as S
from inferencex_tools.io.yamlio import load_safe

REPLACEMENTS: list[Any] = [None, True, False, 0, 1, -1, 1.0, 2.5, "", "x", "image:x", [], {},
                           ["a", "a"], ["a", 1], {"zz": 1}, "*", "a/b", "..", 10**30, "\u2028"]


def _js_valid(name: str, x: Any, definition: str | None) -> bool:
    v = S.def_validator(name, definition) if definition else S.validator(name)
    return next(iter(v.iter_errors(x)), None) is None


def _paths(node: Any, path: list[Any], out: list[list[Any]]) -> list[list[Any]]:
    out.append(path)
    items = node.items() if isinstance(node, dict) else (
        enumerate(node) if isinstance(node, list) else ())
    for k, v in items:
        _paths(v, [*path, k], out)
    return out


def _mutants(x: Any, rng: random.Random, n: int) -> list[Any]:
    out = []
    for _ in range(n):
        y = copy.deepcopy(x)
        paths = _paths(y, [], [])
        path = rng.choice(paths)
        value = rng.choice(REPLACEMENTS)
        if not path:
            out.append(value)
            continue
        node = y
        for k in path[:-1]:
            node = node[k]
        if isinstance(node, dict) and rng.random() < 0.25:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        out.append(y)
    return out


def _documents(corpus: Path) -> list[tuple[str, Any, str | None]]:
    docs: list[tuple[str, Any, str | None]] = []
    cl = load_safe((corpus / "perf-changelog.yaml").read_bytes())
    docs += [("perf-changelog", e, "entry") for e in cl[-60:]]
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        data = load_safe((corpus / "configs" / name).read_bytes())
        docs += [("master-config", {k: v}, None) for k, v in list(data.items())[::6]]
    docs.append(("runners", load_safe((corpus / "configs" / "runners.yaml").read_bytes()), None))
    for f in sorted((corpus / "golden_al_distribution").glob("*.yaml"))[:4]:
        docs.append(("golden-al", load_safe(f.read_bytes()), None))
    return docs


def test_quick_valid_never_passes_what_jsonschema_rejects(corpus: Path) -> None:
    rng = random.Random(15)
    agree = checked = 0
    for name, doc, definition in _documents(corpus):
        assert S.quick_valid(name, doc, definition=definition), (name, definition)
        for y in _mutants(doc, rng, 5):
            quick, full = S.quick_valid(name, y, definition=definition), _js_valid(
                name, y, definition)
            assert not quick or full, (name, y)
            checked += 1
            agree += quick == full
    assert checked > 300 and agree / checked > 0.95  # valid mutants are recognised too


@pytest.mark.parametrize("schema,instance,valid", [
    ({"type": "integer"}, True, False),  # booleans are not integers
    ({"type": "integer"}, 4.0, False),  # strict integers
    ({"type": "number"}, 4, True),
    ({"enum": [1]}, True, False),
    ({"enum": ["a", None]}, None, True),
    ({"const": False}, 0, False),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 3, False),  # both match
    ({"oneOf": [{"type": "integer"}, {"type": "null"}]}, None, True),
    ({"not": {"pattern": "^image:"}}, "image:x", False),
    ({"not": {"pattern": "^image:"}}, 5, False),  # pattern ignores non-strings
    ({"if": {"const": 1}, "then": {"type": "string"}}, 1, False),
    ({"if": {"const": 1}, "else": {"type": "string"}}, 2, False),
    ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}, False),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"ab": 1, "Ab": 2}, False),
    ({"uniqueItems": True}, ["a", "b", "a"], False),
    ({"items": {"type": "string"}, "minItems": 2}, ["a"], False),
    ({"minLength": 1}, "", False),
    ({"exclusiveMinimum": 0}, 0, False),
    ({"required": ["a"]}, {"b": 1}, False),
    ({"required": ["a"]}, [1], True),  # object keywords ignore arrays
])
def test_quick_valid_cases(schema: dict[str, Any], instance: Any, valid: bool) -> None:
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    assert S._Quick(root).valid(root, instance) is valid


@pytest.mark.parametrize("schema", [
    {"format": "uri"}, {"patternProperties": {"a": {}}}, {"$ref": "other.json"},
    {"prefixItems": [{}]}, {"contains": {}}, {"multipleOf": 2},
])
def test_quick_valid_is_unsure_of_what_it_does_not_model(schema: dict[str, Any]) -> None:
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    assert S._Quick(root).valid(root, {"a": [1]}) is None
