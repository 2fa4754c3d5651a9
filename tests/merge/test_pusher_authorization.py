""""Not the PR's author" is not "not the pusher" (issue 32, item 5), read by ``ci plan``
and ``ci gate`` on the ``synchronize`` of the head, as in ``test_stale_authorization``.

A write user who pushes to a colleague's PR and then comments ``/reuse-sweep-run`` got
"no sweep" (CI301) for the head they pushed, never benchmarked: the rule only asked
whether the comment's author was the PR's author.  Now a command counts only when its
author neither pushed the head (the event's ``sender``) nor authored or committed a PR
commit, as GitHub reports them (``GET /repos/{repo}/pulls/{n}/commits``, read here with
PyGithub from the fake GitHub: each commit's ``author`` / ``committer`` account, null
when its e-mail belongs to none); when GitHub cannot say, the sweep runs.  CI303 says
why.  A maintainer who only reviewed and comments still skips the sweep.
"""

from __future__ import annotations

from tests.merge.conftest import AUTHOR_ENV, ENV, PRN, World, git
from tests.merge.test_stale_authorization import (
    RECIPE,
    assert_sweep_runs,
    assert_sweep_skipped,
    decide,
    pushed,
)

LEAD_ENV = {**ENV, "GIT_AUTHOR_NAME": "Lead", "GIT_AUTHOR_EMAIL": "lead@example.invalid",
            "GIT_COMMITTER_NAME": "Lead", "GIT_COMMITTER_EMAIL": "lead@example.invalid"}


def test_a_write_user_who_pushed_the_head_cannot_skip_its_sweep(world: World) -> None:
    world.open_pr()
    head, at = pushed(world, RECIPE, by="lead", env=LEAD_ENV)
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_runs(world, head, at, rule="CI303", why="@lead pushed the head")


def test_nor_the_pusher_of_the_head_with_commits_of_the_author(world: World) -> None:
    """The lead pushes the author's commits (a rebase, a `gh pr checkout` and push): the
    commits are the author's, the push is the lead's."""
    world.open_pr()
    head, at = pushed(world, RECIPE, by="lead")
    world.fake.add_comment(PRN, "/reuse-sweep-run 1001", login="lead", permission="admin")
    assert_sweep_runs(world, head, at, rule="CI303", why="@lead pushed the head")


def test_nor_the_author_of_an_earlier_commit(world: World) -> None:
    """The lead wrote a commit; the author pushed it with one of their own on top."""
    world.open_pr()
    pushed(world, {"benchmarks/a.sh": "echo a\n"}, by="author", env=LEAD_ENV)
    head, at = pushed(world, RECIPE)
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_runs(world, head, at, rule="CI303", why="@lead authored commit")


def test_nor_the_committer_of_a_commit(world: World) -> None:
    """The author's commit, re-committed by the lead (cherry-pick, rebase, amend)."""
    world.open_pr()
    env = {**AUTHOR_ENV, "GIT_COMMITTER_NAME": "Lead",
           "GIT_COMMITTER_EMAIL": "lead@example.invalid"}
    head, at = pushed(world, RECIPE, env=env)
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_runs(world, head, at, rule="CI303", why="@lead committed commit")


def test_a_commit_github_cannot_attribute_leaves_the_sweep_on(world: World) -> None:
    """A commit whose author e-mail belongs to no GitHub account: GitHub cannot say the
    commenter did not write it."""
    world.open_pr()
    env = {**AUTHOR_ENV, "GIT_AUTHOR_EMAIL": "someone@laptop.invalid"}
    head, at = pushed(world, RECIPE, env=env)
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_runs(world, head, at, rule="CI303", why="to no account")


def test_a_pr_with_more_commits_than_github_lists_leaves_the_sweep_on(world: World) -> None:
    world.open_pr()
    pushed(world, {"benchmarks/a.sh": "echo a\n"})
    head, at = pushed(world, RECIPE)
    world.fake.commits_cap = 2  # three commits, GitHub lists two
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_runs(world, head, at, rule="CI303", why="more commits than GitHub lists")


def test_a_maintainer_who_pushed_nothing_still_authorizes(world: World) -> None:
    world.open_pr()
    pushed(world, {"benchmarks/a.sh": "echo a\n"})
    head, at = pushed(world, RECIPE)
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_skipped(world, head, at)


def test_the_commits_are_read_as_github_reports_them(world: World) -> None:
    """The accounts come from the API's ``author`` / ``committer`` objects (what PyGithub
    reads), not from the git identities in the commits."""
    from tests.merge.conftest import pr_commits_via_api

    world.open_pr()
    head, _ = pushed(world, RECIPE, env=LEAD_ENV)
    listed = pr_commits_via_api(world)
    assert [c["sha"] for c in listed][-1] == head
    assert listed[-1]["author"] == {"login": "lead"} == listed[-1]["committer"]
    assert listed[0]["author"] == {"login": "author"}
    assert git(world.bare, "log", "-1", "--format=%ae", head) == "lead@example.invalid"
    world.fake.accounts.pop("lead@example.invalid")
    assert pr_commits_via_api(world)[-1]["author"] is None
    assert decide  # the decisions above read exactly this list (workflow_comments)
