"""Schema findings speak YAML (``null``, ``true``, "a list"), never Python (``None``,
``True``, ``NoneType``) or jsonschema's raw text (``is not of type``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.schemas import found, schema_issues, yaml_value

PYTHONISMS = ("None", "True", "False", "NoneType", "is not of type", "is a required property",
              "(int)", "(str)", "(bool)", "(dict)", "(list)")


@pytest.mark.parametrize(("value", "shown"), [
    (None, "null"), (True, "true"), (False, "false"), (5, "5"), (1.5, "1.5"),
    ("yes", '"yes"'), ([1, None, "a"], '[1, null, "a"]'), ({"a": True}, "{a: true}"),
    (list(range(30)), "a list of 30 items"),
])
def test_yaml_value(value: object, shown: str) -> None:
    assert yaml_value(value) == shown


@pytest.mark.parametrize(("value", "text"), [
    (None, "null"), (5, "5 (an integer)"), ("x", '"x" (a string)'), (True, "true (a boolean)"),
    ([], "[] (a list)"), ({}, "{} (a mapping)"),
])
def test_found(value: object, text: str) -> None:
    assert found(value) == text


ENTRY_CASES = [
    ({"config-keys": ["a", 5], "description": ["d"], "pr-link": "x"}, "config-keys/1",
     "must be a string, found 5 (an integer)"),
    ({"config-keys": ["a"], "description": "yes", "pr-link": "x"}, "description",
     'must be a list, found "yes" (a string)'),
    ({"config-keys": ["a"], "description": ["d"], "pr-link": True}, "pr-link",
     "must be a string, found true (a boolean)"),
    ({"config-keys": ["a"], "description": ["d"], "pr-link": None}, "pr-link",
     "must be a string, found null"),
    ({"config-keys": [], "description": ["d"], "pr-link": "x"}, "config-keys",
     "must have at least 1 item, found 0"),
    ({"description": ["d"]}, "", "missing required key 'config-keys', 'pr-link'"),
]


@pytest.mark.parametrize(("entry", "where", "message"), ENTRY_CASES)
def test_entry_messages(entry: dict[str, object], where: str, message: str) -> None:
    issues = schema_issues("perf-changelog", entry, definition="entry")
    got = {(i.where, i.message) for i in issues}
    assert (where, message) in got, got
    for _, text in got:
        assert not any(p in text for p in PYTHONISMS), text


def test_one_required_issue_per_object() -> None:
    issues = schema_issues("perf-changelog", {}, definition="entry")
    assert [i.keyword for i in issues].count("required") == 1


def test_cli_messages_have_no_python_values(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from inferencex_tools.cli.main import app

    (tmp_path / "perf-changelog.yaml").write_text(
        "- config-keys: [a, 5]\n  description: \"yes\"\n  pr-link: true\n")
    cfg = tmp_path / "configs"
    cfg.mkdir()
    (cfg / "x-master.yaml").write_text("k1:\n  image: 5\n  model: null\n")
    runner = CliRunner()
    out = runner.invoke(app, ["changelog", "validate", "--no-git",
                              str(tmp_path / "perf-changelog.yaml")]).output
    out += runner.invoke(app, ["config", "validate", str(cfg / "x-master.yaml")]).output
    assert "found 5 (an integer)" in out and "found true (a boolean)" in out
    assert "found null" in out and "missing required key" in out
    for p in PYTHONISMS:
        assert p not in out, (p, out)
