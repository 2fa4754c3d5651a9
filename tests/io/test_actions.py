"""The GitHub Actions adapter: environment snapshot, one $GITHUB_OUTPUT formatter and
parser, one failure policy (outputs fail hard, the summary warns)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferencex_tools.errors import InputError, UsageError
from inferencex_tools.io.actions import (
    ActionsEnv,
    format_outputs,
    parse_outputs,
    write_outputs,
    write_summary,
)


def test_from_environ_reads_the_runner_variables(tmp_path: Path) -> None:
    env = ActionsEnv.from_environ({
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(tmp_path / "e.json"),
        "GITHUB_REPOSITORY": "acme/bench", "GITHUB_OUTPUT": str(tmp_path / "o"),
        "GITHUB_STEP_SUMMARY": "", "IXTOOL_PR": " 42 \n", "GITHUB_TOKEN": "secret"})
    assert env == ActionsEnv(event_name="pull_request", event_path=tmp_path / "e.json",
                             repository="acme/bench", output=tmp_path / "o", summary=None,
                             pr="42")
    assert ActionsEnv.from_environ({}) == ActionsEnv()
    assert "secret" not in repr(env)


@pytest.mark.parametrize(("name", "expected"), [
    ("pull_request", 7), ("pull_request_target", 7), ("push", None), (None, None)])
def test_pull_request_only_for_pull_request_events(tmp_path: Path, name: str | None,
                                                   expected: int | None) -> None:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"pull_request": {"number": 7}}), encoding="utf-8")
    pr = ActionsEnv(event_name=name, event_path=path).pull_request()
    assert (pr or {}).get("number") == expected


def test_unreadable_event_is_an_input_error(tmp_path: Path) -> None:
    env = ActionsEnv(event_name="pull_request", event_path=tmp_path / "missing.json")
    with pytest.raises(InputError, match=r"cannot read \$GITHUB_EVENT_PATH"):
        env.pull_request()
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        ActionsEnv(event_name="push", event_path=tmp_path / "bad.json").event()


def test_require_output() -> None:
    with pytest.raises(UsageError, match=r"--github-output needs \$GITHUB_OUTPUT"):
        ActionsEnv().require_output("--github-output")
    assert ActionsEnv(output=Path("o")).require_output("--x") == Path("o")


def test_format_one_line_and_heredoc() -> None:
    text = format_outputs([("a", "1"), ("b", "x\ny"), ("c", "")], delimiter="EOF")
    assert text == "a=1\nb<<EOF\nx\ny\nEOF\nc=\n"
    with pytest.raises(ValueError):
        format_outputs({"k": "EOF\nEOF"}, delimiter="EOF")
    random = format_outputs({"k": "one\ntwo"})
    assert random.startswith("k<<ixtool_") and parse_outputs(random) == {"k": "one\ntwo"}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True),
                       st.text(alphabet=st.characters(blacklist_categories=("Cs",)))
                       .map(lambda s: s.replace("\r", "")), max_size=5))
def test_format_parse_round_trip(outputs: dict[str, str]) -> None:
    assert parse_outputs("before=1\n" + format_outputs(outputs)) == {"before": "1", **outputs}


def test_parse_is_strict() -> None:
    with pytest.raises(ValueError, match="not a GITHUB_OUTPUT line"):
        parse_outputs("garbage\n")
    with pytest.raises(ValueError, match="no closing"):
        parse_outputs("k<<EOF\nvalue\n")


def test_write_outputs_appends_and_fails_hard(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text("x=1\n", encoding="utf-8")
    write_outputs(out, {"a": "b"})
    write_outputs(out, [("c", "d\ne")])
    assert parse_outputs(out.read_text(encoding="utf-8")) == {"x": "1", "a": "b", "c": "d\ne"}
    with pytest.raises(InputError, match=r"cannot write \$GITHUB_OUTPUT"):
        write_outputs(tmp_path / "missing-dir" / "out", {"a": "b"})


def test_write_summary_appends_and_only_warns(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    assert write_summary(summary, "# one\n") is None
    assert write_summary(summary, "# two\n") is None
    assert summary.read_text(encoding="utf-8") == "# one\n# two\n"
    warning = write_summary(tmp_path / "missing-dir" / "s.md", "x")
    assert warning is not None and "cannot write $GITHUB_STEP_SUMMARY" in warning
