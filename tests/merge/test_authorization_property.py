"""Property: for any sequence of comments, ``ci plan`` and ``merge-with-reuse`` choose
the same authorization (the same run, from the same comment).

``merge-with-reuse`` reads the comments and each candidate author's permission
from the (fake) GitHub API through PyGithub; ``ci plan`` reads the JSON file that
pr-gate.yml's reuse-comments job writes from the same API objects (each with its
author's permission, and the PR's commits) through its own file parser.  Equal
timestamps, ids out of list order, read-only authors, non-canonical and out-of-range run ids, G14
newline pins, inline mentions and commands inside code fences, code spans, block
quotes, indented code and HTML are all drawn on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferencex_tools.ci.service import PlanRequest, plan
from inferencex_tools.io.github import Forge, RetryPolicy
from inferencex_tools.merge.service import authorization_in_force
from tests.merge.conftest import PRN, SLUG, World, pr_commits_via_api

LOGINS = ["alice", "bob", "carol", "dave", "renovate[bot]"]
TIMES = [f"2026-08-01T00:0{m}:00Z" for m in range(3)]
PERMS = st.sampled_from(["admin", "write", "read", "none", "triage"])

_line = st.one_of(
    st.sampled_from(["/reuse-sweep-run", "  /reuse-sweep-run  ", "/reuse-sweep-run 0",
                     "/reuse-sweep-run 007", "/reuse-sweep-run " + "9" * 20,
                     "/reuse-sweep-run 9223372036854775807", "/reuse-sweep-run 12 please",
                     "please /reuse-sweep-run 4", "lgtm", "123", "/reuse-sweep-run\t77\r",
                     "```", "~~~", "> /reuse-sweep-run 5", "<!--", "-->", "`",
                     "    /reuse-sweep-run 6", "<details>", ""]),
    st.integers(1, 2**63 + 5).map(lambda n: f"/reuse-sweep-run {n}"),
    st.integers(1, 400).map(str),
)
_body = st.lists(_line, min_size=1, max_size=3).map("\n".join)
_comment = st.tuples(_body, st.sampled_from(LOGINS), st.sampled_from(TIMES),
                     st.sampled_from(["OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR",
                                      "NONE"]))


def _event(tmp: Path) -> Path:
    sha = "a" * 40
    event = {"action": "synchronize", "number": PRN,
             "repository": {"full_name": SLUG, "default_branch": "main"},
             "sender": {"login": "author"},  # the author pushed the head
             "pull_request": {"number": PRN, "draft": False, "user": {"login": "author"},
                              "updated_at": "2026-07-31T23:00:00Z",  # pushed before
                              "labels": [{"name": "full-sweep-enabled"}],
                              "head": {"sha": sha, "ref": "feat", "repo": {"full_name": SLUG}},
                              "base": {"sha": "b" * 40, "ref": "main",
                                       "repo": {"full_name": SLUG}}}}
    path = tmp / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(comments=st.lists(_comment, max_size=7),
       ids=st.lists(st.integers(1, 10**9), min_size=7, max_size=7, unique=True),
       perms=st.fixed_dictionaries({login: PERMS for login in LOGINS}))
def test_ci_plan_and_merge_with_reuse_choose_the_same_run(
        world: World, comments: list[tuple[str, str, str, str]], ids: list[int],
        perms: dict[str, str]) -> None:
    fake = world.fake
    if PRN not in fake.prs:
        world.open_pr()
    commits = pr_commits_via_api(world)  # the author's commit: no commenter wrote it
    fake.comments[PRN] = []
    fake.permissions = dict(perms, **{fake.login: "write"})
    for (body, login, created, assoc), cid in zip(comments, ids, strict=False):
        fake.add_comment(PRN, body, login=login, association=assoc, cid=cid, created=created)

    # merge-with-reuse: the API (comments paged by 2, permissions per candidate author)
    forge = Forge(SLUG, token=fake.token, api_url=fake.url, per_page=2, throttle=False,
                  retry=RetryPolicy(sleep=lambda s: None))
    by_merge, _ = authorization_in_force(forge, PRN)

    # ci plan: the workflow's JSON (API objects + author_permission) through the CLI core
    handed = [{"id": c["id"], "created_at": c["created_at"], "updated_at": c["updated_at"],
               "author_association": c["author_association"], "body": c["body"],
               "user": {"login": c["user"]["login"]},
               "author_permission": perms[c["user"]["login"]]} for c in fake.comments[PRN]]
    tmp = world.tmp / "prop"
    tmp.mkdir(exist_ok=True)
    (tmp / "comments.json").write_text(json.dumps(
        {"comments": handed, "commits": commits}), encoding="utf-8")
    decision, result = plan(PlanRequest(event_path=_event(tmp), event_name="pull_request",
                                        comments=tmp / "comments.json", use_git=False))
    by_ci = result.info["reuse_authorization"]

    if by_merge is None:
        assert by_ci is None
        assert decision.sweep.run is True
    else:
        assert by_ci == {"run_id": by_merge.run_id, "comment_id": by_merge.comment_id,
                         "author": by_merge.author, "permission": by_merge.permission,
                         "for_head": True}
        assert decision.sweep.run is False
        assert by_merge.permission in ("admin", "write")
