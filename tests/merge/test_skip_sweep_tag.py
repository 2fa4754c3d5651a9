"""``[skip-sweep]`` skips the PR sweep only on the push of a merge-with-reuse preparation
commit, recognised by what the commit is (``ci/prepared.py``), never by its message.

In the reference (spec §8, ``skip-pr-sweep``) the tag in the head commit's message
switches the sweep off for anyone who can push: the author tags a recipe change and
the sweep check is green for code nobody benchmarked.  Each scenario builds the PR on
a real bare ``origin`` and the fake GitHub, then hands ``ci plan`` and ``ci gate`` what
pr-gate.yml hands them: the ``pull_request`` payload of the push (``before`` = the head
it replaced), the comments as the reuse-comments job writes them, and a full clone.
Before the fix every "sweep runs" case answered "no sweep" (CI107).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from inferencex_tools.ci import gate
from inferencex_tools.ci.labels import Decision
from inferencex_tools.ci.service import PlanRequest, plan
from inferencex_tools.io.github import PullInfo
from inferencex_tools.merge.reuse import prep_message
from tests.merge.conftest import (
    BASE,
    CANON,
    PR_ENTRY,
    PRN,
    SLUG,
    Crash,
    World,
    entry,
    git,
    workflow_comments,
)

FULL = "full-sweep-enabled"
RECIPE = "benchmarks/dsr1_h200.sh"
PREVIOUS: dict[str, str] = {}  # head → the head its push replaced (the event's "before")


def ixtool_message(kind: str) -> str:
    """The message merge-with-reuse gives its commit on PR #7 (merge, canonicalize or
    refresh), byte for byte."""
    pr = PullInfo(PRN, "open", False, "Sweep dsr1 on h200", "feat", "0" * 40, SLUG, "main",
                  SLUG, (FULL,))
    return prep_message(pr, 1001, kind)


def push(world: World, message: str, build: Callable[[Path], None] = lambda _: None, *,
         unswept_under: bool = False) -> str:
    """The author pushes one commit with ``message`` on the PR branch (after ``build``
    changed the clone; with ``unswept_under``, a recipe commit under it in the same
    push).  Returns the new head."""
    clone = world.tmp / f"author-{len(list(world.tmp.iterdir()))}"
    git(world.tmp, "clone", "-q", str(world.bare), str(clone))
    git(clone, "checkout", "-q", "feat")
    old = git(clone, "rev-parse", "HEAD")
    if unswept_under:
        write(clone, RECIPE, "#!/bin/sh\nexec sglang --tp 4\n")
        git(clone, "add", "-A")
        git(clone, "commit", "-q", "-m", "tune dsr1")
    build(clone)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "--allow-empty", "-m", message)
    sha = git(clone, "rev-parse", "HEAD")
    git(clone, "push", "-q", "origin", "feat")
    PREVIOUS[sha] = old
    return sha


def write(clone: Path, rel: str, text: str) -> None:
    (clone / rel).parent.mkdir(parents=True, exist_ok=True)
    (clone / rel).write_text(text)


def decisions(world: World, head: str, *, action: str = "synchronize",
              comments: bool = False) -> list[Decision]:
    """``ci plan``'s and ``ci gate``'s decisions on the event ``action`` at ``head``."""
    payload = world.fake.pr_payload(world.fake.prs[PRN])
    assert payload["head"]["sha"] == head
    event: dict[str, object] = {
        "action": action, "number": PRN,
        "repository": {"full_name": SLUG, "default_branch": "main"},
        # who pushed: merge-with-reuse's user for its own commit, else the PR's author
        "sender": {"login": world.fake.login if head in world.ixtool_commits_on_branch()
                   else "author"},
        "pull_request": payload | {"updated_at": world.fake.tick()}}
    if action == "synchronize":
        event |= {"before": PREVIOUS.get(head) or git(world.bare, "rev-parse", f"{head}^"),
                  "after": head}
    else:
        event["label"] = {"name": FULL}
    tmp = world.tmp / f"ci-{len(list(world.tmp.iterdir()))}"
    tmp.mkdir()
    (tmp / "event.json").write_text(json.dumps(event), encoding="utf-8")
    (tmp / "comments.json").write_text(
        json.dumps(workflow_comments(world) if comments else []), encoding="utf-8")
    clone = tmp / "clone"
    git(world.tmp, "clone", "-q", str(world.bare), str(clone))
    by_plan, result = plan(PlanRequest(event_path=tmp / "event.json", event_name="pull_request",
                                       comments=tmp / "comments.json", repo=clone))
    req = gate.GateRequest(event_path=tmp / "event.json", event_name="pull_request",
                           comments=tmp / "comments.json", repo=clone)
    by_gate, _ = gate._plan(req, gate._Repo(clone))
    assert by_gate.findings == by_plan.findings and by_gate.sweep == by_plan.sweep
    assert {f.rule for f in result.findings} == {f.rule for f in by_plan.findings}
    return [by_plan, by_gate]


def message_of(d: Decision, rule: str) -> str:
    found = [f.message for f in d.findings if f.rule == rule]
    assert found, (rule, d.findings)
    return found[0]


def assert_sweep_runs(world: World, head: str, why: str, **kw: object) -> None:
    for d in decisions(world, head, **kw):  # type: ignore[arg-type]
        assert d.sweep.run is True, d.sweep.reason
        assert d.skip_sweep_tag and not d.skip_sweep
        assert "CI107" not in {f.rule for f in d.findings}
        msg = message_of(d, "CI110")
        assert head[:12] in msg and why in msg, msg


def assert_sweep_skipped(world: World, head: str, **kw: object) -> None:
    for d in decisions(world, head, **kw):  # type: ignore[arg-type]
        assert d.sweep.run is False and d.skip_sweep, d.findings
        assert "CI110" not in {f.rule for f in d.findings}
        msg = message_of(d, "CI107")
        assert "preparation commit on top of the previous head" in msg
        assert PREVIOUS.get(head, git(world.bare, "rev-parse", f"{head}^"))[:12] in msg


# ----------------------------------------------------------------------- the sweep runs

def _recipe(clone: Path) -> None:
    write(clone, RECIPE, "#!/bin/sh\nexec sglang --tp 8\n")


def _merge_main_and_recipe(clone: Path) -> None:
    git(clone, "merge", "-q", "--no-ff", "--no-commit", "origin/main")
    _recipe(clone)


def _merge_other_branch(clone: Path) -> None:
    """Merge a branch that is not main (it adds a recipe)."""
    git(clone, "checkout", "-q", "-b", "side", "origin/main")
    _recipe(clone)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "side")
    git(clone, "checkout", "-q", "feat")
    git(clone, "merge", "-q", "--no-ff", "--no-commit", "side")


def _other_link(clone: Path) -> None:
    write(clone, "perf-changelog.yaml", BASE + "\n" + entry(*PR_ENTRY, CANON[:-1] + "8"))


# (id, message, what the push does, main moves first, a recipe commit under it, why)
FORGED: list[tuple[str, str, Callable[[Path], None], bool, bool, str]] = [
    ("authors-own-tag", "tune dsr1 on h200 [skip-sweep]", _recipe, False, False, RECIPE),
    ("ixtool-message-recipe", ixtool_message("refresh"), _recipe, False, False, RECIPE),
    ("ixtool-message-merge-of-main-and-recipe", ixtool_message("merge"),
     _merge_main_and_recipe, True, False, "differs from the merge of"),
    ("ixtool-message-merge-of-another-branch", ixtool_message("merge"), _merge_other_branch,
     False, False, "which is not a commit of main"),
    ("ixtool-message-on-an-unswept-commit", ixtool_message("refresh"), lambda _: None,
     False, True, "does not sit on the previous head"),
    ("ixtool-message-other-link", ixtool_message("canonicalize"), _other_link, False, False,
     "links canonicalized"),
]


@pytest.mark.parametrize("case", FORGED, ids=[c[0] for c in FORGED])
def test_tag_on_a_commit_that_is_not_a_preparation_commit(
        world: World, case: tuple[str, str, Callable[[Path], None], bool, bool, str]) -> None:
    """The author's own ``[skip-sweep]`` on a recipe change, and commits whose message
    is ixtool's byte for byte but whose tree or parents are not what merge-with-reuse
    builds: the sweep runs, CI110 names why (the file, the parent, the link)."""
    _, message, build, main_moves, unswept, why = case
    world.open_pr()
    if main_moves:
        world.move_main(conflict=False)
    head = push(world, message, build, unswept_under=unswept)
    assert_sweep_runs(world, head, why)


def test_with_the_comments_of_the_real_workflow(world: World) -> None:
    """The same push with the PR's comments handed over as pr-gate.yml does (an
    authorization posted before the push): the sweep runs, CI110 and CI302 say why."""
    world.open_pr()
    world.fake.add_comment(PRN, "/reuse-sweep-run 1001", login="lead", permission="admin")
    head = push(world, ixtool_message("refresh"), _recipe)
    assert_sweep_runs(world, head, RECIPE, comments=True)
    for d in decisions(world, head, comments=True):
        assert "CI302" in {f.rule for f in d.findings}


# ------------------------------------------------------------ a preparation commit: skipped

@pytest.mark.parametrize("kind", ["canonicalize", "refresh", "merge"])
def test_ixtool_preparation_commit_skips_the_sweep(world: World, kind: str) -> None:
    """merge-with-reuse's own commit (its real code path, stopped after the push): the
    tag skips the sweep of that push, without any comment (CI107 names the previous
    head it sits on), and with the comments pr-gate.yml hands over."""
    world.open_pr(link=CANON if kind == "refresh" else "XXX")
    if kind == "merge":
        world.move_main()
    before = git(world.bare, "rev-parse", "feat")
    world.clone_user()
    world.crash_after = "push"
    with pytest.raises(Crash):
        world.run()
    head = git(world.bare, "rev-parse", "feat")
    assert git(world.bare, "rev-parse", f"{head}^") == before
    assert ixtool_message(kind).split("\n")[0] in git(world.bare, "log", "-1", "--format=%B",
                                                      head)
    PREVIOUS[head] = before
    assert_sweep_skipped(world, head)
    assert_sweep_skipped(world, head, comments=True)


def test_a_commit_built_like_ixtool_s_is_one(world: World) -> None:
    """The author's own empty ``[skip-sweep]`` commit on the benchmarked head adds
    nothing to the PR's content: it checks out as a refresh commit, whoever made it."""
    world.open_pr(link=CANON)
    head = push(world, "nothing changes [skip-sweep]")
    assert_sweep_skipped(world, head)


@pytest.mark.parametrize("action", ["labeled", "ready_for_review", "reopened"])
def test_a_prepared_head_is_swept_on_other_events(world: World, action: str) -> None:
    """A label added (or ready-for-review, reopen) at a prepared head asks for a sweep the
    previous head's push never decided (it may have been a draft, or unlabelled): the
    tag counts only on the push of the preparation commit."""
    world.open_pr(link=CANON)
    head = push(world, ixtool_message("refresh"))
    assert_sweep_runs(world, head, f"not on a {action} event", action=action)
