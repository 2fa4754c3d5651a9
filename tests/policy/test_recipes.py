"""Recipe YAML read as srtctl reads it (PyYAML safe_load), within bounds."""

from __future__ import annotations

import pytest

from inferencex_tools.policy.recipes import load_recipe
from inferencex_tools.policy.static import extract, merge, select


def test_flow_mapping_with_colons_in_plain_scalars() -> None:
    # a strict YAML 1.2 loader rejects this; srtctl's PyYAML reads it
    doc = load_recipe("model: { path: qwen3.5-fp4, container: lmsysorg/sglang:nightly-dev }\n")
    assert doc.ok and doc.data == {"model": {"path": "qwen3.5-fp4",
                                             "container": "lmsysorg/sglang:nightly-dev"}}


def test_duplicate_key_keeps_the_last_value_and_is_reported() -> None:
    doc = load_recipe("a:\n  compilation-config: '{\"x\": 1}'\n  compilation-config: '{}'\n")
    assert doc.ok and doc.data == {"a": {"compilation-config": "{}"}}
    assert doc.duplicates == [("compilation-config", 3, 3)]


def test_merge_keys_are_not_duplicates() -> None:
    doc = load_recipe("x: &x {a: 1, b: 2}\ny:\n  <<: *x\n  a: 3\n")
    assert doc.duplicates == [] and doc.data["y"] == {"a": 3, "b": 2}


def test_many_aliases_are_fine() -> None:
    text = "a: &a 1\n" + "".join(f"k{i}: *a\n" for i in range(150))
    doc = load_recipe(text)
    assert doc.ok and doc.aliases == 150


@pytest.mark.parametrize(("text", "limit"), [
    ("a: &a [*a]\n", "recursive alias"),
    ("a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n"
        for i in range(7)), "nodes once aliases are expanded"),
    ("a: " + "[" * 80 + "]" * 80 + "\n", "nesting"),
])
def test_limits_are_their_own_outcome(text: str, limit: str) -> None:
    doc = load_recipe(text)
    assert doc.limit is not None and limit in doc.limit and doc.data is None


def test_syntax_error() -> None:
    doc = load_recipe("a: [\n")
    assert doc.error and doc.error_line == 2


def test_zip_selector_and_srtctl_merge() -> None:
    assert merge({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}, "a": [1]}) == \
        {"a": [1], "b": {"d": 3, "e": 4}}
    doc = {"base": {"x": 1, "w": {"k": 1}}, "zip_override_a": {"w": {"k": [2, 3]}}}
    assert select(doc, "zip_override_a[1]") == {"x": 1, "w": {"k": 3}}
    assert select(doc, None) == {"x": 1, "w": {"k": 1}}


def test_extract_reports_duplicates_and_limits() -> None:
    recipe = """backend:
  type: vllm
  vllm_config:
    decode:
      speculative-config: '{"method":"mtp","num_speculative_tokens":2}'
      speculative-config: '{"method":"mtp","num_speculative_tokens":3}'
"""
    launch = extract(recipe, "r.yaml", selector=None)
    assert launch.record is not None
    assert '"num_speculative_tokens":3' in launch.record.argv[-1]
    assert [d[0] for d in launch.doc.duplicates] == ["speculative-config"]
    bad = extract("a: &a [*a]\n", "r.yaml", selector=None)
    assert bad.record is None and bad.doc.limit
