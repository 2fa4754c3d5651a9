"""End-to-end scenarios of merge-with-reuse: fake GitHub API + a real bare ``origin``.

Each test builds a tiny repository, opens PR #7 on the fake, runs the command
in-process with an injected clock (no sleeping) and asserts on the real end
state: comments on the fake, commits and refs in the bare repository.
"""

from __future__ import annotations

import time

import pytest

from inferencex_tools.errors import ForgeError
from inferencex_tools.merge.service import STEPS
from tests.merge.conftest import (
    BASE,
    CANON,
    PR_ENTRY,
    PRN,
    Crash,
    World,
    assert_merged,
    assert_refused,
    entry,
    git,
    rules_of,
)
from tests.merge.fake_github import Fault, Run

# ----------------------------------------------------------------------------- happy paths

def test_happy_path(world: World) -> None:
    world.open_pr(title="Sweep dsr1 on h200 [skip-sweep]")
    world.clone_user()
    before = git(world.user, "rev-parse", "HEAD")
    res = world.run()
    assert res.ok and res.exit_code() == 0, res.findings
    assert res.info["state"] == "merged"
    assert res.info["merge_sha"] == world.fake.prs[PRN].merge_commit_sha
    assert_merged(world)
    # the title's control token was dropped, not inherited
    assert git(world.bare, "log", "-1", "--format=%s", "main") == "Sweep dsr1 on h200 (#7)"
    # waited for check-changelog first, then the rest, with elapsed time + pending names
    assert world.progress[0].startswith("waiting for check-changelog: 0s elapsed; pending: "
                                        "check-changelog")
    assert any("waiting for checks: 10s elapsed; pending: reuse-sweep-gate, setup" in p
               for p in world.progress)
    assert world.progress[-1] == "checks: all 3 passed after 20s"
    # the user's checkout is untouched and no worktree is left behind
    assert git(world.user, "rev-parse", "HEAD") == before
    assert git(world.user, "status", "--porcelain") == ""
    assert "merge-pr" not in git(world.user, "worktree", "list")
    # pagination was exercised (pages of 2): the fake saw page-2 requests
    assert any(p.endswith("/check-runs") for _, p, _ in world.fake.log)


def test_changelog_conflict_with_main(world: World) -> None:
    world.open_pr()
    world.move_main(conflict=True)
    world.clone_user()
    res = world.run()
    assert res.ok, res.findings
    assert_merged(world, main_moved=True)
    prep = world.ixtool_commits_on_branch()[0]
    parents = git(world.bare, "log", "-1", "--format=%P", prep).split()
    assert len(parents) == 2, "the preparation commit is a real merge of main"
    assert any("resolved the perf-changelog.yaml conflict" in s for s in world.said)


def test_main_moved_without_changelog_conflict(world: World) -> None:
    world.open_pr()
    world.move_main(conflict=False)
    world.clone_user()
    res = world.run()
    assert res.ok, res.findings
    assert git(world.bare, "show", "main:docs/x.md") == "x"
    assert world.main_changelog() == BASE + "\n" + entry(*PR_ENTRY, CANON)


def test_already_canonical_link_gets_refresh_commit(world: World) -> None:
    world.open_pr(link=CANON)
    world.clone_user()
    res = world.run()
    assert res.ok, res.findings
    prep = world.ixtool_commits_on_branch()[0]
    assert git(world.bare, "log", "-1", "--format=%s", prep).startswith("chore: refresh PR #7")
    assert git(world.bare, "diff", f"{prep}~1", prep) == "", "refresh commit is empty"


# ----------------------------------------------------------------------------- preflight refusals

_refused = assert_refused


def test_tbd_link_refused_before_anything_is_posted(world: World) -> None:
    world.open_pr(link="TBD")
    world.clone_user()
    _refused(world, "MR401", "CL502")


def test_tbd_link_with_main_moved_also_refused(world: World) -> None:
    world.open_pr(link="TBD")
    world.move_main()
    world.clone_user()
    _refused(world, "MR401")


def test_fork_pr(world: World) -> None:
    world.open_pr(head_repo="someone/bench")
    world.clone_user()
    _refused(world, "MR103")


def test_draft_pr(world: World) -> None:
    world.open_pr()
    world.fake.prs[PRN].draft = True
    world.clone_user()
    _refused(world, "MR102")


def test_closed_pr(world: World) -> None:
    world.open_pr()
    world.fake.prs[PRN].state = "closed"
    world.clone_user()
    _refused(world, "MR102")


def test_two_sweep_labels(world: World) -> None:
    world.open_pr(labels=("full-sweep-enabled", "sweep-enabled"))
    world.clone_user()
    _refused(world, "MR201")


def test_trimmed_sweep_label(world: World) -> None:
    world.open_pr(labels=("sweep-enabled",))
    world.clone_user()
    _refused(world, "MR202")


def test_evals_only_label(world: World) -> None:
    world.open_pr(labels=("full-sweep-enabled", "evals-only"))
    world.clone_user()
    _refused(world, "MR203")


def test_no_eligible_run(world: World) -> None:
    sha = world.open_pr(run=False)
    world.fake.runs.append(Run(1001, sha, "feat", conclusion="failure", created=100))
    world.fake.runs.append(Run(1002, "0" * 40, "feat", created=200))  # not a PR commit
    world.clone_user()
    _refused(world, "MR301")


def test_expired_artifacts(world: World) -> None:
    sha = world.open_pr(run=False)
    world.fake.runs.append(Run(1001, sha, "feat", created=100,
                               artifacts=[("results_bmk", True), ("run-stats", False)]))
    world.clone_user()
    _refused(world, "MR301")


def test_prefix_artifact_names_are_not_enough(world: World) -> None:
    """G13: main's selector wants exact names; 'results_bmk_partial' does not count."""
    sha = world.open_pr(run=False)
    world.fake.runs.append(Run(1001, sha, "feat", created=100,
                               artifacts=[("results_bmk_partial", False)]))
    world.clone_user()
    _refused(world, "MR301")


def test_dirty_tree_and_labels_reported_together(world: World) -> None:
    world.open_pr(labels=("evals-only",))
    world.clone_user()
    (world.user / "README.md").write_text("local edit\n")
    _refused(world, "MR101", "MR201", "MR203")


def test_pr_commit_list_cap_falls_back_to_git(world: World,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """G13: GitHub lists only the first 250 PR commits; a run on a later commit is
    still found because ixtool then takes the commit set from git."""
    from inferencex_tools.merge import service

    world.open_pr(run=False)
    late = world.push_to_pr()
    world.fake.runs.append(Run(1001, late, "feat", created=100))
    world.fake.commits_cap = 1
    monkeypatch.setattr(service, "PR_COMMITS_CAP", 1)
    world.clone_user()
    res = world.run()
    assert res.ok, res.findings
    assert res.info["run_head"] == late


# ----------------------------------------------------------------------------- run pinning

def test_pinned_run_id_honoured(world: World) -> None:
    sha = world.open_pr()
    world.fake.runs.append(Run(1005, sha, "feat", created=500))  # newer, would win unpinned
    world.clone_user()
    res = world.run(run_id=1001)
    assert res.ok, res.findings
    assert_merged(world, run_id=1001)


def test_maintainer_pin_is_honoured_not_unpinned(world: World) -> None:
    """G8: an existing '/reuse-sweep-run <id>' by a member is kept, not replaced by a
    bare one: ixtool's comment (which records the commit it pushes) pins the same run."""
    sha = world.open_pr()
    world.fake.runs.append(Run(1005, sha, "feat", created=500))
    world.fake.add_comment(PRN, "/reuse-sweep-run 1001", login="lead", association="OWNER",
                           permission="admin")
    world.clone_user()
    res = world.run()
    assert res.ok, res.findings
    assert res.info["run_id"] == 1001
    assert [(c["user"]["login"], c["body"].splitlines()[0])
            for c in world.fake.comments[PRN]] == [("lead", "/reuse-sweep-run 1001"),
                                                    ("maint", "/reuse-sweep-run 1001")]
    assert "sweep run 1001" in git(world.bare, "log", "-1", "--format=%B", "main")


def test_pin_by_non_member_is_ignored(world: World) -> None:
    sha = world.open_pr()
    world.fake.runs.append(Run(1005, sha, "feat", created=500))
    world.fake.add_comment(PRN, "/reuse-sweep-run 1001", login="drive-by", association="NONE")
    world.clone_user()
    res = world.run()
    assert res.ok, res.findings
    assert world.fake.reuse_comments(PRN)[-1].splitlines()[0] == "/reuse-sweep-run 1005"


def test_pinned_run_that_failed_is_refused(world: World) -> None:
    sha = world.open_pr()
    world.fake.runs.append(Run(1003, sha, "feat", conclusion="cancelled", created=300))
    world.clone_user()
    _refused(world, "MR302", run_id=1003)


def test_pinned_run_that_does_not_exist_is_a_finding(world: World) -> None:
    """A typo in a maintainer's pin (or --run-id) is MR302, not an API error (exit 2)."""
    world.open_pr()
    world.clone_user()
    res = _refused(world, "MR302", run_id=4242)
    assert "does not exist" in next(f.message for f in res.findings if f.rule == "MR302")


def test_push_between_fetch_and_push_is_not_overwritten(world: World) -> None:
    """The push is lease-protected: a commit pushed to the PR after ixtool fetched it
    is neither overwritten nor merged."""
    world.open_pr()
    world.clone_user()
    pushed: list[str] = []
    world.on_step["commit"] = lambda: pushed.append(world.push_to_pr())
    res = world.run()
    assert "MR505" in rules_of(res) and res.exit_code() == 1
    assert git(world.bare, "rev-parse", "refs/heads/feat") == pushed[0]
    assert world.fake.merges == []


# ----------------------------------------------------------------------------- waiting

def test_check_failure(world: World) -> None:
    world.open_pr()
    world.clone_user()
    world.fake.check_policy = lambda sha, polls: [
        {"name": "check-changelog", "status": "completed", "conclusion": "failure"}]
    res = world.run()
    assert "MR502" in rules_of(res) and res.exit_code() == 1
    assert not world.fake.prs[PRN].merged and world.fake.merges == []


def test_later_check_failure_after_changelog_gate(world: World) -> None:
    world.open_pr()
    world.clone_user()
    world.fake.check_policy = lambda sha, polls: [
        {"name": "check-changelog", "status": "completed", "conclusion": "success"},
        {"name": "setup", "status": "completed" if polls else "queued",
         "conclusion": "failure" if polls else None}]
    res = world.run()
    assert "MR502" in rules_of(res)
    assert "setup concluded failure" in " ".join(f.message for f in res.findings)
    assert world.fake.merges == []


def test_failed_commit_status_blocks_the_merge(world: World) -> None:
    """Commit statuses (codeowner-signoff-verify is one, spec §9) count like check runs."""
    world.open_pr()
    world.clone_user()
    world.fake.status_policy = lambda sha, polls: [
        {"context": "codeowner-signoff-verify", "state": "pending" if polls < 2 else "failure"}]
    res = world.run()
    assert "MR502" in rules_of(res)
    assert "codeowner-signoff-verify concluded failure" in res.findings[0].message
    assert world.fake.merges == []


def test_pending_commit_status_is_waited_for(world: World) -> None:
    world.open_pr()
    world.clone_user()
    world.fake.status_policy = lambda sha, polls: [
        {"context": "codeowner-signoff-verify", "state": "pending" if polls < 4 else "success"}]
    res = world.run()
    assert res.ok, res.findings
    assert any("pending: codeowner-signoff-verify" in p for p in world.progress)
    assert res.info["checks"]["codeowner-signoff-verify"] == "success"


def test_rerun_check_uses_latest_attempt(world: World) -> None:
    world.open_pr()
    world.clone_user()
    world.fake.check_policy = lambda sha, polls: [
        {"id": 1, "name": "check-changelog", "status": "completed", "conclusion": "failure",
         "started_at": "2026-08-01T00:01:00Z"},
        {"id": 2, "name": "check-changelog", "status": "completed", "conclusion": "success",
         "started_at": "2026-08-01T00:05:00Z"}]
    res = world.run()
    assert res.ok, res.findings


def test_check_timeout(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.open_pr()
    world.clone_user()
    world.fake.check_policy = lambda sha, polls: [
        {"name": "check-changelog", "status": "completed", "conclusion": "success"},
        {"name": "slow-job", "status": "in_progress"}]
    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: (slept.append(s), real_sleep(min(s, 0.05))))
    res = world.run(timeout=60.0)
    assert "MR503" in rules_of(res) and res.exit_code() == 1
    assert "slow-job" in " ".join(f.message for f in res.findings)
    assert world.now[0] == 60.0, "the injected clock advanced"
    assert sum(slept) < 1, f"real sleeps while waiting: {slept}"
    assert world.fake.merges == []
    # the progress line showed elapsed time and the pending check
    assert "waiting for checks: 50s elapsed; pending: slow-job" in world.progress


def test_head_moved_during_wait(world: World) -> None:
    world.open_pr()
    world.clone_user()
    moved: list[str] = []

    def push_once(method: str, path: str) -> None:
        if path.endswith("/check-runs") and not moved:
            moved.append(world.push_to_pr())

    world.fake.on_request.append(push_once)
    res = world.run()
    assert "MR501" in rules_of(res) and res.exit_code() == 1
    assert world.fake.merges == [] and not world.fake.prs[PRN].merged


# ----------------------------------------------------------------------------- API failures

def test_502s_then_success(world: World) -> None:
    world.open_pr()
    world.clone_user()
    world.fake.faults.append(Fault("GET", r"/repos/acme/bench/pulls/7", 502, times=2,
                                   message="Bad Gateway"))
    world.fake.faults.append(Fault("GET", r".*/runs/1001/artifacts", 503, times=1))
    res = world.run()
    assert res.ok, res.findings
    assert world.retry_delays == [1.0, 2.0, 1.0], "bounded exponential backoff, injected sleep"
    assert_merged(world)


def test_403_rate_limit_is_retried(world: World) -> None:
    world.open_pr()
    world.clone_user()
    reset = str(int(time.time()) + 30)
    world.fake.faults.append(Fault(
        "GET", r".*/issues/7/comments", 403, times=1,
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
        message="API rate limit exceeded for user ID 1."))
    res = world.run()
    assert res.ok, res.findings
    assert len(world.retry_delays) == 1 and 20 <= world.retry_delays[0] <= 31


def test_403_rate_limit_exhausted_is_a_clear_error(world: World) -> None:
    world.open_pr()
    world.clone_user()
    world.fake.faults.append(Fault(
        "GET", r".*/pulls/7", 429, times=99, headers={"Retry-After": "7"},
        message="You have exceeded a secondary rate limit."))
    with pytest.raises(ForgeError) as ei:
        world.run()
    assert "after 5 attempts" in ei.value.message and "rate limit" in ei.value.message
    assert world.retry_delays == [7.0] * 4
    assert world.fake.token not in ei.value.message


def test_post_is_not_retried_on_5xx(world: World) -> None:
    """A lost answer to a POST must not double-post; the re-run finds the comment."""
    world.open_pr()
    world.clone_user()
    world.fake.faults.append(Fault("POST", r".*/issues/7/comments", 502, times=1))
    with pytest.raises(ForgeError):
        world.run()
    res = world.run()
    assert res.ok, res.findings
    assert_merged(world)


def test_lost_merge_response_then_rerun(world: World) -> None:
    """The merge happened but its answer was a 502: not retried (no double merge);
    the run stops with MR506 and a re-run reports the existing merge."""
    world.open_pr()
    world.clone_user()
    world.fake.lose_merge_response = True
    res = world.run()
    assert "MR506" in rules_of(res) and res.exit_code() == 1
    assert len(world.fake.merges) == 1
    again = world.run()
    assert again.exit_code() == 0 and again.info["state"] == "already-merged"
    assert_merged(world)


# ----------------------------------------------------------------------------- resumability

@pytest.mark.parametrize("main_moved", [False, True], ids=["main-still", "main-moved"])
@pytest.mark.parametrize("step", STEPS)
def test_crash_after_each_step_then_rerun(world: World, step: str, main_moved: bool) -> None:
    world.open_pr()
    if main_moved:
        world.move_main(conflict=True)
    world.clone_user()
    world.crash_after = step
    with pytest.raises(Crash):
        world.run()
    world.crash_after = None
    res = world.run()
    assert res.ok and res.exit_code() == 0, res.findings
    assert res.info["state"] in ("merged", "already-merged")
    assert_merged(world, main_moved=main_moved)
    assert "merge-pr" not in git(world.user, "worktree", "list")
    # a third run is a no-op that reports the merge
    again = world.run()
    assert again.info["state"] == "already-merged"
    assert again.info["merge_sha"] == world.fake.prs[PRN].merge_commit_sha
    assert len(world.fake.merges) == 1


def test_run_made_under_trimmed_label_is_not_reused(world: World) -> None:
    """G9: run 1001 was created (minute 100) while the PR was labelled sweep-enabled;
    the label was switched to full-sweep-enabled afterwards (minute 150)."""
    world.open_pr()
    world.fake.prs[PRN].events = [("labeled", "sweep-enabled", 50),
                                  ("unlabeled", "sweep-enabled", 150),
                                  ("labeled", "full-sweep-enabled", 151)]
    world.clone_user()
    res = _refused(world, "MR301")
    # issue 14 item 6: the message says the real reason (was: "none succeeded on a
    # commit of this PR with result artifacts"), in text as in JSON
    f = next(f for f in res.findings if f.rule == "MR301")
    assert "run 1001: it ran while the PR was labelled sweep-enabled" in f.message
    assert "none succeeded" not in f.message
    from inferencex_tools.report.reporters import render

    for fmt in ("text", "json"):
        assert "labelled sweep-enabled" in render(res, fmt)


def test_newest_run_made_under_trimmed_label_is_skipped(world: World) -> None:
    """G9: full sweep (1001, minute 100), relabel to sweep-enabled (150), trimmed run
    (1002, minute 200), relabel back (250): the newest *full* run, 1001, is reused."""
    sha = world.open_pr(run=False)
    world.fake.prs[PRN].events = [("labeled", "full-sweep-enabled", 50),
                                  ("unlabeled", "full-sweep-enabled", 150),
                                  ("labeled", "sweep-enabled", 151),
                                  ("unlabeled", "sweep-enabled", 250),
                                  ("labeled", "full-sweep-enabled", 251)]
    world.fake.runs.append(Run(1001, sha, "feat", created=100))
    world.fake.runs.append(Run(1002, sha, "feat", created=200))
    world.clone_user()
    res = world.run()
    assert res.ok, res.findings
    assert res.info["run_id"] == 1001
    assert res.info["runs_considered"][0].startswith("run 1002: it ran while the PR was "
                                                     "labelled sweep-enabled")
    assert_merged(world, run_id=1001)
