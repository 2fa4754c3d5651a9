"""Write-side git operations for ``merge-with-reuse`` (GitPython, no shell).

All work happens in a private *worktree* (``<git-dir>/ixtool/merge-pr-N``) with a
detached HEAD, so the user's checkout, branches and index are never touched;
fetched refs go to ``refs/ixtool/…`` only.  A leftover worktree from an
interrupted run is discarded and rebuilt from the remote state, which is what
makes the command resumable.  Global/system git config is neutralised as in
:mod:`inferencex_tools.io.git`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferencex_tools.errors import GitError
from inferencex_tools.io.git import _GIT_ENV, GitRepo

_IDENTITY_KEYS = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                  "GIT_COMMITTER_EMAIL")


def _run(repo: Any, *args: str, check: bool = True) -> tuple[int, str, str]:
    import git

    try:
        status, out, err = repo.git.execute(["git", *args], with_extended_output=True,
                                            with_exceptions=check)
    except git.GitCommandError as exc:
        stderr = (exc.stderr or "").strip().removeprefix("stderr: ").strip("'\n ")
        raise GitError(f"git {' '.join(args)} failed: {stderr or exc}") from None
    return int(status), str(out), str(err)


@dataclass
class MergeAttempt:
    clean: bool
    conflicted: list[str]


class Workspace:
    """The user's repository plus ixtool's private worktree for one PR."""

    def __init__(self, repo: GitRepo, remote: str = "origin") -> None:
        self.repo = repo
        self.remote = remote
        self._wt: Any = None

    # -- read-only checks ------------------------------------------------------------
    def dirty(self) -> list[str]:
        """``git status --porcelain`` lines of the user's checkout."""
        _, out, _ = _run(self.repo.repo, "status", "--porcelain")
        return [ln for ln in out.splitlines() if ln.strip()]

    def remote_url(self) -> str:
        _, out, _ = _run(self.repo.repo, "remote", "get-url", self.remote)
        return out.strip()

    # -- fetch ---------------------------------------------------------------------------
    def fetch(self, pr: int, base: str) -> tuple[str, str]:
        """Fetch ``pull/N/head`` and ``base`` into ``refs/ixtool/``; their SHAs."""
        head_ref, base_ref = self.head_ref(pr), self.base_ref(pr)
        _run(self.repo.repo, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
             self.remote, f"+refs/pull/{pr}/head:{head_ref}",
             f"+refs/heads/{base}:{base_ref}")
        return self.repo.resolve(head_ref), self.repo.resolve(base_ref)

    @staticmethod
    def head_ref(pr: int) -> str:
        return f"refs/ixtool/pr-{pr}/head"

    @staticmethod
    def base_ref(pr: int) -> str:
        return f"refs/ixtool/pr-{pr}/base"

    def is_ancestor(self, a: str, b: str) -> bool:
        status, _, _ = _run(self.repo.repo, "merge-base", "--is-ancestor", a, b, check=False)
        return status == 0

    def commits_between(self, base: str, head: str) -> list[tuple[str, str]]:
        """(sha, message) of commits in ``head`` but not ``base``, oldest first —
        what GitHub lists as a PR's commits, without its 250-commit cap."""
        _, out, _ = _run(self.repo.repo, "log", "--reverse", "--format=%H%x00%B%x01",
                         f"{base}..{head}")
        items = []
        for rec in out.split("\x01"):
            rec = rec.strip("\n")
            if rec:
                sha, _, msg = rec.partition("\x00")
                items.append((sha, msg))
        return items

    def commit_message(self, sha: str) -> str:
        _, out, _ = _run(self.repo.repo, "log", "-1", "--format=%B", sha)
        return out

    # -- the private worktree ------------------------------------------------------------
    def worktree_path(self, pr: int) -> Path:
        return Path(self.repo.repo.git_dir) / "ixtool" / f"merge-pr-{pr}"

    def prepare_worktree(self, pr: int, sha: str) -> Path:
        """A fresh detached worktree at ``sha`` (a leftover one is discarded)."""
        import git

        path = self.worktree_path(pr)
        self.discard_worktree(pr)
        path.parent.mkdir(parents=True, exist_ok=True)
        _run(self.repo.repo, "worktree", "add", "--quiet", "--detach", str(path), sha)
        wt = git.Repo(path)
        wt.git.update_environment(**_GIT_ENV)
        self._wt = wt
        return path

    def discard_worktree(self, pr: int) -> None:
        path = self.worktree_path(pr)
        if path.exists():
            _run(self.repo.repo, "worktree", "remove", "--force", str(path), check=False)
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
        _run(self.repo.repo, "worktree", "prune", check=False)
        self._wt = None

    @property
    def wt(self) -> Any:
        if self._wt is None:
            raise GitError("internal: no worktree prepared")
        return self._wt

    def merge(self, ref: str) -> MergeAttempt:
        """``git merge --no-ff --no-commit ref`` in the worktree."""
        status, _, err = _run(self.wt, "merge", "--no-ff", "--no-commit", "--no-edit", ref,
                              check=False)
        conflicted = self.conflicted()
        if status != 0 and not conflicted:
            raise GitError(f"git merge {ref} failed: {err.strip() or 'unknown error'}")
        return MergeAttempt(clean=status == 0, conflicted=conflicted)

    def conflicted(self) -> list[str]:
        _, out, _ = _run(self.wt, "diff", "--name-only", "--diff-filter=U", "-z")
        return sorted(p for p in out.split("\0") if p)

    def stage(self, stage: int, path: str) -> bytes | None:
        """Bytes of ``path`` at index stage 1/2/3 during a conflict."""
        import git

        try:
            data: bytes = self.wt.git.execute(["git", "show", f":{stage}:{path}"],
                                              stdout_as_string=False,
                                              strip_newline_in_stdout=False)
        except git.GitCommandError:
            return None
        return data

    def read(self, path: str) -> bytes:
        from inferencex_tools.io.files import read_bytes

        return read_bytes(Path(self.wt.working_tree_dir) / path)

    def write(self, path: str, data: bytes) -> None:
        from inferencex_tools.io.files import atomic_write

        atomic_write(Path(self.wt.working_tree_dir) / path, data)
        _run(self.wt, "add", "--", path)

    def commit(self, message: str) -> str:
        env = {k: os.environ[k] for k in _IDENTITY_KEYS if k in os.environ}
        if env:
            self.wt.git.update_environment(**env)
        import git

        try:
            self.wt.git.execute(["git", "commit", "--quiet", "--allow-empty", "--no-verify",
                                 "--cleanup=verbatim", "-m", message])
        except git.GitCommandError as exc:
            stderr = (exc.stderr or "").strip()
            raise GitError(f"git commit failed: {stderr or exc}",
                           hint="set user.name and user.email in this repository") from None
        _, out, _ = _run(self.wt, "rev-parse", "HEAD")
        return out.strip()

    def push(self, sha: str, branch: str, expected_old: str) -> tuple[bool, str]:
        """Push ``sha`` to ``branch`` only if the remote branch is still ``expected_old``."""
        status, out, err = _run(
            self.repo.repo, "push", "--porcelain", "--quiet",
            f"--force-with-lease=refs/heads/{branch}:{expected_old}",
            self.remote, f"{sha}:refs/heads/{branch}", check=False)
        return status == 0, (err or out).strip()
