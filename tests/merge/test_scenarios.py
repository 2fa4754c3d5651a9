"""End-to-end scenarios of merge-with-reuse against the fake GitHub and a real origin."""

from __future__ import annotations

from tests.merge.conftest import PRN, SLUG, World, git


def test_happy_path(world: World) -> None:
    head = world.open_pr()
    world.clone_user()
    before = git(world.user, "rev-parse", "HEAD")
    res = world.run()
    print(res.findings, res.info, world.said, world.progress)
    assert res.ok
    assert res.info["state"] == "merged"
    pr = world.fake.prs[PRN]
    assert pr.merged and res.info["merge_sha"] == pr.merge_commit_sha
    assert world.fake.reuse_comments(PRN) == ["/reuse-sweep-run 1001"]
    assert f"pr-link: https://github.com/{SLUG}/pull/{PRN}\n" in world.main_changelog()
    assert git(world.user, "rev-parse", "HEAD") == before
    del head
