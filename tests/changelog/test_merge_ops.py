"""canonicalize / resolve_conflict on the data-driven cases in tests/cases/changelog_merge.

Each case directory holds the input snapshots, ``case.json`` (operation, PR, repo,
and either the exact refusal ``error`` or the ``message`` + warning rule ids) and,
for successful cases, ``expected.yaml`` with the exact resulting bytes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.changelog.links import DEFAULT_REPO
from inferencex_tools.changelog.merge_ops import MergeOutcome, canonicalize, resolve_conflict
from inferencex_tools.changelog.validate import Options, analyze_change
from inferencex_tools.errors import ConflictError, UsageError
from inferencex_tools.report.findings import Severity

CASES = Path(__file__).resolve().parent.parent / "cases" / "changelog_merge"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "case.json").is_file())


def _load(name: str) -> tuple[dict[str, Any], dict[str, bytes]]:
    d = CASES / name
    meta = json.loads((d / "case.json").read_text(encoding="utf-8"))
    files = {p.name: p.read_bytes() for p in d.iterdir() if p.suffix == ".yaml"}
    return meta, files


def _run(meta: dict[str, Any], files: dict[str, bytes]) -> MergeOutcome:
    kw: dict[str, Any] = {"pr": meta["pr"], "repo": meta.get("repo", DEFAULT_REPO)}
    if meta["op"] == "canonicalize":
        return canonicalize(files["base.yaml"], files["head.yaml"], **kw)
    return resolve_conflict(files["merge-base.yaml"], files["ours.yaml"], files["theirs.yaml"],
                            **kw)


def test_case_inventory() -> None:
    ops = [json.loads((CASES / n / "case.json").read_text())["op"] for n in NAMES]
    refusals = [n for n in NAMES if "error" in json.loads((CASES / n / "case.json").read_text())]
    assert ops.count("canonicalize") >= 20 and ops.count("resolve") >= 20
    assert len(refusals) >= 20


@pytest.mark.parametrize("name", NAMES)
def test_case(name: str) -> None:
    meta, files = _load(name)
    if "error" in meta:
        with pytest.raises(ConflictError) as exc:
            _run(meta, files)
        assert exc.value.message == meta["error"]
        assert exc.value.exit_code == 2 and exc.value.hint  # an error with a hint
        return
    out = _run(meta, files)
    assert out.data == files["expected.yaml"]
    assert out.message == meta["message"]
    assert sorted({f.rule for f in out.findings}) == meta["warnings"]
    assert all(f.severity is not Severity.ERROR for f in out.findings)
    repo = meta.get("repo", DEFAULT_REPO)
    opts = Options(repo=repo, pr=meta["pr"], master_keys=None)
    if meta["op"] == "canonicalize":
        head = files["head.yaml"]
        assert out.changed == (out.data != head)
        # idempotent: a second run changes nothing
        again = canonicalize(files["base.yaml"], out.data, pr=meta["pr"], repo=repo)
        assert again.data == out.data and not again.changed
        a = analyze_change(files["base.yaml"], out.data, "f", opts)
    else:
        theirs = files["theirs.yaml"]
        if meta.get("kind") == "correction":  # main's lines, only pr-link lines differ
            old, new = theirs.splitlines(True), out.data.splitlines(True)
            assert len(old) == len(new)
            assert all(x.startswith(b"  pr-link: ") for x, y in zip(old, new, strict=True)
                       if x != y)
        else:
            assert out.data.startswith(theirs)  # main's bytes are kept exactly
        a = analyze_change(theirs, out.data, "f", opts)
        # merging main into the resolved branch again changes nothing
        again = resolve_conflict(theirs, out.data, theirs, pr=meta["pr"], repo=repo)
        assert again.data == out.data
        if meta.get("kind") != "correction":
            assert out.data[len(theirs):].count(f"/pull/{meta['pr']}\n".encode()) >= 1
    assert [f for f in a.findings if f.severity is Severity.ERROR] == []


@pytest.mark.parametrize("pr", [0, -3, True])
def test_bad_pr_number_is_a_usage_error(pr: int) -> None:
    _, files = _load("canon-xxx")
    with pytest.raises(UsageError, match="invalid PR number"):
        canonicalize(files["base.yaml"], files["head.yaml"], pr=pr, repo=DEFAULT_REPO)


def test_bad_repo_slug_is_a_usage_error() -> None:
    _, files = _load("canon-xxx")
    with pytest.raises(UsageError, match="invalid repository slug"):
        canonicalize(files["base.yaml"], files["head.yaml"], pr=4, repo="not a slug")


def test_canonicalize_label_appears_in_refusals() -> None:
    _, files = _load("canon-tbd")
    with pytest.raises(ConflictError) as exc:
        canonicalize(files["base.yaml"], files["head.yaml"], pr=42, repo=DEFAULT_REPO,
                     label="x/changelog.yaml")
    assert exc.value.message.startswith("x/changelog.yaml: refusing to canonicalize for PR #42: "
                                        "x/changelog.yaml:17 [CL502]")


def test_g10_reference_would_drop_but_we_keep() -> None:
    """The reference drops a PR entry whose keys+description match any main entry."""
    meta, files = _load("resolve-g10-twin-of-other-pr")
    out = _run(meta, files)
    theirs = files["theirs.yaml"]
    tail = out.data[len(theirs):]
    assert b"dsr1-fp4-mi355x-atom" in tail and tail.endswith(b"/pull/42\n")
    assert [f.rule for f in out.findings] == ["CL801"]


def test_resolve_many_reasons_are_elided() -> None:
    """Refusal messages list at most five problems and say how many more there were."""
    _, files = _load("resolve-basic")
    bad = files["ours.yaml"].replace(b"  pr-link: XXX\n", b"  pr-link: XXX\n")
    lines = b"".join(b"\t# c\n" for _ in range(8))
    with pytest.raises(ConflictError) as exc:
        resolve_conflict(files["merge-base.yaml"], bad + lines, files["theirs.yaml"], pr=42,
                         repo=DEFAULT_REPO)
    assert exc.value.message.count(" [CL") == 5
    assert re.search(r"; and [1-9][0-9]* more$", exc.value.message)


def test_merge_rules_fire_and_are_documented() -> None:
    """CL8xx: each fires in a case, and docs/changelog-merge.md lists it with its severity."""
    from inferencex_tools.report.findings import RULES

    ours = {rid: r for rid, r in RULES.items() if rid.startswith("CL8")}
    assert set(ours) == {"CL801", "CL802"}
    fired = {w for n in NAMES
             for w in json.loads((CASES / n / "case.json").read_text()).get("warnings", [])}
    assert set(ours) <= fired
    doc = (CASES.parents[2] / "docs" / "changelog-merge.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (CL8\d\d) \| (\w+) \|", doc, re.M))
    assert rows == {rid: r.severity.value for rid, r in ours.items()}
    for cmd in ("canonicalize", "resolve-conflict", "merge-driver", "add"):
        assert f"ixtool changelog {cmd}" in doc
    for opt in ("--pr", "--base", "--repo", "--ours", "--theirs", "--output", "--pr-side",
                "--scenario-type", "--configs", "IXTOOL_PR"):
        assert opt in doc, opt
