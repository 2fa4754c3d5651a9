"""merge-with-reuse in a maintainer's real setup (issue 14, security issue 18 item 7).

Each scenario runs the command against the fake GitHub API and a real git remote
and asserts the exact list of write requests the API saw (none where a check
fails), the pushes the git remote saw, and the end state.

The "real user" fixture drops every test shortcut: no ``GIT_AUTHOR_*`` variables,
no ``GIT_CONFIG_GLOBAL=/dev/null``, no ``GIT_SSL_CAINFO``; the identity, the
credential helper, the CA and the URL rewrite live only in ``~/.gitconfig`` of a
temporary ``HOME``, as on a maintainer's machine.  (The machine's
``/etc/gitconfig`` stays out through ``GIT_CONFIG_NOSYSTEM=1``, part of that
user's environment; ixtool passes it through like any other variable.)
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferencex_tools.errors import GitError
from tests.merge.conftest import (
    BASE,
    CANON,
    COMMENT_POST,
    IDENTITY,
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
    workflow_comments,
)
from tests.merge.fake_github import PR, Run
from tests.merge.git_https import GitHTTPS, make_cert

NAME, EMAIL = "Global Maintainer", "global.maint@example.invalid"


def user_git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """git exactly as the user runs it: this process's (monkeypatched) environment."""
    return subprocess.run(["git", *args], cwd=cwd, env=dict(os.environ), check=check,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)


@pytest.fixture
def home(world: World, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = world.tmp / "home"
    home.mkdir()
    for var in (*IDENTITY, "GIT_CONFIG_GLOBAL", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "EMAIL",
                "GIT_ASKPASS", "SSH_ASKPASS", "GIT_TERMINAL_PROMPT", "http_proxy",
                "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return home


def gitconfig(home: Path, text: str) -> None:
    (home / ".gitconfig").write_text(text, encoding="utf-8")


IDENTITY_CONFIG = f"[user]\n\tname = {NAME}\n\temail = {EMAIL}\n"


# ----------------------------------------------------------------------------- 1. identity

def test_identity_only_in_global_config(world: World, home: Path) -> None:
    """Issue 14 item 1: user.name/user.email only in ~/.gitconfig.  Before: the
    comment was posted, then 'git commit failed … unable to auto-detect email'."""
    world.open_pr()
    world.clone_user()
    gitconfig(home, IDENTITY_CONFIG)
    res = world.run()
    assert res.ok, res.findings
    assert world.writes() == [COMMENT_POST, MERGE_PUT]
    assert_merged(world)
    prep = world.ixtool_commits_on_branch()[0]
    assert git(world.bare, "log", "-1", "--format=%an <%ae>|%cn <%ce>", prep) == \
        f"{NAME} <{EMAIL}>|{NAME} <{EMAIL}>"
    assert res.info["git_identity"] == f"{NAME} <{EMAIL}>"


@pytest.mark.parametrize(("config", "missing"), [
    ("", ["user.name", "user.email"]),
    (f"[user]\n\tname = {NAME}\n", ["user.email"]),
], ids=["no-identity", "name-only"])
def test_no_identity_stops_before_any_write(world: World, home: Path, config: str,
                                            missing: list[str]) -> None:
    """No identity anywhere (git would guess user@host, or fail after the comment):
    MR106 in the preflight, naming the setting(s) to set."""
    world.open_pr()
    world.clone_user()
    gitconfig(home, config)
    res = assert_refused(world, "MR106")
    f = next(f for f in res.findings if f.rule == "MR106")
    assert f.hint is not None
    for key in missing:
        assert f"git config --global {key}" in f.hint
    assert world.fake.comments[PRN] == []


# ----------------------------------------------------------------------------- 2. credentials

@pytest.fixture
def https_remote(world: World, home: Path) -> Iterator[GitHTTPS]:
    """origin.git served over HTTPS by git http-backend with Basic auth."""
    cert, key = make_cert(world.tmp)
    srv = GitHTTPS(world.tmp, cert, key, user="maint", password="s3cret-pw").start()
    try:
        yield srv
    finally:
        srv.stop()


def https_config(world: World, srv: GitHTTPS, *, helper: bool) -> str:
    """~/.gitconfig: identity, the server's CA, a URL rewrite and (optionally) a
    credential helper that logs its calls — what `gh auth setup-git` amounts to."""
    log = world.tmp / "helper.log"
    text = IDENTITY_CONFIG + (
        f"[http]\n\tsslCAInfo = {world.tmp / 'server.pem'}\n"
        f'[url "{srv.url}/"]\n\tinsteadOf = https://git.acme.invalid/\n')
    if helper:
        text += ("[credential]\n\thelper = \"!f() { echo \\\"$1\\\" >> " + str(log)
                 + "; test \\\"$1\\\" = get && printf 'username=maint\\\\npassword=s3cret-pw"
                 "\\\\n'; }; f\"\n")
    return text


def clone_over_https(world: World) -> None:
    user_git(world.tmp, "clone", "-q", "https://git.acme.invalid/origin.git", str(world.user))


def test_credential_helper_from_global_config_over_https(
        world: World, home: Path, https_remote: GitHTTPS) -> None:
    """Issue 14 item 2: an HTTPS remote whose credentials come from a global credential
    helper.  Before: comment posted, then MR505 'could not read Username … terminal
    prompts disabled' with the wrong hint.  Fetch, dry-run push and push all
    authenticate through the helper; the URL rewrite and the CA come from
    ~/.gitconfig too."""
    world.open_pr()
    gitconfig(home, https_config(world, https_remote, helper=True))
    clone_over_https(world)
    assert user_git(world.user, "config", "remote.origin.url").stdout.strip() == \
        "https://git.acme.invalid/origin.git"
    res = world.run()
    assert res.ok, res.findings
    assert world.writes() == [COMMENT_POST, MERGE_PUT]
    assert len(https_remote.pushes()) == 1, https_remote.log
    assert all(e[4] == "maint" for e in https_remote.log if e[3] != 401)
    assert "get" in (world.tmp / "helper.log").read_text()
    assert_merged(world)
    prep = world.ixtool_commits_on_branch()[0]
    assert git(world.bare, "log", "-1", "--format=%ae", prep) == EMAIL


def test_no_credentials_for_push_stops_before_any_write(
        world: World, home: Path, https_remote: GitHTTPS,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A public repository (anonymous fetch) and no credential helper: the dry-run
    push fails in the preflight with a hint naming credential.helper; the comment
    is never posted."""
    world.open_pr()
    gitconfig(home, https_config(world, https_remote, helper=False))
    https_remote.anonymous_fetch = True
    clone_over_https(world)
    res = assert_refused(world, "MR107")
    f = next(f for f in res.findings if f.rule == "MR107")
    assert "terminal prompts disabled" in f.message or "Username" in f.message
    assert f.hint is not None and "credential.helper" in f.hint
    assert https_remote.pushes() == []


def test_no_credentials_at_all_is_a_git_error_before_any_write(
        world: World, home: Path, https_remote: GitHTTPS) -> None:
    """A private repository and no credential helper: the fetch fails (exit 2) with a
    hint naming credential.helper, before any write."""
    world.open_pr()
    gitconfig(home, https_config(world, https_remote, helper=True))
    clone_over_https(world)
    gitconfig(home, https_config(world, https_remote, helper=False))
    head = git(world.bare, "rev-parse", "feat")
    with pytest.raises(GitError) as ei:
        world.run()
    assert "fetch" in ei.value.message
    assert ei.value.hint is not None and "credential.helper" in ei.value.hint
    assert world.writes() == [] and https_remote.pushes() == []
    assert git(world.bare, "rev-parse", "feat") == head


# ----------------------------------------------------------------------------- 3. conflicts

def test_conflict_outside_the_changelog_stops_before_any_write(world: World) -> None:
    """Issue 14 item 3: main and the PR both change README.md.  Before: comment
    posted, then MR403.  Now git merge-tree finds it in the preflight."""
    git(world.seed, "checkout", "-q", "-b", "feat", "main")
    world.commit_seed("README.md", "pr version\n", "pr readme")
    sha = world.commit_seed("perf-changelog.yaml", BASE + "\n" + entry(*PR_ENTRY, "XXX"), "e")
    git(world.seed, "push", "-q", "origin", "feat")
    git(world.seed, "checkout", "-q", "main")
    world.fake.add_pr(PR(PRN, "feat", "t", ["full-sweep-enabled"]))
    world.fake.runs.append(Run(1001, sha, "feat", created=100))
    world.move_main(other_file=True)
    world.clone_user()
    res = assert_refused(world, "MR403")
    f = next(f for f in res.findings if f.rule == "MR403")
    assert "README.md" in f.message and f.data["conflicts"] == ["README.md"]
    # the user's checkout has no leftover worktree or merge state
    assert "merge-pr" not in git(world.user, "worktree", "list")


# ----------------------------------------------------------------------------- 4. token rights

@pytest.mark.parametrize("perm", ["read", "none", "triage"])
def test_token_without_write_permission(world: World, perm: str) -> None:
    """Issue 14 item 5 / 18 item 7: the token's user is a COLLABORATOR by association
    but has only read rights: its comment would not authorize anything.  Before:
    detected (by the association) only after the comment was posted."""
    world.open_pr()
    world.fake.association = "COLLABORATOR"
    world.fake.permissions[world.fake.login] = perm
    world.clone_user()
    res = assert_refused(world, "MR305")
    msg = next(f.message for f in res.findings if f.rule == "MR305")
    reported = {"triage": "read"}.get(perm, perm)  # the API reports triage as read
    assert world.fake.login in msg and reported in msg
    assert res.info["token_user"] == {"login": world.fake.login, "permission": reported}


# ----------------------------------------------------------------------------- 5. trailers

def author_commit(world: World, message: str, *, merge_main: bool = False,
                  change: bool = True) -> str:
    """The PR's author pushes a commit: a merge of main, a file change, or both (the
    change folded into the merge commit)."""
    other = world.tmp / f"author-{len(list(world.tmp.iterdir()))}"
    git(world.tmp, "clone", "-q", str(world.bare), str(other))
    git(other, "checkout", "-q", "feat")
    if merge_main:
        git(other, "merge", "-q", "--no-ff", "--no-commit", "origin/main")
    if change:
        (other / "late.txt").write_text("late\n")
        git(other, "add", "-A")
    git(other, "commit", "-q", "--allow-empty", "-m", message)
    git(other, "push", "-q", "origin", "feat")
    return git(other, "rev-parse", "HEAD")


@pytest.mark.parametrize("how", ["commit", "comment-record", "comment-record-by-writer",
                                 "merge-of-main-and-a-change"])
def test_spoofed_trailer_is_not_ixtool_s_commit(world: World, how: str) -> None:
    """An author's commit after the benchmarked one carries 'Ixtool-Reuse-Run: 1001'
    and changes a file.  Before: taken for ixtool's preparation commit.  Now: MR303
    naming the file, nothing written — also when the author posts a comment imitating
    ixtool's record of its commit, even with write permission (issue 27 item 9: every
    author ixtool merges for has write access; the record is a claim, the commit's
    content decides), and when the commit is a merge of main that also edits a file."""
    world.open_pr()
    merge = how == "merge-of-main-and-a-change"
    if merge:
        world.move_main(conflict=False)
    spoof = author_commit(world, "chore: refresh PR #7 for sweep reuse [skip-sweep]\n\n"
                          "Ixtool-Reuse-Run: 1001\n", merge_main=merge, change=True)
    if how.startswith("comment-record"):
        world.fake.add_comment(
            PRN, f"/reuse-sweep-run 1001\n<!-- ixtool merge-with-reuse: prepared {spoof} -->",
            login="author", association="COLLABORATOR",
            permission="write" if how.endswith("writer") else "read")
    world.clone_user()
    res = assert_refused(world, "MR303")
    msg = next(f.message for f in res.findings if f.rule == "MR303")
    assert spoof[:12] in msg and "late.txt" in msg
    assert res.info["unbenchmarked"] == [spoof]
    assert res.info["unbenchmarked_files"] == ["late.txt"]
    assert "MR306" not in rules_of(res)


def test_forged_prepared_comment_then_allow_unbenchmarked_still_prepares(world: World
                                                                         ) -> None:
    """Issue 27 item 9, end to end: the author (write) pushes a recipe change after the
    sweep and comments `/reuse-sweep-run 1001` with ixtool's hidden `prepared <SHA>`
    line.  Before: exit 0 with --yes alone, no MR303, the change merged, the changelog
    kept pull/XXX.  Now: refused (MR303); with --allow-unbenchmarked it is merged as
    MR306 with the commit named, and ixtool still makes its own preparation commit (the
    link is canonicalized on main)."""
    world.open_pr()
    spoof = author_commit(world, "tune recipe", change=True)
    world.fake.add_comment(
        PRN, f"/reuse-sweep-run 1001\n<!-- ixtool merge-with-reuse: prepared {spoof} -->",
        login="author", association="MEMBER", permission="write")
    world.clone_user()
    assert_refused(world, "MR303")
    res = world.run(allow_unbenchmarked=True)
    assert res.ok and res.info["state"] == "merged", res.findings
    assert rules_of(res) == {"MR306"}
    assert world.fake.comments[PRN][-1]["user"]["login"] == world.fake.login
    prep = world.ixtool_commits_on_branch()  # ixtool's own commit, on top of the spoof
    assert len(prep) == 1 and git(world.bare, "rev-parse", f"{prep[0]}^") == spoof
    assert "pull/XXX" not in world.main_changelog() and CANON in world.main_changelog()
    body = git(world.bare, "log", "-1", "--format=%B", "main")
    assert spoof in body and "--allow-unbenchmarked" in body


# ----------------------------------------------------------------------------- 6. stacked PR

@pytest.mark.parametrize("how", ["run-id", "maintainer-pin"])
def test_stacked_pr_run_cannot_be_pinned(world: World, how: str) -> None:
    """PR #8 is stacked on PR #7 (branch feat2 → feat); its run 2002 benchmarked
    feat2's diff against feat.  After feat2 is fast-forwarded into feat, run 2002's
    head is a commit of PR #7 — but it is PR #8's run: refused, pinned either way."""
    world.open_pr()
    git(world.seed, "checkout", "-q", "-b", "feat2", "origin/feat")
    stacked = world.commit_seed("docs/stacked.md", "stacked\n", "stacked change")
    git(world.seed, "push", "-q", "origin", "feat2")
    world.fake.add_pr(PR(8, "feat2", "stacked", ["full-sweep-enabled"], base_ref="feat"))
    world.fake.runs.append(Run(2002, stacked, "feat2", created=300, prs=[8]))
    git(world.seed, "push", "-q", "origin", "feat2:feat")  # the author folds #8 into #7
    git(world.seed, "checkout", "-q", "main")
    world.clone_user()
    kw: dict[str, object] = {}
    if how == "run-id":
        kw["run_id"] = 2002
    else:
        world.fake.add_comment(PRN, "/reuse-sweep-run 2002", login="lead", permission="admin")
    res = assert_refused(world, "MR302", **kw)
    msg = next(f.message for f in res.findings if f.rule == "MR302")
    assert "ran on branch feat2, not the PR's feat" in msg
    assert "it lists #8, not PR #7" in msg


# ----------------------------------------------------------------------------- 7. benchmarked

def test_unbenchmarked_commits_refused(world: World) -> None:
    """Commits after the benchmarked one: an error (was a warning, MR303, with --yes)."""
    world.open_pr()
    late = world.push_to_pr()
    world.clone_user()
    res = assert_refused(world, "MR303")
    f = next(f for f in res.findings if f.rule == "MR303")
    assert f.severity == "error" and late[:12] in f.message
    assert f.hint is not None and "--allow-unbenchmarked" in f.hint


def test_unbenchmarked_commits_with_the_override(world: World) -> None:
    """--allow-unbenchmarked: merged, with a warning, and the squash commit names them."""
    world.open_pr()
    late = world.push_to_pr()
    world.clone_user()
    res = world.run(allow_unbenchmarked=True)
    assert res.ok and res.info["state"] == "merged", res.findings
    assert rules_of(res) == {"MR306"}
    assert world.writes() == [COMMENT_POST, MERGE_PUT]
    body = git(world.bare, "log", "-1", "--format=%B", "main")
    assert "Not benchmarked (merged with --allow-unbenchmarked)" in body and late in body
    assert git(world.bare, "show", "main:late.txt") == "late"
    # ixtool's own commit (recorded SHA) is not listed as unbenchmarked on a re-run
    assert res.info["unbenchmarked"] == [late]


def test_prepared_commit_recognised_from_the_comment_in_another_clone(world: World) -> None:
    """ixtool crashes after pushing its commit; the re-run happens in another clone
    (no local state): the SHA recorded in ixtool's comment identifies the commit."""
    world.open_pr()
    world.clone_user()
    world.crash_after = "push"
    with pytest.raises(Crash):
        world.run()
    world.crash_after = None
    world.user = world.tmp / "user2"
    world.clone_user()
    res = world.run()
    assert res.ok, res.findings
    assert world.writes() == [COMMENT_POST, MERGE_PUT]
    assert_merged(world)


# ----------------------------------------------------------------------------- 8. the tie

def test_authorization_tie_broken_by_comment_id(world: World, tmp_path: Path) -> None:
    """Issue 14 item 4: two authorized comments with the same created_at pin runs 111
    and 222.  Before: ci plan took one, merge-with-reuse the other.  Now both take
    the comment with the larger id (222), whatever the list order."""
    sha = world.open_pr(run=False)
    world.fake.runs += [Run(111, sha, "feat", created=100), Run(222, sha, "feat", created=90)]
    same = "2026-08-02T10:00:00Z"
    world.fake.add_comment(PRN, "/reuse-sweep-run 222", login="lead", permission="admin",
                           cid=9200, created=same)
    world.fake.add_comment(PRN, "/reuse-sweep-run 111", login="lead2", permission="write",
                           cid=9100, created=same)
    world.clone_user()
    # ci plan on the same comments, as the workflow hands them over
    chosen = ci_plan_choice(world, tmp_path)
    assert chosen == {"run_id": 222, "comment_id": 9200, "author": "lead",
                      "permission": "admin", "for_head": True}
    res = world.run()
    assert res.ok and res.info["run_id"] == 222, res.findings
    # the comment in force pins run 222; ixtool's own comment (it records the commit it
    # pushes, which ci plan needs to skip that head's sweep) pins the same run
    assert world.writes() == [COMMENT_POST, MERGE_PUT]
    assert world.fake.reuse_comments(PRN)[-1].splitlines()[0] == "/reuse-sweep-run 222"
    assert "sweep run 222" in git(world.bare, "log", "-1", "--format=%B", "main")


def ci_plan_choice(world: World, tmp_path: Path) -> object:
    from inferencex_tools.ci.service import PlanRequest, plan

    head = git(world.bare, "rev-parse", "feat")
    base = git(world.bare, "rev-parse", "main")
    event = {"action": "synchronize", "number": PRN,
             "repository": {"full_name": SLUG, "default_branch": "main"},
             "sender": {"login": "author"},  # who pushed the head
             "pull_request": {"number": PRN, "draft": False, "user": {"login": "author"},
                              "updated_at": "2026-08-01T00:00:00Z",  # the push
                              "labels": [{"name": "full-sweep-enabled"}],
                              "head": {"sha": head, "ref": "feat",
                                       "repo": {"full_name": SLUG}},
                              "base": {"sha": base, "ref": "main",
                                       "repo": {"full_name": SLUG}}}}
    ev, cm = tmp_path / "event.json", tmp_path / "comments.json"
    ev.write_text(json.dumps(event), encoding="utf-8")
    cm.write_text(json.dumps(workflow_comments(world)), encoding="utf-8")
    decision, result = plan(PlanRequest(event_path=ev, event_name="pull_request",
                                        comments=cm, use_git=False))
    assert decision.sweep.run is False  # authorized: the PR sweep is skipped
    return result.info["reuse_authorization"]
