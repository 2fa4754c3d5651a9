"""Pure reuse rules: labels, the authorization grammar (§8.1, G14), run choice, messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferencex_tools.io.github import (
    Artifact,
    Comment,
    LabelEvent,
    PullCommit,
    PullInfo,
    WorkflowRun,
)
from inferencex_tools.merge import reuse


def comment(i: int, body: str, assoc: str = "MEMBER", when: int | None = None) -> Comment:
    return Comment(i, body, f"u{i}", assoc, f"2026-08-01T00:{when if when is not None else i:02d}"
                   ":00Z")


def pr(labels: tuple[str, ...] = ("full-sweep-enabled",)) -> PullInfo:
    return PullInfo(7, "open", False, "t", "feat", "h" * 40, "acme/bench", "main", "acme/bench",
                    labels)


def run(i: int, sha: str = "a" * 40, **kw: object) -> WorkflowRun:
    base: dict[str, object] = dict(id=i, head_sha=sha, head_branch="feat",
                                   event="pull_request", status="completed",
                                   conclusion="success",
                                   path=".github/workflows/run-sweep.yml",
                                   created_at=f"2026-08-01T00:{i % 60:02d}:00Z")
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


# ----------------------------------------------------------------------------- grammar

def test_newest_authorized_comment_decides_and_bare_unpins() -> None:
    cs = [comment(1, "/reuse-sweep-run 123"), comment(2, "/reuse-sweep-run")]
    auth = reuse.authorization(cs)
    assert auth is not None and auth.run_id is None and auth.comment.id == 2


def test_last_match_within_a_comment_decides() -> None:
    auth = reuse.authorization([comment(1, "/reuse-sweep-run 5\n  /reuse-sweep-run 6  ")])
    assert auth is not None and auth.run_id == 6


def test_non_members_and_inline_mentions_do_not_count() -> None:
    cs = [comment(1, "/reuse-sweep-run 5"),
          comment(2, "/reuse-sweep-run 9", assoc="CONTRIBUTOR"),
          comment(3, "please run /reuse-sweep-run 9 later")]
    auth = reuse.authorization(cs)
    assert auth is not None and auth.run_id == 5


def test_ordering_is_by_created_at_not_list_order() -> None:
    cs = [comment(2, "/reuse-sweep-run 8", when=30), comment(1, "/reuse-sweep-run 5", when=10)]
    auth = reuse.authorization(cs)
    assert auth is not None and auth.run_id == 8


def test_g14_newline_pin_is_ambiguous_so_not_trusted() -> None:
    """The reference reads '/reuse-sweep-run\\n123' as pinning 123; ixtool's one-line
    reading sees an unpinned command — they disagree, so ixtool does not treat the
    run as authorized and posts an unambiguous comment."""
    cs = [comment(1, "/reuse-sweep-run\n123")]
    ref, strict = reuse.authorization(cs), reuse.authorization(cs, strict=True)
    assert ref is not None and ref.run_id == 123
    assert strict is not None and strict.run_id is None
    assert reuse.pinned_to(cs, 123) is None
    assert reuse.pinned_to([comment(1, "/reuse-sweep-run 123")], 123) is not None
    assert reuse.pinned_to([comment(1, "/reuse-sweep-run 123")], 124) is None


# ----------------------------------------------------------------------------- runs

def test_artifact_names_are_exact_or_agentic_prefix() -> None:
    arts = [Artifact("results_bmk", True), Artifact("results_bmk_x", False),
            Artifact("eval_results_all", False), Artifact("bmk_agentic_a", False),
            Artifact("changelog-metadata", False)]
    assert reuse.reusable_artifacts(arts) == ["eval_results_all", "bmk_agentic_a"]


def test_choose_newest_eligible_and_explain_the_rest() -> None:
    commits = [PullCommit("a" * 40, "x")]
    runs = [run(3, sha="b" * 40), run(2, conclusion="failure"), run(1)]
    choice = reuse.choose_run(pr(), commits, runs, None,
                              lambda i: [Artifact("results_bmk", False)], "x")
    assert choice.run is not None and choice.run.id == 1
    assert choice.considered[0].startswith("run 3: its head")
    assert "conclusion is 'failure'" in choice.considered[1]


def test_pinned_run_must_be_valid() -> None:
    commits = [PullCommit("a" * 40, "x")]
    bad = run(4, event="push", path=".github/workflows/other.yml")
    choice = reuse.choose_run(pr(), commits, None, bad, lambda i: [], "x")
    assert choice.run is None and [f.rule for f in choice.findings] == ["MR302"]
    assert "event is 'push'" in choice.findings[0].message
    assert "other.yml" in choice.findings[0].message


def test_unbenchmarked_commits_ignore_ixtool_preparation() -> None:
    commits = [PullCommit("a" * 40, "x"), PullCommit("b" * 40, "fix typo"),
               PullCommit("c" * 40, reuse.prep_message(pr(), 1, "merge"))]
    assert [c.sha[0] for c in reuse.unbenchmarked(commits, "a" * 40)] == ["b"]


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
    assert "[skip-sweep]" in msg and reuse.prep_run_id(msg) == 42
    assert reuse.prep_run_id("chore: x\n\nIxtool-Reuse-Run: 42x\n") is None


# ----------------------------------------------------------------------------- data-driven

CASES = Path(__file__).resolve().parents[1] / "cases" / "merge" / "authorization.json"
_AUTH = json.loads(CASES.read_text())["cases"]


@pytest.mark.parametrize("case", _AUTH, ids=[c["name"] for c in _AUTH])
def test_authorization_cases(case: dict[str, object]) -> None:
    raw = case["comments"]
    assert isinstance(raw, list)
    cs = [comment(i + 1, c["body"], c.get("assoc", "MEMBER"), c.get("at", i + 1))
          for i, c in enumerate(raw)]

    def reading(strict: bool) -> object:
        a = reuse.authorization(cs, strict=strict)
        return "none" if a is None else a.run_id

    assert reading(False) == case["ref"]
    assert reading(True) == case["strict"]
    assert (reuse.pinned_to(cs, int(str(case["run"]))) is not None) == case["done"]
