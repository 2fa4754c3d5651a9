"""Minimal reproducers of the escapes the fuzzers found, kept as regression tests."""

from __future__ import annotations

import pytest

from inferencex_tools.changelog.merge_ops import canonicalize, resolve_conflict
from inferencex_tools.changelog.model import canonical_json, parse
from inferencex_tools.changelog.validate import Options, analyze_change, validate_standalone
from inferencex_tools.ci.authorization import find_authorization
from inferencex_tools.errors import ConflictError, YamlError
from inferencex_tools.io.yamlio import load_rt, load_safe
from tests.reliability.helpers import REPO, changelog

BASE = changelog(2)


@pytest.mark.parametrize("doc", [b"- !!bool x\n", b"- !!int ''\n", b"!!int \n", b"!!omap 5\n"])
def test_malformed_tagged_values_are_yaml_errors(doc: bytes) -> None:
    """Were KeyError / IndexError / AttributeError from ruamel's constructors."""
    for load in (load_safe, load_rt):
        with pytest.raises(YamlError, match=r"invalid value for its YAML tag|expected"):
            load(doc)
    assert {f.rule for f in parse(doc, "perf-changelog.yaml").findings} & {"CL110"}


@pytest.mark.parametrize("extra", [
    b"- config-keys: [a]\n  ~: x\n  pr-link: XXX\n",          # None key next to str keys
    b"- config-keys: [a]\n  1: x\n  pr-link: XXX\n",          # int key next to str keys
    b"- config-keys: [a]\n  ? [p, q]\n  : x\n  pr-link: XXX\n",  # tuple key
    b"- config-keys: [a]\n  description: &d [*d]\n  pr-link: XXX\n",  # self-reference
])
def test_odd_keys_and_cycles_do_not_break_entry_signatures(extra: bytes) -> None:
    """Entry.signature used json.dumps(sort_keys=True): TypeError on mixed key types."""
    head = BASE + b"\n" + extra
    a = analyze_change(BASE, head, "perf-changelog.yaml", Options(pr=5, master_keys=["a"]))
    assert a.findings  # judged, with findings
    validate_standalone(head, "perf-changelog.yaml", Options())
    with pytest.raises(ConflictError):
        canonicalize(BASE, head, pr=5, repo=REPO)
    with pytest.raises(ConflictError):
        resolve_conflict(BASE, head, BASE + b"\n" + changelog(1, start=7), pr=5, repo=REPO)


def test_canonical_json_is_stable_and_total() -> None:
    assert canonical_json({"b": 1, "a": [1, 2]}) == canonical_json({"a": [1, 2], "b": 1})
    cyc: list[object] = []
    cyc.append(cyc)
    assert canonical_json(cyc).startswith("repr:")
    assert canonical_json({None: 1, "a": 2}) == canonical_json({None: 1, "a": 2})


@pytest.mark.parametrize("comment", [
    {"body": "/reuse-sweep-run", "created_at": "2026-01-01T00:00:00Z",
     "author_association": []},
    {"body": "/reuse-sweep-run", "created_at": "2026-01-01T00:00:00Z",
     "author_association": {"x": 1}},
    {"body": "/reuse-sweep-run " + "9" * 5000, "created_at": "2026-01-01T00:00:00Z",
     "author_association": "MEMBER"},
])
def test_odd_comments_are_skipped(comment: dict[str, object]) -> None:
    """Were TypeError (unhashable association) / ValueError (int() digit limit)."""
    assert find_authorization([comment]) is None


def test_changed_entry_with_non_string_keys_is_reported() -> None:
    """The 'fields:' list of CL401 joined raw keys: TypeError for 1/None keys."""
    base = b"- config-keys: [a]\n  description: [b]\n  pr-link: XXX\n"
    head = b"- config-keys: [a]\n  1: y\n  ~: x\n  pr-link: XXX\n"
    a = analyze_change(base, head, "perf-changelog.yaml", Options(pr=4242))
    assert any("fields:" in f.message and "None" in f.message for f in a.findings)


def test_recursive_alias_is_a_limit() -> None:
    """`&d [x, *d]` compared with == raised RecursionError in the change gate."""
    from inferencex_tools.errors import LimitExceeded

    for load in (load_safe, load_rt):
        with pytest.raises(LimitExceeded, match="contains itself"):
            load(b"- &a [x, *a]\n")
    base = b"- config-keys: [a]\n  description: &d [x, *d]\n  pr-link: XXX\n"
    head = base.replace(b"XXX", f"https://github.com/{REPO}/pull/3".encode())
    a = analyze_change(base, head, "perf-changelog.yaml", Options())
    assert {f.rule for f in a.findings} & {"CL112", "CL120"}


def test_timestamp_tag_on_an_alias_bomb_sequence_is_fast() -> None:
    """ruamel formatted node.value (a node graph) into the timestamp error: a hang."""
    from tests.conftest import CPU
    from tests.reliability.test_limits import billion_laughs

    doc = billion_laughs(levels=7) + b"z: !!timestamp [*l7, *l7]\n"
    for load in (load_safe, load_rt):
        with CPU() as cpu, pytest.raises(YamlError, match="timestamp"):
            load(doc)
        assert cpu.seconds < 5


@pytest.mark.parametrize("value", ["'false'", "!!str false", "'no'", "0"])
def test_quoted_false_multinode_is_single_node(value: str) -> None:
    """`multinode: "false"` passes the lax validation; bool("false") sent the config
    down the multinode path: KeyError 'prefill' (found by fuzz_long)."""
    from inferencex_tools.sweep.generate import SweepRequest, generate_matrix
    from inferencex_tools.sweep.load import clear_cache, merge_masters
    from inferencex_tools.sweep.service import validate_for_generation
    from tests.fuzz.harness import runners
    from tests.reliability.test_crash_classes import MASTER

    clear_cache()
    configs = merge_masters([("m.yaml", MASTER.replace("multinode: false",
                                                       f"multinode: {value}").encode())])
    validate_for_generation(configs)
    rows = generate_matrix(configs, runners(), SweepRequest()).rows
    assert [r["conc"] for r in rows] == [4, 8, 16]
    assert all("prefill" not in r for r in rows)
