"""A reuse authorization skips the sweep only for the head it was given for (issue 27
item 10), read the same way by ``ci plan`` and ``ci gate``.

Each scenario builds the PR on a real bare ``origin`` and the fake GitHub, then hands
``ci plan`` and ``ci gate`` what pr-gate.yml hands them on the ``synchronize`` of the
current head: the event payload (``pull_request.updated_at`` = when GitHub recorded
the push), the comments with their authors' permissions (the reuse-comments job) and
a full clone.  Before the fix every one of the "sweep runs" cases answered "no sweep"
(CI301) for the later head.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from inferencex_tools.ci import gate
from inferencex_tools.ci.labels import Decision
from inferencex_tools.ci.service import PlanRequest, plan
from tests.merge.conftest import (
    AUTHOR_ENV,
    BASE,
    CANON,
    PR_ENTRY,
    PRN,
    SLUG,
    Crash,
    World,
    entry,
    git,
    rules_of,
    workflow_comments,
)

BEFORE: dict[str, str] = {}  # head → the head its push replaced (the event's "before")
PUSHER: dict[str, str] = {}  # head → who pushed it (the synchronize event's sender)


def pushed(world: World, files: dict[str, str] | None = None, *, merge_main: bool = False,
           before_push: Callable[[str], None] | None = None,
           then_empty: bool = False, by: str = "author",
           env: dict[str, str] = AUTHOR_ENV) -> tuple[str, str]:
    """``by`` (the PR's author) pushes a commit written with ``env``'s git identity (and,
    with ``then_empty``, an empty commit on top of it in the same push); (the new head,
    the time GitHub recorded the push).  ``before_push(sha)`` runs between the commits
    and the push (to forge a record)."""
    other = world.tmp / f"author-{len(list(world.tmp.iterdir()))}"
    git(world.tmp, "clone", "-q", str(world.bare), str(other))
    git(other, "checkout", "-q", "feat")
    old = git(other, "rev-parse", "HEAD")
    if merge_main:
        git(other, "merge", "-q", "--no-ff", "--no-commit", "origin/main")
    for rel, text in (files or {}).items():
        (other / rel).parent.mkdir(parents=True, exist_ok=True)
        (other / rel).write_text(text)
    git(other, "add", "-A")
    commit = ["git", "commit", "-q", "--allow-empty", "-m"]
    subprocess.run([*commit, "author's commit"], cwd=other, env=env, check=True,
                   capture_output=True)
    if then_empty:
        subprocess.run([*commit, "chore: refresh"], cwd=other, env=env, check=True,
                       capture_output=True)
    sha = git(other, "rev-parse", "HEAD")
    if before_push is not None:
        before_push(sha)
    git(other, "push", "-q", "origin", "feat")
    BEFORE[sha] = old
    PUSHER[sha] = by
    return sha, world.fake.tick()


def pusher(world: World, head: str) -> str:
    """Who pushed ``head``: recorded by :func:`pushed`, else merge-with-reuse (ixtool's
    preparation commit, pushed by its user) or the PR's author (the PR's first commit)."""
    if head in PUSHER:
        return PUSHER[head]
    return world.fake.login if head in world.ixtool_commits_on_branch() else "author"


def decide(world: World, head: str, pushed_at: str) -> list[tuple[Decision, set[str]]]:
    """ci plan's and ci gate's decisions on the synchronize of ``head``, each with its
    rule ids (plus "for-head" when the authorization in force covers ``head``: a
    ``[skip-sweep]`` head is not swept anyway, CI107 decides before reuse)."""
    pr = world.fake.prs[PRN]
    payload = world.fake.pr_payload(pr)
    assert payload["head"]["sha"] == head
    before = BEFORE.get(head) or git(world.bare, "rev-parse", f"{head}^")
    event = {"action": "synchronize", "number": PRN, "before": before, "after": head,
             "repository": {"full_name": SLUG, "default_branch": "main"},
             "sender": {"login": pusher(world, head)},
             "pull_request": payload | {"updated_at": pushed_at}}
    tmp = world.tmp / f"ci-{len(list(world.tmp.iterdir()))}"
    tmp.mkdir()
    (tmp / "event.json").write_text(json.dumps(event), encoding="utf-8")
    (tmp / "comments.json").write_text(json.dumps(workflow_comments(world)), encoding="utf-8")
    clone = tmp / "clone"
    git(world.tmp, "clone", "-q", str(world.bare), str(clone))
    decision, result = plan(PlanRequest(event_path=tmp / "event.json", event_name="pull_request",
                                        comments=tmp / "comments.json", repo=clone))
    auth = result.info["reuse_authorization"]
    covered = {"for-head"} if auth and auth["for_head"] else set()
    req = gate.GateRequest(event_path=tmp / "event.json", event_name="pull_request",
                           comments=tmp / "comments.json", repo=clone)
    by_gate, _ = gate._plan(req, gate._Repo(clone))
    assert {f.rule for f in by_gate.findings} == {f.rule for f in decision.findings}
    return [(decision, rules_of(result) | covered),
            (by_gate, {f.rule for f in by_gate.findings} | covered)]


def assert_sweep_runs(world: World, head: str, pushed_at: str, *, stale: bool = True,
                      why: str = "", rule: str = "CI302") -> None:
    """The sweep runs; ``rule`` (CI302: not for this head, CI303: by someone who pushed
    or wrote what it covers) says why, with ``why`` in its message, when ``stale``."""
    for decision, rules in decide(world, head, pushed_at):
        assert decision.reuse_check == "pr"
        assert decision.sweep.run is True, decision.sweep.reason
        assert "CI301" not in rules
        assert ({"CI302", "CI303"} & rules == {rule}) is stale, rules
        if why:
            msg = next(f.message for f in decision.findings if f.rule == rule)
            assert why in msg, msg


def assert_sweep_skipped(world: World, head: str, pushed_at: str) -> None:
    for decision, rules in decide(world, head, pushed_at):
        assert decision.sweep.run is False and "for-head" in rules, decision.findings
        assert not {"CI302", "CI303"} & rules


RECIPE = {"benchmarks/dsr1_h200.sh": "#!/bin/sh\nexec sglang --tp 8\n"}


# ----------------------------------------------------------------------- stale: sweep runs

def test_maintainer_pin_then_a_later_push(world: World) -> None:
    world.open_pr()
    world.fake.add_comment(PRN, "/reuse-sweep-run 1001", login="lead", permission="admin")
    head, at = pushed(world, RECIPE)
    assert_sweep_runs(world, head, at, why="before the push")


def test_pin_of_a_run_that_does_not_exist(world: World) -> None:
    world.open_pr()
    world.fake.add_comment(PRN, "/reuse-sweep-run 99999", login="lead", permission="write")
    head, at = pushed(world, RECIPE)
    assert_sweep_runs(world, head, at, why="before the push")


def test_the_authors_own_bare_command(world: World) -> None:
    world.open_pr()
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="author", permission="write")
    head, at = pushed(world, RECIPE)
    assert_sweep_runs(world, head, at)


def test_ixtool_comment_left_by_a_failed_merge_attempt(world: World) -> None:
    """merge-with-reuse posted its comment (recording its commit), then its push was
    rejected because the author pushed meanwhile: that comment does not cover the
    author's head."""
    world.open_pr()
    world.clone_user()
    theirs: list[tuple[str, str]] = []
    world.on_step["commit"] = lambda: theirs.append(pushed(world, RECIPE))
    res = world.run()
    assert "MR505" in rules_of(res)
    assert "prepared" in world.fake.comments[PRN][-1]["body"]
    head, at = theirs[0]
    # ixtool's comment is NEWER than the author's push: it still covers only the
    # commit it records
    assert world.fake.comments[PRN][-1]["created_at"] > at
    assert_sweep_runs(world, head, at, why="not of the head " + head[:12])


@pytest.mark.parametrize("body", [
    "Example for later:\n```\n/reuse-sweep-run 1001\n```",
    "<!--\n/reuse-sweep-run 1001\n-->",
    "    /reuse-sweep-run 1001",
], ids=["code-fence", "html-comment", "indented"])
def test_command_that_does_not_render_as_text(world: World, body: str) -> None:
    """Posted after the push, so it would count if it were a command: it is not one."""
    world.open_pr()
    head, at = pushed(world, RECIPE)
    world.fake.add_comment(PRN, body, login="lead", permission="admin")
    assert_sweep_runs(world, head, at, stale=False)


@pytest.mark.parametrize("merge_main", [False, True], ids=["commit", "merge-of-main"])
def test_forged_prepared_record(world: World, merge_main: bool) -> None:
    """Issue 27 item 9 in CI: the author (write) comments the command with ixtool's
    hidden record of the commit it is about to push; the commit changes a recipe (and
    may merge main).  The record matches the head but the commit is not a preparation
    commit: the sweep runs."""
    world.open_pr()
    if merge_main:
        world.move_main(conflict=False)

    def forge(sha: str) -> None:
        world.fake.add_comment(
            PRN, f"/reuse-sweep-run 1001\n<!-- ixtool merge-with-reuse: prepared {sha} -->",
            login="author", permission="write")

    head, at = pushed(world, RECIPE, merge_main=merge_main, before_push=forge)
    assert_sweep_runs(world, head, at, why="benchmarks/dsr1_h200.sh")


def test_forged_record_on_a_clean_commit_over_an_unswept_one(world: World) -> None:
    """One push of two commits: a recipe change, then an empty commit that is, on its
    own, exactly what ixtool's refresh commit looks like; the record names the empty
    one.  Its first parent is not the head the push replaced (never swept): the
    sweep runs."""
    world.open_pr()

    def forge(sha: str) -> None:
        world.fake.add_comment(
            PRN, f"/reuse-sweep-run 1001\n<!-- ixtool merge-with-reuse: prepared {sha} -->",
            login="author", permission="write")

    head, at = pushed(world, {**RECIPE, "perf-changelog.yaml": BASE + "\n" + entry(
        *PR_ENTRY, CANON)}, before_push=forge, then_empty=True)
    assert_sweep_runs(world, head, at, why="does not sit on the previous head")


# ------------------------------------------------------------------ for this head: skipped

@pytest.mark.parametrize("main_moved", [False, True], ids=["refresh", "merge"])
def test_ixtool_preparation_commit_is_skipped(world: World, main_moved: bool) -> None:
    world.open_pr()
    if main_moved:
        world.move_main()
    world.clone_user()
    world.crash_after = "push"
    with pytest.raises(Crash):
        world.run()
    at = world.fake.tick()
    head = git(world.bare, "rev-parse", "feat")
    assert f"prepared {head}" in world.fake.comments[PRN][-1]["body"]
    assert_sweep_skipped(world, head, at)


def test_comment_newer_than_the_push(world: World) -> None:
    """A maintainer looks at the pushed head and authorizes it (then re-runs the gate)."""
    world.open_pr()
    head, at = pushed(world, RECIPE)
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_skipped(world, head, at)


def test_unknown_push_time_counts_only_the_record(world: World) -> None:
    """Without updated_at in the payload a comment's age proves nothing."""
    world.open_pr()
    head, _ = pushed(world, RECIPE)
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_runs(world, head, "", why="unknown")
