"""A merge-with-reuse world: bare ``origin`` + fake GitHub + the user's clone."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from inferencex_tools.merge.service import Hooks, MergeRequest, run_merge
from inferencex_tools.report.findings import Result
from tests.forge import PRN, SLUG, ForgeWorld, init_origin
from tests.merge.fake_github import PR, Run

IDENTITY = {
    "GIT_AUTHOR_NAME": "Maintainer", "GIT_AUTHOR_EMAIL": "maint@example.invalid",
    "GIT_COMMITTER_NAME": "Maintainer", "GIT_COMMITTER_EMAIL": "maint@example.invalid",
}
ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, **IDENTITY}
# the PR's author writes the PR's own commits; GitHub knows who each e-mail belongs to
AUTHOR_ENV = {**ENV, "GIT_AUTHOR_NAME": "PR Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
              "GIT_COMMITTER_NAME": "PR Author",
              "GIT_COMMITTER_EMAIL": "author@example.invalid"}
ACCOUNTS = {"maint@example.invalid": "maint", "author@example.invalid": "author",
            "lead@example.invalid": "lead"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


def entry(key: str, desc: str, link: str) -> str:
    return f'- config-keys:\n    - {key}\n  description:\n    - "{desc}"\n  pr-link: {link}\n'


BASE = (entry("dsr1-fp8-b200-sglang", "first", f"https://github.com/{SLUG}/pull/1") + "\n"
        + entry("gptoss-fp4-h100-vllm", "second", f"https://github.com/{SLUG}/pull/2"))
PR_ENTRY = "dsr1-fp8-h200-sglang", "h200 sweep"
MAIN_ENTRY = "gptoss-fp4-b200-vllm", "landed on main meanwhile"


class Crash(Exception):
    """Injected after a step, like a Ctrl-C or a killed process."""


@dataclass
class World(ForgeWorld):
    now: list[float] = field(default_factory=lambda: [0.0])
    progress: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    retry_delays: list[float] = field(default_factory=list)
    crash_after: str | None = None
    on_step: dict[str, Callable[[], object]] = field(default_factory=dict)

    # -- building ------------------------------------------------------------------------
    def commit_seed(self, rel: str, text: str, message: str, *, env: dict[str, str] = ENV
                    ) -> str:
        p = self.seed / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        git(self.seed, "add", "-A")
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=self.seed,
                       env=env, check=True, capture_output=True)
        return git(self.seed, "rev-parse", "HEAD")

    def open_pr(self, *, link: str = "XXX", labels: tuple[str, ...] = ("full-sweep-enabled",),
                title: str = "Sweep dsr1 on h200", head_repo: str | None = None,
                run: bool = True, files: dict[str, str] | None = None) -> str:
        """PR #7 on branch feat: one commit appending its changelog entry (and writing
        ``files``), swept by run 1001 unless ``run`` is false."""
        git(self.seed, "checkout", "-q", "-b", "feat", "main")
        for rel, text in (files or {}).items():
            (self.seed / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.seed / rel).write_text(text)
        sha = self.commit_seed("perf-changelog.yaml",
                               BASE + "\n" + entry(*PR_ENTRY, link), "add h200 entry",
                               env=AUTHOR_ENV)
        git(self.seed, "push", "-q", "origin", "feat")
        git(self.seed, "checkout", "-q", "main")
        self.fake.add_pr(PR(PRN, "feat", title, list(labels), head_repo=head_repo))
        if run:
            self.fake.runs.append(Run(1001, sha, "feat", created=100,
                                      artifacts=[("results_bmk", False),
                                                 ("changelog-metadata", False)]))
        return sha

    def move_main(self, *, conflict: bool = True, other_file: bool = False) -> str:
        git(self.seed, "checkout", "-q", "main")
        if other_file:
            sha = self.commit_seed("README.md", "changed on main\n", "main: readme")
        elif conflict:
            sha = self.commit_seed("perf-changelog.yaml",
                                   BASE + "\n" + entry(*MAIN_ENTRY,
                                                       f"https://github.com/{SLUG}/pull/99"),
                                   "main: another PR's entry")
        else:
            sha = self.commit_seed("docs/x.md", "x\n", "main: docs")
        git(self.seed, "push", "-q", "origin", "main")
        return sha

    def push_to_pr(self, text: str = "late\n") -> str:
        """Someone else pushes to the PR branch (from a fresh clone)."""
        other = self.tmp / f"other-{len(list(self.tmp.iterdir()))}"
        git(self.tmp, "clone", "-q", str(self.bare), str(other))
        git(other, "checkout", "-q", "feat")
        (other / "late.txt").write_text(text)
        git(other, "add", "-A")
        git(other, "commit", "-q", "-m", "late push")
        git(other, "push", "-q", "origin", "feat")
        return git(other, "rev-parse", "HEAD")

    # -- running -------------------------------------------------------------------------
    def hooks(self) -> Hooks:
        def sleep(s: float) -> None:
            self.now[0] += s

        def after(step: str) -> None:
            if step in self.on_step:
                self.on_step[step]()
            if step == self.crash_after:
                raise Crash(step)

        return Hooks(clock=lambda: self.now[0], sleep=sleep, poll_interval=10.0,
                     progress=self.progress.append, say=self.said.append,
                     confirm=lambda plan: True, after_step=after,
                     retry_sleep=self.retry_delays.append, throttle=False, per_page=2)

    def request(self, **kw: object) -> MergeRequest:
        base: dict[str, object] = dict(pr=PRN, repo=SLUG, yes=True, path=self.user,
                                       api_url=self.fake.url, token=self.fake.token,
                                       timeout=300.0)
        base.update(kw)
        return MergeRequest(**base)  # type: ignore[arg-type]

    def run(self, **kw: object) -> Result:
        return run_merge(self.request(**kw), self.hooks())

    # -- observing -----------------------------------------------------------------------
    def main_changelog(self) -> str:
        return git(self.bare, "show", "refs/heads/main:perf-changelog.yaml") + "\n"

    def ixtool_commits_on_branch(self) -> list[str]:
        out = git(self.bare, "log", "--format=%H", "refs/heads/feat", "--grep=Ixtool-Reuse-Run")
        return [ln for ln in out.splitlines() if ln]


@pytest.fixture(scope="session")
def _template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """origin.git + seed clone with main = README + changelog, built once per session."""
    root = tmp_path_factory.mktemp("merge-template")
    _bare, seed = init_origin(root, ENV)
    for rel, text, msg in (("README.md", "bench\n", "init"),
                           ("perf-changelog.yaml", BASE, "changelog")):
        (seed / rel).write_text(text)
        git(seed, "add", "-A")
        git(seed, "commit", "-q", "-m", msg)
    git(seed, "push", "-q", "origin", "main")
    return root


@pytest.fixture
def world(_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    for k, v in IDENTITY.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    bare, seed = tmp_path / "origin.git", tmp_path / "seed"
    shutil.copytree(_template / "origin.git", bare, symlinks=True)
    shutil.copytree(_template / "seed", seed, symlinks=True)
    git(seed, "remote", "set-url", "origin", str(bare))
    w = World.serve(tmp_path, bare, seed, ENV)
    w.fake.accounts.update(ACCOUNTS)
    try:
        yield w
    finally:
        w.fake.stop()


# ----------------------------------------------------------------------------- assertions

CANON = f"https://github.com/{SLUG}/pull/{PRN}"
COMMENT_POST = ("POST", f"/repos/{SLUG}/issues/{PRN}/comments", 201)
MERGE_PUT = ("PUT", f"/repos/{SLUG}/pulls/{PRN}/merge", 200)


def rules_of(res: object) -> set[str]:
    return {f.rule for f in res.findings}  # type: ignore[attr-defined]


def assert_merged(world: World, *, main_moved: bool = False, run_id: int = 1001) -> None:
    """The one correct end state, whatever path led to it."""
    pr = world.fake.prs[PRN]
    assert pr.merged and pr.state == "closed"
    assert len(world.fake.merges) == 1
    expected = BASE + "\n"
    if main_moved:
        expected += entry(*MAIN_ENTRY, f"https://github.com/{SLUG}/pull/99") + "\n"
    expected += entry(*PR_ENTRY, CANON)
    assert world.main_changelog() == expected
    # exactly one authorization comment, pinned to the run …
    comments = world.fake.reuse_comments(PRN)
    assert [c.splitlines()[0] for c in comments] == [f"/reuse-sweep-run {run_id}"]
    # exactly one ixtool commit on the PR branch, carrying [skip-sweep] …
    prep = world.ixtool_commits_on_branch()
    assert len(prep) == 1
    # … whose SHA ixtool recorded in its comment (when it posted one)
    if "prepared" in comments[0]:
        assert comments[0].splitlines()[1] == (
            f"<!-- ixtool merge-with-reuse: prepared {prep[0]} -->")
    assert "[skip-sweep]" in git(world.bare, "log", "-1", "--format=%B", prep[0])
    # … and the squash commit on main does not
    msg = git(world.bare, "log", "-1", "--format=%B", "refs/heads/main")
    assert "[skip-sweep]" not in msg.lower() and "/reuse-sweep-run" not in msg
    assert f"sweep run {run_id}" in msg and f"(#{PRN})" in msg.splitlines()[0]
    assert git(world.bare, "rev-parse", "refs/heads/main") == pr.merge_commit_sha


def assert_refused(world: World, *expected: str, **kw: object) -> Result:
    """Refused by the preflight: not one write request, nothing pushed or merged."""
    head = git(world.bare, "rev-parse", "refs/heads/feat")
    main = git(world.bare, "rev-parse", "refs/heads/main")
    res = world.run(**kw)
    assert res.exit_code() == 1 and res.info["state"] == "refused", res.findings
    assert set(expected) <= rules_of(res), res.findings
    assert world.writes() == [], "nothing may be posted or merged"
    assert world.fake.reuse_comments(PRN) == [] or all(
        c["user"]["login"] != world.fake.login for c in world.fake.comments[PRN])
    assert git(world.bare, "rev-parse", "refs/heads/feat") == head, "nothing pushed"
    assert git(world.bare, "rev-parse", "refs/heads/main") == main
    assert not world.fake.prs[PRN].merged
    return res


def pr_commits_via_api(world: World) -> list[dict[str, object]]:
    """``GET /repos/{repo}/pulls/{n}/commits`` read with PyGithub, as pr-gate.yml's
    reuse-comments job hands it to ci plan: each commit's SHA and the GitHub accounts of
    its author and committer (null: the e-mail belongs to no account)."""
    from github import Auth, Github

    gh = Github(base_url=world.fake.api, auth=Auth.Token(world.fake.token), per_page=2,
                lazy=True)

    def account(user: object) -> dict[str, str] | None:
        return None if user is None else {"login": user.login}  # type: ignore[attr-defined]

    return [{"sha": c.sha, "author": account(c.author), "committer": account(c.committer)}
            for c in gh.get_repo(SLUG).get_pull(PRN).get_commits()]


def workflow_comments(world: World) -> dict[str, object]:
    """The fake's comments and the PR's commits as pr-gate.yml's reuse-comments job hands
    them to ci plan: the API objects, each comment with its author's permission from the
    API."""
    out = []
    for c in world.fake.comments[PRN]:
        login = c["user"]["login"]
        role = world.fake.permissions.get(login, "none")
        out.append({"id": c["id"], "created_at": c["created_at"],
                    "updated_at": c["updated_at"],
                    "author_association": c["author_association"], "body": c["body"],
                    "user": {"login": login},
                    "author_permission": {"maintain": "write", "triage": "read"}.get(role,
                                                                                    role)})
    return {"comments": out, "commits": pr_commits_via_api(world)}
