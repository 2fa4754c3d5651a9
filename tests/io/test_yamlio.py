"""YAML loading: safe/C fast path, marks, duplicate keys, resource limits."""

from __future__ import annotations

import pytest

from inferencex_tools.errors import LimitExceeded, YamlError
from inferencex_tools.io.yamlio import Limits, load_rt, load_safe, rt_path_position
from tests.changelog.casedata import alias_bomb
from tests.conftest import CPU


@pytest.mark.parametrize("load", [load_safe, load_rt])
def test_loads_plain_yaml(load: object) -> None:
    assert callable(load)
    doc = load("- a: 1\n  b: [x, 'y']\n- true\n")
    assert doc == [{"a": 1, "b": ["x", "y"]}, True]


@pytest.mark.parametrize("load", [load_safe, load_rt])
def test_duplicate_key_anywhere_is_an_error_with_position(load: object) -> None:
    assert callable(load)
    with pytest.raises(YamlError) as ei:
        load("- a:\n    x: 1\n    x: 2\n", source="f.yaml")
    e = ei.value
    assert e.kind == "duplicate-key" and e.line == 3 and "x" in e.detail
    assert e.message.startswith("f.yaml:3:")


def test_syntax_error_position() -> None:
    with pytest.raises(YamlError) as ei:
        load_safe("- a: 1\n  b: [unclosed\n- c\n", source="s.yaml")
    assert ei.value.kind == "syntax" and ei.value.line is not None and ei.value.line >= 2


def test_invalid_utf8_bytes() -> None:
    with pytest.raises(YamlError) as ei:
        load_safe(b"- a\n- \xff\n")
    assert ei.value.kind == "encoding" and ei.value.line == 2 and ei.value.column == 3


def test_billion_laughs_is_refused_quickly() -> None:
    with CPU() as cpu:
        with pytest.raises(LimitExceeded):
            load_safe(alias_bomb())
        with pytest.raises(LimitExceeded):
            load_rt(alias_bomb())
    assert cpu.seconds < 5


def test_alias_count_limit() -> None:
    few = "a: &x [1]\n" + "".join(f"k{i}: *x\n" for i in range(5))
    assert load_safe(few)["k4"] == [1]
    many = "a: &x [1]\n" + "".join(f"k{i}: *x\n" for i in range(150))
    with pytest.raises(LimitExceeded) as ei:
        load_safe(many)
    assert ei.value.kind == "limit"
    assert load_safe(many, limits=Limits(max_aliases=1000))["k149"] == [1]


def test_size_limit() -> None:
    with pytest.raises(LimitExceeded) as ei:
        load_safe("x: " + "a" * 2000 + "\n", limits=Limits(max_bytes=1000))
    assert "limit" in ei.value.detail


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "a:\n" + "".join(
    " " * i + "b:\n" for i in range(1, 200))])
def test_deep_nesting_is_refused_not_crashing(text: str) -> None:
    with pytest.raises(LimitExceeded):
        load_safe(text)


def test_rt_marks() -> None:
    doc = load_rt("- config-keys:\n    - a\n  pr-link: x\n")
    assert rt_path_position(doc[0], ["pr-link"]) == (3, 3)
    assert rt_path_position(doc[0], ["config-keys", 0]) == (2, 7)
    assert rt_path_position(doc[0], ["missing"])[0] == 1
