"""Posting against the fake GitHub: GitHub Enterprise root, markers owned by the token's
user only, 5xx on the review POST not retried, the head check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inferencex_tools.errors import ForgeError, UsageError
from inferencex_tools.io.github import Forge, RetryPolicy
from inferencex_tools.review.model import SUMMARY_MARKER, LineComment, Review
from inferencex_tools.review.render import review_body, summary_markdown
from inferencex_tools.review.service import check_head, post
from tests.merge.fake_github import Fault
from tests.review.world import PRN, SLUG, World, make_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path)
    yield w
    w.fake.stop()


def forge(w: World, *, ghe: bool = False) -> Forge:
    if ghe:
        w.fake.prefix = "/api/v3"
    return Forge(SLUG, token=w.fake.token, api_url=w.fake.url + ("/api/v3" if ghe else ""),
                 retry=RetryPolicy(sleep=lambda _s: None), throttle=False)


def review(w: World, comments: bool = True) -> Review:
    r = Review(repo=SLUG, pr=PRN, pr_url=None, base="origin/main", merge_base="0" * 40,
               head_sha=w.fake.ref("refs/heads/feat"), verdict="pass")
    if comments:
        r.comments = [LineComment("perf-changelog.yaml", 18, "fix", suggestion="  pr-link: x\n")]
    return r


def test_enterprise_root_and_idempotence(world: World) -> None:
    f = forge(world, ghe=True)
    r = review(world)
    out = post(f, PRN, r, summary_markdown(r), review_body(r))
    assert (out.review, out.summary) == ("posted", "created")
    assert all(p.startswith("/api/v3/") for _, p, _ in world.fake.log)
    writes = list(world.fake.writes())
    again = post(f, PRN, r, summary_markdown(r), review_body(r))
    assert (again.review, again.summary) == ("exists", "unchanged")
    assert world.fake.writes() == writes


def test_markers_of_other_users_are_not_ours(world: World) -> None:
    """A summary marker or a review marker posted by someone else is neither edited nor
    taken for ours: ixtool posts its own."""
    r = review(world)
    world.fake.add_comment(PRN, SUMMARY_MARKER + "\nfake summary", login="mallory")
    out = post(forge(world), PRN, r, summary_markdown(r), review_body(r))
    assert out.summary == "created"
    ours = [c for c in world.fake.comments[PRN] if SUMMARY_MARKER in c["body"]]
    assert [c["user"]["login"] for c in ours] == ["mallory", world.fake.login]
    assert ours[0]["body"].endswith("fake summary")


def test_review_post_is_not_retried_on_5xx(world: World) -> None:
    world.fake.faults.append(Fault("POST", r".*/pulls/7/reviews", 502, times=1))
    r = review(world)
    with pytest.raises(ForgeError, match="reviews"):
        post(forge(world), PRN, r, summary_markdown(r), review_body(r))
    assert [e for e in world.fake.log if e[0] == "POST"] == [
        ("POST", f"/repos/{SLUG}/pulls/{PRN}/reviews", 502)]


def test_comment_off_the_diff_is_refused_by_github(world: World) -> None:
    r = review(world)
    r.comments = [LineComment("perf-changelog.yaml", 1, "old line")]
    with pytest.raises(ForgeError, match="422"):
        post(forge(world), PRN, r, summary_markdown(r), review_body(r))


def test_head_must_be_the_pr_head(world: World) -> None:
    info = forge(world).pull(PRN)
    check_head(info, info.head_sha)
    with pytest.raises(UsageError, match="not the PR head"):
        check_head(info, "f" * 40)
