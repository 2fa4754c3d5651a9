"""Reuse authorization grammar (spec §8.1, G14 fixed) and $GITHUB_OUTPUT formatting."""

from __future__ import annotations

from typing import Any

import pytest

from inferencex_tools.ci.authorization import (
    CommitLogins,
    PushedBy,
    find_authorization,
    find_commits,
    self_authorization,
)
from inferencex_tools.ci.labels import Facts, decide, near_miss
from inferencex_tools.ci.outputs import output_pairs
from inferencex_tools.errors import InputError
from inferencex_tools.io.actions import format_outputs


def c(body: str, when: str, assoc: str = "MEMBER", login: str = "m", perm: str | None = "write",
      cid: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {"body": body, "created_at": when, "author_association": assoc,
                           "user": {"login": login}, "id": cid}
    if perm is not None:
        out["author_permission"] = perm  # looked up by the workflow's reuse-comments job
    return out


@pytest.mark.parametrize(("comments", "want"), [
    ([c("/reuse-sweep-run", "2026-01-01")], ("m", None)),
    ([c("  /reuse-sweep-run 123  ", "2026-01-01")], ("m", 123)),
    ([c("please /reuse-sweep-run 5", "2026-01-01")], None),  # inline mention
    ([c("/reuse-sweep-run 5", "2026-01-01", assoc="CONTRIBUTOR", perm="read")], None),
    # the association label is not a right; the permission is
    ([c("/reuse-sweep-run 5", "2026-01-01", assoc="OWNER", perm="read")], None),
    ([c("/reuse-sweep-run 5", "2026-01-01", assoc="NONE", perm="admin")], ("m", 5)),
    ([c("/reuse-sweep-run 5", "2026-01-01", perm=None)], None),  # permission unknown
    # equal timestamps: the larger comment id is the later comment
    ([c("/reuse-sweep-run 222", "2026-01-01T00:00:00Z", login="b", cid=20),
      c("/reuse-sweep-run 111", "2026-01-01T00:00:00Z", login="a", cid=10)], ("b", 222)),
    ([c("/reuse-sweep-run " + "9" * 20, "2026-01-01")], None),  # not a bounded run id
    ([c("/reuse-sweep-run\n123", "2026-01-01")], ("m", None)),  # G14: no newline pinning
    ([c("/reuse-sweep-run 1\n/reuse-sweep-run 2", "2026-01-01")], ("m", 2)),  # last line
    ([c("/reuse-sweep-run 9", "2026-01-02", login="new"),
      c("/reuse-sweep-run 1", "2026-01-01", login="old")], ("new", 9)),
    ([c("/reuse-sweep-run 9", "2026-01-01", login="old"),
      c("/reuse-sweep-run", "2026-01-03", assoc="OWNER", login="new")], ("new", None)),
    ([], None),
])
def test_authorization(comments: list[dict[str, Any]], want: tuple[str, int | None] | None
                       ) -> None:
    got = find_authorization(comments)
    assert (None if got is None else (got.author, got.run_id)) == want


def test_authorization_rejects_non_list() -> None:
    with pytest.raises(InputError):
        find_authorization({"body": "x"})

SHA = "a" * 40


def test_the_comments_file_carries_the_commits() -> None:
    """The object form hands the PR's commits as GET …/pulls/{n}/commits returns them;
    an account GitHub does not know is null; the list form carries none."""
    data = {"comments": [c("/reuse-sweep-run", "2026-01-01")],
            "commits": [{"sha": SHA, "author": {"login": "dev"}, "committer": None,
                         "commit": {"author": {"email": "dev@x"}}}]}
    assert find_authorization(data) == find_authorization(data["comments"])
    assert find_commits(data) == (CommitLogins(SHA, "dev", None),)
    assert find_commits(data["comments"]) is None
    for bad in ("x", [{"sha": "not-a-sha"}], [None]):
        with pytest.raises(InputError):
            find_commits({"comments": [], "commits": bad})


def _auth(login: str = "lead", body: str = "/reuse-sweep-run") -> Any:
    return find_authorization([c(body, "2026-01-01", login=login)])


@pytest.mark.parametrize(("pushed", "pr_author", "why"), [
    (PushedBy("dev", (CommitLogins(SHA, "dev", "dev"),)), "dev", None),
    (PushedBy("dev", (CommitLogins(SHA, "dev", "dev"),)), "lead", "PR's author"),
    (PushedBy("dev", (CommitLogins(SHA, "dev", "dev"),)), None, "unknown"),
    (None, "dev", "unknown"),
    (PushedBy("lead", (CommitLogins(SHA, "dev", "dev"),)), "dev", "pushed the head"),
    (PushedBy(None, (CommitLogins(SHA, "dev", "dev"),)), "dev", "no sender"),
    (PushedBy("dev", (CommitLogins(SHA, "Lead", "dev"),)), "dev", "authored commit"),
    (PushedBy("dev", (CommitLogins(SHA, "dev", "lead"),)), "dev", "committed commit"),
    (PushedBy("dev", (CommitLogins(SHA, None, "dev"),)), "dev", "no account"),
    (PushedBy("dev", (CommitLogins(SHA, "dev", "dev"),), count=2), "dev", "more commits"),
    (PushedBy("dev", tuple(CommitLogins(f"{i:040x}", "dev", "dev") for i in range(250))),
     "dev", "more commits"),
])
def test_self_authorization(pushed: PushedBy | None, pr_author: str | None,
                            why: str | None) -> None:
    got = self_authorization(_auth(), pushed, pr_author=pr_author)
    assert (got is None) if why is None else (got is not None and why in got), got


@pytest.mark.parametrize(("label", "meant"), [
    ("skip-queue", "skip_queue"), ("Full-Sweep-Enabled", "full-sweep-enabled"),
    ("evals_only", "evals-only"), ("documentation", None), ("sweep-enabled", None),
])
def test_near_miss(label: str, meant: str | None) -> None:
    assert near_miss(label) == meant


def test_github_output_heredoc_and_single_lines() -> None:
    d = decide(Facts(event="pull_request", action="synchronize",
                     labels=frozenset({"sweep-enabled"}), pr_number=4,
                     base_sha="a" * 40, head_sha="b" * 40))
    text = format_outputs(output_pairs(d), delimiter="EOF_x")
    assert "reasons<<EOF_x\n" in text and "\nEOF_x\n" in text
    assert "sweep=true\n" in text and "sweep-flags=--trim-conc\n" in text
    keys = [ln.split("=")[0].split("<<")[0] for ln in text.splitlines()
            if "=" in ln or "<<" in ln]
    assert len(keys) == len(set(keys))
    with pytest.raises(ValueError):
        format_outputs([("k", "a\nEOF_x\n")], delimiter="EOF_x")
