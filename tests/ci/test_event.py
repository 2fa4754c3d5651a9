"""Event payload → facts: shapes, validation, fork detection, new branches."""

from __future__ import annotations

from typing import Any

import pytest

from inferencex_tools.ci.event import facts_from_payload
from inferencex_tools.ci.labels import ZERO_SHA, decide
from inferencex_tools.errors import InputError, UsageError

A, B = "a" * 40, "b" * 40


def pr_payload(**pr: Any) -> dict[str, Any]:
    base = {"number": 9, "draft": False, "labels": [{"name": "sweep-enabled"}],
            "head": {"sha": B, "ref": "x", "repo": {"full_name": "o/r"}},
            "base": {"sha": A, "ref": "main", "repo": {"full_name": "o/r"}}}
    base.update(pr)
    return {"action": "synchronize", "pull_request": base,
            "repository": {"full_name": "o/r", "default_branch": "main"}}


def test_same_repo_pr() -> None:
    f = facts_from_payload("pull_request", pr_payload())
    assert (f.fork, f.draft, f.pr_number, f.labels) == (False, False, 9,
                                                       frozenset({"sweep-enabled"}))


@pytest.mark.parametrize("head_repo", [None, {"full_name": "someone/r"}])
def test_fork_and_deleted_fork(head_repo: Any) -> None:
    p = pr_payload(head={"sha": B, "ref": "main", "repo": head_repo})
    assert facts_from_payload("pull_request", p).fork is True


def test_new_branch_push_is_standalone() -> None:
    f = facts_from_payload("push", {"ref": "refs/heads/main", "before": ZERO_SHA, "after": B})
    d = decide(f)
    assert d.changelog_mode == "standalone" and d.diff_base is None and d.sweep.run


def test_push_to_another_default_branch() -> None:
    f = facts_from_payload("push", {"ref": "refs/heads/trunk", "before": A, "after": B,
                                    "repository": {"default_branch": "trunk"}})
    assert decide(f).sweep.run


@pytest.mark.parametrize(("name", "payload", "exc"), [
    ("pull_request", {"action": "synchronize"}, InputError),
    ("pull_request", pr_payload(labels="sweep-enabled"), InputError),
    ("pull_request", pr_payload(number=True), InputError),
    ("pull_request", pr_payload(head={"sha": "HEAD~1"}), InputError),
    ("merge_group", {"action": "checks_requested"}, InputError),
    ("push", {"ref": "refs/heads/main", "after": "zz"}, InputError),
    ("push", [], InputError),
    ("workflow_run", {}, UsageError),
])
def test_malformed(name: str, payload: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        facts_from_payload(name, payload)
