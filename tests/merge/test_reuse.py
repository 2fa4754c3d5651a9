"""Pure reuse rules: labels, the authorization grammar (§8.1, G14), run choice, messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.ci.authorization import Authorization, authorization, prepared_in
from inferencex_tools.io.github import (
    Artifact,
    Comment,
    LabelEvent,
    PullInfo,
    WorkflowRun,
)
from inferencex_tools.merge import reuse


def comment(i: int, body: str, when: int | None = None, created: str | None = None) -> Comment:
    return Comment(i, body, f"u{i}", "NONE",
                   created or f"2026-08-01T00:{when if when is not None else i:02d}:00Z")


def auth(cs: list[Comment], perms: dict[int, str | None] | None = None
         ) -> Authorization | None:
    """The one rule, every author a writer unless ``perms`` (comment id → permission)."""
    return authorization(cs, lambda c: (perms or {}).get(c.id, "write"))


def pr(labels: tuple[str, ...] = ("full-sweep-enabled",)) -> PullInfo:
    return PullInfo(7, "open", False, "t", "feat", "h" * 40, "acme/bench", "main", "acme/bench",
                    labels)


def run(i: int, sha: str = "a" * 40, **kw: object) -> WorkflowRun:
    base: dict[str, object] = dict(id=i, head_sha=sha, head_branch="feat",
                                   event="pull_request", status="completed",
                                   conclusion="success",
                                   path=".github/workflows/run-sweep.yml",
                                   created_at=f"2026-08-01T00:{i % 60:02d}:00Z",
                                   head_repo="acme/bench", pr_numbers=(7,))
    base.update(kw)
    return WorkflowRun(**base)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- labels

@pytest.mark.parametrize("labels,rules", [
    (("full-sweep-enabled",), set()),
    (("full-sweep-fail-fast-no-canary", "all-evals"), set()),
    ((), {"MR201"}),
    (("sweep-enabled", "full-sweep-enabled"), {"MR201"}),
    (("sweep-enabled",), {"MR202"}),
    (("full-sweep-enabled", "agentx-fast"), {"MR203"}),
    (("non-canary-full-sweep-enabled", "evals-only"), {"MR203"}),
])
def test_labels(labels: tuple[str, ...], rules: set[str]) -> None:
    assert {f.rule for f in reuse.label_findings(pr(labels), "x")} == rules


def test_labels_at_undoes_later_events() -> None:
    ev = [LabelEvent("labeled", "sweep-enabled", "2026-08-01T00:01:00Z"),
          LabelEvent("unlabeled", "sweep-enabled", "2026-08-01T00:05:00Z"),
          LabelEvent("labeled", "full-sweep-enabled", "2026-08-01T00:06:00Z")]
    now = ("full-sweep-enabled",)
    assert reuse.labels_at(now, ev, "2026-08-01T00:03:00Z") == {"sweep-enabled"}
    assert reuse.labels_at(now, ev, "2026-08-01T00:09:00Z") == {"full-sweep-enabled"}
    assert reuse.run_label_problem({"sweep-enabled"}) is not None
    assert reuse.run_label_problem({"full-sweep-enabled", "evals-only"}) is not None
    assert reuse.run_label_problem({"full-sweep-enabled", "all-evals"}) is None


# ----------------------------------------------------------------------------- the rule

def test_newest_authorized_comment_decides_and_bare_unpins() -> None:
    got = auth([comment(1, "/reuse-sweep-run 123"), comment(2, "/reuse-sweep-run")])
    assert got is not None and got.run_id is None and got.comment.id == 2


def test_permission_not_association_decides() -> None:
    """An OWNER/MEMBER/COLLABORATOR label is not a right: the API permission is."""
    cs = [Comment(1, "/reuse-sweep-run 5", "old", "NONE", "2026-08-01T00:01:00Z"),
          Comment(2, "/reuse-sweep-run 9", "collab", "COLLABORATOR", "2026-08-01T00:02:00Z")]
    got = authorization(cs, lambda c: {"old": "admin", "collab": "read"}[c.author])
    assert got is not None and got.run_id == 5 and got.permission == "admin"


def test_permission_is_asked_newest_first_and_only_as_needed() -> None:
    asked: list[int] = []
    cs = [comment(1, "/reuse-sweep-run 1"), comment(2, "hello"), comment(3, "/reuse-sweep-run 3"),
          comment(4, "/reuse-sweep-run 4")]

    def perm(c: Comment) -> str:
        asked.append(c.id)
        return "write" if c.id == 3 else "read"

    got = authorization(cs, perm)
    assert got is not None and got.run_id == 3 and asked == [4, 3]


def test_reference_reading_of_the_comment() -> None:
    """The reference reads '/reuse-sweep-run\\n123' as pinning 123 (G14): ixtool does
    not, and does not count such a comment as its pin either."""
    assert reuse.reference_agrees("/reuse-sweep-run 123", 123)
    assert not reuse.reference_agrees("/reuse-sweep-run 123", 124)
    assert reuse.reference_agrees("/reuse-sweep-run\n123", 123)
    assert not reuse.reference_agrees("/reuse-sweep-run", 123)


def test_comment_records_the_prepared_commit() -> None:
    sha = "0123456789abcdef" * 2 + "01234567"
    body = reuse.comment_body(42, sha)
    assert body.splitlines()[0] == "/reuse-sweep-run 42"
    assert prepared_in(body) == sha
    assert prepared_in(reuse.comment_body(42)) is None
    assert prepared_in("<!-- ixtool merge-with-reuse: prepared xyz -->") is None


# ----------------------------------------------------------------------------- runs

def test_artifact_names_are_exact_or_agentic_prefix() -> None:
    arts = [Artifact("results_bmk", True), Artifact("results_bmk_x", False),
            Artifact("eval_results_all", False), Artifact("bmk_agentic_a", False),
            Artifact("changelog-metadata", False)]
    assert reuse.reusable_artifacts(arts) == ["eval_results_all", "bmk_agentic_a"]


def test_choose_newest_eligible_and_explain_the_rest() -> None:
    commits = ["a" * 40]
    runs = [run(3, sha="b" * 40), run(2, conclusion="failure"), run(1)]
    choice = reuse.choose_run(pr(), commits, runs, None,
                              lambda i: [Artifact("results_bmk", False)], "x")
    assert choice.run is not None and choice.run.id == 1
    assert choice.considered[0].startswith("run 3: its head")
    assert "conclusion is 'failure'" in choice.considered[1]


def test_pinned_run_must_be_valid() -> None:
    commits = ["a" * 40]
    bad = run(4, event="push", path=".github/workflows/other.yml")
    choice = reuse.choose_run(pr(), commits, None, bad, lambda i: [], "x")
    assert choice.run is None and [f.rule for f in choice.findings] == ["MR302"]
    assert "event is 'push'" in choice.findings[0].message
    assert "other.yml" in choice.findings[0].message


@pytest.mark.parametrize(("kw", "reason"), [
    ({"head_repo": "other/bench"}, "head repository is other/bench"),
    ({"head_repo": None}, "head repository is unknown"),
    ({"head_branch": "feat2"}, "ran on branch feat2, not the PR's feat"),
    ({"head_branch": "feat2", "pr_numbers": (8,)}, "it lists #8, not PR #7"),
    ({"sha": "b" * 40}, "is not a commit of the PR"),
])
def test_run_must_belong_to_the_pr(kw: dict[str, object], reason: str) -> None:
    """A stacked PR's run (other branch, other PR), a fork's run on a same-named
    branch, a run on a commit that is not the PR's: not a sweep of this PR, pinned or
    not.  The run's pull_requests list is named when it lists other PRs."""
    bad = run(4, **kw)
    pinned = reuse.choose_run(pr(), ["a" * 40], None, bad,
                              lambda i: [Artifact("results_bmk", False)], "x")
    assert pinned.run is None and reason in pinned.findings[0].message
    listed = reuse.choose_run(pr(), ["a" * 40], [bad], None,
                              lambda i: [Artifact("results_bmk", False)], "x")
    assert listed.run is None and [f.rule for f in listed.findings] == ["MR301"]
    assert reason in listed.findings[0].message


def test_mr301_names_the_real_reason() -> None:
    """Issue 14 item 6: the label the run was made under is the reason, in the text."""
    choice = reuse.choose_run(pr(), ["a" * 40], [run(1)], None,
                              lambda i: [Artifact("results_bmk", False)], "x",
                              labels_of=lambda r: {"sweep-enabled"})
    msg = choice.findings[0].message
    assert "labelled sweep-enabled" in msg and "none succeeded" not in msg
    none = reuse.choose_run(pr(), [], [], None, lambda i: [], "x")
    assert "no completed pull_request run on that branch" in none.findings[0].message


@pytest.mark.parametrize("listed", [(), (8,), (7, 8)], ids=["emptied", "other", "both"])
def test_pull_requests_list_is_only_a_hint(listed: tuple[int, ...]) -> None:
    """GitHub recomputes a run's pull_requests on every read (empty once the PR head
    moved past the run's commit; the open PRs whose head is that commit): a run from
    the PR's repository and branch on one of its commits is the PR's, whatever it lists
    (was: refused unless it listed the PR, so every resume after the push failed)."""
    good = run(4, pr_numbers=listed)
    for pinned, runs in ((good, None), (None, [good])):
        choice = reuse.choose_run(pr(), ["a" * 40], runs, pinned,
                                  lambda i: [Artifact("results_bmk", False)], "x")
        assert choice.run is good and choice.findings == []


@pytest.mark.parametrize("conclusion", ["failure", "cancelled"])
def test_failed_run_only_pinned_and_only_when_allowed(conclusion: str) -> None:
    bad = run(4, conclusion=conclusion)
    arts = [Artifact("results_bmk", False)]
    refused = reuse.choose_run(pr(), ["a" * 40], None, bad, lambda i: arts, "x")
    assert refused.run is None and "--allow-failed-run" in refused.findings[0].message
    pinned = reuse.choose_run(pr(), ["a" * 40], None, bad, lambda i: arts, "x",
                              allow_failed=True)
    assert pinned.run is bad and pinned.findings == []
    unpinned = reuse.choose_run(pr(), ["a" * 40], [bad], None, lambda i: arts, "x",
                                allow_failed=True)
    assert unpinned.run is None, "never an unpinned choice"
    none = reuse.choose_run(pr(), ["a" * 40], None, bad, lambda i: [], "x",
                            allow_failed=True)
    assert none.run is None and "artifact" in none.findings[0].message


# ----------------------------------------------------------------------------- messages

@pytest.mark.parametrize("text", ["x [skip-sweep]", "[SKIP CI] y", "a\n\nskip-checks: true",
                                  "***NO_CI***", "/reuse-sweep-run 4", "[ci skip]"])
def test_lint_finds_control_tokens(text: str) -> None:
    assert reuse.lint_message(text)


def test_squash_message_is_clean_even_for_a_dirty_title() -> None:
    p = PullInfo(7, "open", False, "[skip ci] Sweep [skip-sweep]", "feat", "h" * 40, None,
                 "main", "acme/bench", ())
    title, body = reuse.squash_message(p, run(1), "acme/bench")
    assert title == "Sweep (#7)"
    assert reuse.lint_message(title + "\n" + body) == []
    assert "sweep run 1" in body


def test_prep_message_carries_skip_sweep_and_trailer() -> None:
    msg = reuse.prep_message(pr(), 42, "refresh")
    assert "[skip-sweep]" in msg and f"{reuse.TRAILER}: 42" in msg


def test_squash_body_names_a_failed_run_and_the_benchmarked_commit() -> None:
    failed = run(1, conclusion="cancelled")
    _, body = reuse.squash_message(pr(), failed, "acme/bench", head="d" * 40,
                                   failed_run=True)
    assert "concluded cancelled; reused with --allow-failed-run" in body
    assert f"head {'a' * 12}" in body and "d" * 12 in body


def test_squash_body_names_unbenchmarked_commits() -> None:
    later = ["b" * 40, "c" * 40]
    title, body = reuse.squash_message(pr(), run(1), "acme/bench", later)
    assert "--allow-unbenchmarked" in body and all(sha in body for sha in later)
    assert reuse.lint_message(title + "\n" + body) == []


# ----------------------------------------------------------------------------- data-driven

CASES = Path(__file__).resolve().parents[1] / "cases" / "merge" / "authorization.json"
_AUTH = json.loads(CASES.read_text())["cases"]


@pytest.mark.parametrize("case", _AUTH, ids=[c["name"] for c in _AUTH])
def test_authorization_cases(case: dict[str, Any]) -> None:
    raw = case["comments"]
    cs = [comment(c.get("id", i + 1), c["body"], c.get("at", i + 1), c.get("created"))
          for i, c in enumerate(raw)]
    perms = {cs[i].id: c.get("perm", "write") for i, c in enumerate(raw)}
    got = auth(cs, perms)
    assert ("none" if got is None else got.run_id) == case["run"]
    if got is not None:
        assert got.comment.id == case["by"]
        if got.run_id is not None:
            assert reuse.reference_agrees(got.comment.body, got.run_id) == case["ref_agrees"]
