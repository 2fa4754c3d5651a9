"""merge-with-reuse on GitHub's real behaviour (issue 24 items 1–3).

The fake GitHub recomputes a run's ``pull_requests`` on every read, as GitHub does:
once ixtool pushes its preparation commit, the sweep run of the earlier commit lists
no pull request (``run_prs_by="head_sha"``, the default: every resume path after the
push runs on that).  The benchmark tests run under that and under the REST
reference's wording too (the PRs whose head SHA *or head branch* matches,
``"head_sha_or_branch"``).  "Benchmarked" is about the PR's content, not about which
commit the run saw; a pinned failed/cancelled run is reusable only on request.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inferencex_tools.merge.service import run_merge
from tests.merge.conftest import (
    BASE,
    CANON,
    COMMENT_POST,
    MAIN_ENTRY,
    MERGE_PUT,
    PR_ENTRY,
    PRN,
    SLUG,
    Crash,
    World,
    assert_merged,
    assert_refused,
    entry,
    git,
    rules_of,
)
from tests.merge.fake_github import Fault, Run

MODES = ["head_sha", "head_sha_or_branch"]


@pytest.fixture(params=MODES)
def gh(world: World, request: pytest.FixtureRequest) -> World:
    world.fake.run_prs_by = request.param
    return world


def run_1001(world: World) -> Run:
    return next(r for r in world.fake.runs if r.id == 1001)


def assert_emptied(world: World) -> None:
    """The sweep run no longer lists PR #7: the PR head moved past its commit."""
    assert world.fake.run_prs_by == "head_sha"
    assert world.fake.run_prs(run_1001(world)) == [], "GitHub empties pull_requests"


def ixtool_comments(world: World) -> list[str]:
    return [c["body"] for c in world.fake.comments[PRN] if c["user"]["login"] == "maint"]


def main_changelog_ok(world: World, *, main_moved: bool) -> None:
    expected = BASE + "\n"
    if main_moved:
        expected += entry(*MAIN_ENTRY, f"https://github.com/{SLUG}/pull/99") + "\n"
    assert world.main_changelog() == expected + entry(*PR_ENTRY, CANON)


# ----------------------------------------------------------------------------- 1. resume

@pytest.mark.parametrize("main_moved", [False, True], ids=["main-still", "main-moved"])
def test_crash_after_the_preparation_push(world: World, main_moved: bool) -> None:
    world.open_pr()
    if main_moved:
        world.move_main()
    world.clone_user()
    world.crash_after = "push"
    with pytest.raises(Crash):
        world.run()
    world.crash_after = None
    assert_emptied(world)
    res = world.run()
    assert res.ok and res.info["state"] == "merged", res.findings
    assert world.writes() == [COMMENT_POST, MERGE_PUT], "no second comment, no second push"
    assert_merged(world, main_moved=main_moved)


def test_ctrl_c_while_waiting_for_checks(world: World) -> None:
    world.open_pr()
    world.clone_user()
    hooks = world.hooks()

    def interrupted(_s: float) -> None:
        raise KeyboardInterrupt

    hooks.sleep = interrupted
    with pytest.raises(KeyboardInterrupt):
        run_merge(world.request(), hooks)
    assert_emptied(world)
    res = world.run()
    assert res.ok and res.info["state"] == "merged", res.findings
    assert_merged(world)


def test_merge_call_answering_500_then_rerun(world: World) -> None:
    world.open_pr()
    world.clone_user()
    world.fake.faults.append(Fault("PUT", r".*/pulls/7/merge", 500, message="Server Error"))
    res = world.run()
    assert "MR506" in rules_of(res) and not world.fake.prs[PRN].merged
    assert_emptied(world)
    again = world.run()
    assert again.ok and again.info["state"] == "merged", again.findings
    assert world.writes() == [COMMENT_POST, ("PUT", f"/repos/{SLUG}/pulls/{PRN}/merge", 500),
                           MERGE_PUT]
    assert_merged(world)


def test_checks_failing_then_green_on_rerun(world: World) -> None:
    """A flaky check fails; the maintainer re-runs it (a newer attempt, green); the
    command is run again and merges the same preparation commit."""
    world.open_pr()
    world.clone_user()
    rerun = [False]

    def checks(sha: str, polls: int) -> list[dict[str, object]]:
        out: list[dict[str, object]] = [
            {"id": 1, "name": "check-changelog", "status": "completed",
             "conclusion": "success"},
            {"id": 2, "name": "setup", "status": "completed", "conclusion": "failure",
             "started_at": "2026-08-01T00:01:00Z"}]
        if rerun[0]:
            out.append({"id": 3, "name": "setup", "status": "completed",
                        "conclusion": "success", "started_at": "2026-08-01T00:09:00Z"})
        return out

    world.fake.check_policy = checks
    res = world.run()
    assert "MR502" in rules_of(res)
    assert_emptied(world)
    rerun[0] = True
    again = world.run()
    assert again.ok and again.info["state"] == "merged", again.findings
    assert len(ixtool_comments(world)) == 1 and len(world.ixtool_commits_on_branch()) == 1
    assert_merged(world)


def test_main_moving_while_waiting(world: World) -> None:
    """Another PR lands on main (touching the changelog) while ixtool waits: GitHub
    refuses the squash of a branch behind main here (branch protection); the re-run
    merges main again into ixtool's first commit, records and pushes the new one."""
    world.open_pr()
    world.clone_user()
    moved: list[str] = []

    def land_on_main(method: str, path: str) -> None:
        if path.endswith("/check-runs") and not moved:
            moved.append(world.move_main())

    world.fake.on_request.append(land_on_main)
    res = world.run()
    assert "MR506" in rules_of(res) and moved
    first = res.info["prepared_head"]
    assert_emptied(world)
    again = world.run()
    assert again.ok and again.info["state"] == "merged", again.findings
    second = again.info["prepared_head"]
    assert git(world.bare, "log", "-1", "--format=%P", second).split() == [first, moved[0]]
    # each pushed preparation commit was recorded by its own comment (ci plan skips
    # the sweep of a pushed head only for the commit the authorization records)
    records = [body.splitlines()[1] for body in ixtool_comments(world)]
    assert records == [f"<!-- ixtool merge-with-reuse: prepared {sha} -->"
                       for sha in (first, second)]
    main_changelog_ok(world, main_moved=True)


# ----------------------------------------------------------------------------- 2. benchmarked

def author_push(world: World, *, merge_main: bool = False, files: dict[str, str] | None = None,
                resolve: str | None = None) -> str:
    """The author pushes one commit from their own clone: a merge of main (with the
    changelog conflict resolved to ``resolve``), file edits, or both."""
    other = world.tmp / f"author-{len(list(world.tmp.iterdir()))}"
    git(world.tmp, "clone", "-q", str(world.bare), str(other))
    git(other, "checkout", "-q", "feat")
    if merge_main:
        try:
            git(other, "merge", "-q", "--no-ff", "--no-commit", "origin/main")
        except Exception:  # a conflict: the author resolves it by hand
            assert resolve is not None or files
        if resolve is not None:
            (other / "perf-changelog.yaml").write_text(resolve)
    for rel, text in (files or {}).items():
        (other / rel).parent.mkdir(parents=True, exist_ok=True)
        (other / rel).write_text(text)
    git(other, "add", "-A")
    git(other, "commit", "-q", "--allow-empty", "-m", "author's commit")
    git(other, "push", "-q", "origin", "feat")
    return git(other, "rev-parse", "HEAD")


MERGED_BY_HAND = (BASE + "\n" + entry(*MAIN_ENTRY, f"https://github.com/{SLUG}/pull/99")
                  + "\n" + entry(*PR_ENTRY, "XXX"))


@pytest.mark.parametrize("conflict", [True, False], ids=["changelog-conflict", "clean"])
def test_author_merges_main_after_the_sweep(gh: World, conflict: bool) -> None:
    """The most common real flow: the sweep ran on A, main moved, the author merged
    main into the PR (resolving perf-changelog.yaml by hand).  Before: MR303, so
    --allow-unbenchmarked on every merge.  Now reused without flags: the PR's own
    content is what run 1001 measured."""
    sha_a = gh.open_pr()
    gh.move_main(conflict=conflict)
    merged = author_push(gh, merge_main=True, resolve=MERGED_BY_HAND if conflict else None)
    gh.clone_user()
    res = gh.run()
    assert res.ok and res.info["state"] == "merged", res.findings
    assert not {"MR303", "MR306"} & rules_of(res) and res.info["benchmarked"] is True
    assert res.info["run_id"] == 1001 and res.info["run_head"] == sha_a
    prep = res.info["prepared_head"]
    assert git(gh.bare, "rev-parse", f"{prep}^") == merged  # ixtool's commit on top
    body = git(gh.bare, "log", "-1", "--format=%B", "main")
    assert f"head {sha_a[:12]}" in body and "Not benchmarked" not in body
    if conflict:
        main_changelog_ok(gh, main_moved=True)
    else:
        assert git(gh.bare, "show", "main:docs/x.md") == "x"


MASTER = "configs/nvidia-master.yaml"


def master(**edits: str) -> str:
    """A master config of ten recipes; ``edits`` replace a recipe's image."""
    return "".join(f"{k}:\n  image: {edits.get(k, 'img:1')}\n  tp: 8\n\n"
                   for k in (f"recipe{i}" for i in range(10)))


def test_main_and_the_pr_edit_one_config_in_different_places(gh: World) -> None:
    """Real recipe PRs edit the shared master config; so does main meanwhile.  Merging
    main changes that file's bytes but not what the PR changes in it: benchmarked
    (git's merge of the run's commit with main is the head, apart from the changelog)."""
    gh.commit_seed(MASTER, master(), "main: master config")
    git(gh.seed, "push", "-q", "origin", "main")
    sha_a = gh.open_pr(files={MASTER: master(recipe1="img:2")})
    gh.commit_seed(MASTER, master(recipe8="img:3"), "main: another recipe")
    git(gh.seed, "push", "-q", "origin", "main")
    author_push(gh, merge_main=True)
    gh.clone_user()
    res = gh.run()
    assert res.ok and res.info["run_head"] == sha_a and rules_of(res) == set(), res.findings
    assert git(gh.bare, "show", f"main:{MASTER}") == master(recipe1="img:2",
                                                            recipe8="img:3").strip()


def test_conflict_resolved_by_hand_outside_the_changelog(gh: World) -> None:
    """Main and the PR edited the same recipe; the author resolved the conflict with a
    third version: that content was never measured (MR303 naming the file)."""
    gh.commit_seed(MASTER, master(), "main: master config")
    git(gh.seed, "push", "-q", "origin", "main")
    gh.open_pr(files={MASTER: master(recipe1="img:2")})
    gh.commit_seed(MASTER, master(recipe1="img:3"), "main: same recipe")
    git(gh.seed, "push", "-q", "origin", "main")
    mine = author_push(gh, merge_main=True, files={MASTER: master(recipe1="img:4")})
    gh.clone_user()
    res = assert_refused(gh, "MR303")
    assert res.info["unbenchmarked_files"] == [MASTER] and res.info["unbenchmarked"] == [mine]


def test_changelog_only_fixup_is_benchmarked(gh: World) -> None:
    """The author fixes the entry's description and link after the sweep: benchmarked."""
    sha_a = gh.open_pr()
    author_push(gh, files={"perf-changelog.yaml": BASE + "\n" + entry(
        PR_ENTRY[0], "h200 sweep, typo fixed", CANON)})
    gh.clone_user()
    res = gh.run()
    assert res.ok and res.info["run_head"] == sha_a and rules_of(res) == set(), res.findings


@pytest.mark.parametrize(("files", "named"), [
    ({"benchmarks/dsr1_h200.sh": "#!/bin/sh\nexec sglang --tp 8\n"},
     ["benchmarks/dsr1_h200.sh"]),
    ({"perf-changelog.yaml": BASE + "\n" + entry("gptoss-fp4-h200-vllm", "h200 sweep", "XXX")},
     ["perf-changelog.yaml"]),
], ids=["recipe", "changelog-keys"])
def test_change_after_the_sweep_is_not_benchmarked(gh: World, files: dict[str, str],
                                                   named: list[str]) -> None:
    """A recipe edit (or an entry that now names other config keys) after the sweep:
    MR303 naming the file and the commit; merged with --allow-unbenchmarked (MR306),
    the commit named in the squash message."""
    gh.open_pr()
    later = author_push(gh, files=files)
    gh.clone_user()
    res = assert_refused(gh, "MR303")
    msg = next(f.message for f in res.findings if f.rule == "MR303")
    assert named[0] in msg and later[:12] in msg
    assert res.info["unbenchmarked_files"] == named and res.info["unbenchmarked"] == [later]
    ok = gh.run(allow_unbenchmarked=True)
    assert ok.ok and ok.info["state"] == "merged", ok.findings
    assert rules_of(ok) == {"MR306"}
    body = git(gh.bare, "log", "-1", "--format=%B", "main")
    assert later in body and "--allow-unbenchmarked" in body and "sweep run 1001" in body


def test_maintainer_pin_on_an_earlier_commit(gh: World) -> None:
    """Issue 24 item 1: a maintainer pins the run of an earlier commit; the author has
    merged main since.  Before: refused even with --allow-unbenchmarked ("lists no pull
    request").  Now reused."""
    sha_a = gh.open_pr()
    gh.fake.add_comment(PRN, "/reuse-sweep-run 1001", login="lead", permission="admin")
    gh.move_main(conflict=False)
    author_push(gh, merge_main=True)
    gh.clone_user()
    res = gh.run()
    assert res.ok and res.info["run_head"] == sha_a, res.findings
    assert "sweep run 1001" in git(gh.bare, "log", "-1", "--format=%B", "main")


# ----------------------------------------------------------------------------- 3. failed run

def cancelled(world: World, artifacts: list[tuple[str, bool]] | None = None) -> None:
    sha = world.open_pr(run=False)
    world.fake.runs.append(Run(1001, sha, "feat", conclusion="cancelled", created=100,
                               artifacts=artifacts if artifacts is not None
                               else [("results_bmk", False), ("run-stats", False)]))


PinWay = Callable[[World], dict[str, object]]


def by_run_id(world: World) -> dict[str, object]:
    return {"run_id": 1001}


def by_maintainer(world: World) -> dict[str, object]:
    world.fake.add_comment(PRN, "/reuse-sweep-run 1001", login="lead", permission="admin")
    return {}


@pytest.mark.parametrize("pin", [by_run_id, by_maintainer], ids=["run-id", "comment"])
def test_pinned_cancelled_run_needs_allow_failed_run(world: World, pin: PinWay) -> None:
    cancelled(world)
    world.clone_user()
    kw = pin(world)
    res = assert_refused(world, "MR302", **kw)
    msg = next(f.message for f in res.findings if f.rule == "MR302")
    assert "conclusion is 'cancelled'" in msg and "--allow-failed-run" in msg
    ok = world.run(allow_failed_run=True, **kw)
    assert ok.ok and ok.info["state"] == "merged", ok.findings
    assert rules_of(ok) == {"MR307"}
    body = git(world.bare, "log", "-1", "--format=%B", "main")
    assert "concluded cancelled; reused with --allow-failed-run" in body
    assert "sweep run 1001" in body


def test_failed_run_without_result_artifacts_stays_refused(world: World) -> None:
    cancelled(world, artifacts=[("run-stats", False), ("results_bmk", True)])
    world.clone_user()
    res = assert_refused(world, "MR302", run_id=1001, allow_failed_run=True)
    assert "artifact" in next(f.message for f in res.findings if f.rule == "MR302")


def test_allow_failed_run_never_picks_an_unpinned_run(world: World) -> None:
    cancelled(world)
    world.clone_user()
    res = assert_refused(world, "MR301", allow_failed_run=True)
    assert any("pinned run only" in s for s in world.said)
    assert "cancelled" in next(f.message for f in res.findings if f.rule == "MR301")


def test_resume_in_another_clone_after_a_newer_maintainer_comment(world: World) -> None:
    """ixtool crashed after its push; a maintainer then posted a bare command (now the
    comment in force, recording nothing); the re-run happens in another clone.  ixtool's
    own earlier comment still identifies its commit (checked structurally): no second
    preparation commit, no second push."""
    world.open_pr()
    world.clone_user()
    world.crash_after = "push"
    with pytest.raises(Crash):
        world.run()
    world.crash_after = None
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="admin")
    world.user = world.tmp / "user2"
    world.clone_user()
    res = world.run()
    assert res.ok and res.info["state"] == "merged", res.findings
    assert len(world.ixtool_commits_on_branch()) == 1
    assert [w for w in world.writes() if w[0] == "PUT"] == [MERGE_PUT]


# ------------------------------------------------------------ the reference's own scenarios

def test_gated_noop_run_on_a_later_commit_is_skipped(gh: World) -> None:
    """The reference's regression scenarios (test_find_reusable_sweep_run.py): after
    the authorization, a synchronize run on the later head completes 'success' without
    results (the gate skipped the sweep); the newest run WITH results, on the earlier
    commit — which GitHub no longer lists for the PR — is the source."""
    sha_a = gh.open_pr()
    gh.move_main(conflict=False)
    later = author_push(gh, merge_main=True)
    gh.fake.runs.append(Run(1002, later, "feat", created=200,
                            artifacts=[("changelog-metadata", False)]))
    gh.fake.runs.append(Run(1003, later, "feat", conclusion="failure", created=300))
    gh.clone_user()
    res = gh.run()
    assert res.ok and res.info["run_id"] == 1001 and res.info["run_head"] == sha_a, \
        res.findings
    considered = res.info["runs_considered"]
    assert "conclusion is 'failure'" in considered[0] and "no results_bmk" in considered[1]


def test_agentic_only_run_on_an_earlier_commit(gh: World) -> None:
    gh.open_pr(run=False)
    sha_a = git(gh.bare, "rev-parse", "feat")
    gh.fake.runs.append(Run(1001, sha_a, "feat", created=100,
                            artifacts=[("bmk_agentic_dsv4_tp8_conc16", False)]))
    gh.move_main(conflict=False)
    author_push(gh, merge_main=True)
    gh.clone_user()
    res = gh.run()
    assert res.ok and res.info["artifacts"] == ["bmk_agentic_dsv4_tp8_conc16"], res.findings
