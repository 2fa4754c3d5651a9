"""Git access through GitPython: blobs at refs, merge-bases, shallow detection.

Reads use git's object database (``cat-file``), so user or repository config
(colour, textconv, diff drivers, autocrlf) cannot change what ixtool sees.  No
command line is ever built through a shell.  GitPython is imported lazily.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inferencex_tools.errors import GitError, ShallowCloneError

if TYPE_CHECKING:
    from git import Repo

# Neutralise global/system configuration for every git process GitPython starts, and
# replace refs (refs/replace/*: anyone who can push a ref could make a base revision's
# blob read as other content; docs/security.md).
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "LC_ALL": "C",
}


# the repository's default branch, as a base when none is given: the remote's, else local
DEFAULT_BRANCHES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")


def default_branch(resolve: Callable[[str], object]) -> str | None:
    """The first of :data:`DEFAULT_BRANCHES` that ``resolve`` (a reader's ``resolve``)
    accepts; None when there is none."""
    for cand in DEFAULT_BRANCHES:
        try:
            resolve(cand)
        except GitError:
            continue
        return cand
    return None

@dataclass
class GitRepo:
    """A thin façade over ``git.Repo`` exposing what ixtool needs."""

    repo: Repo

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".") -> GitRepo:
        import git

        try:
            repo = git.Repo(Path(path), search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise GitError(
                f"{Path(path).resolve()}: not inside a git repository",
                hint="run from a clone of the repository, or drop --base/--head",
            ) from None
        repo.git.update_environment(**_GIT_ENV)
        return cls(repo)

    @property
    def root(self) -> Path:
        wt = self.repo.working_tree_dir
        return Path(wt if wt is not None else self.repo.git_dir)

    @property
    def head_unborn(self) -> bool:
        """HEAD names a branch without a commit yet (a new repository's first commit)."""
        return not self.repo.head.is_valid()

    @property
    def is_shallow(self) -> bool:
        return (Path(self.repo.common_dir) / "shallow").exists() or (
            Path(self.repo.git_dir) / "shallow"
        ).exists()

    def _git(self, *args: str) -> str:
        """``git ARGS`` (no shell); GitError with git's message when it fails."""
        import git

        try:
            out: str = self.repo.git.execute(["git", *args], with_extended_output=False)
            return out
        except git.GitCommandError as exc:
            stderr = (exc.stderr or "").strip().removeprefix("stderr: ").strip("'\n ")
            raise GitError(f"git {' '.join(args)} failed: {stderr or exc}") from None

    def resolve(self, ref: str) -> str:
        """Full commit SHA of ``ref``; GitError with a clear message when unknown."""
        if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
            raise GitError(f"invalid git ref {ref!r}")
        import git

        try:
            sha: str = self.repo.git.execute(
                ["git", "rev-parse", "--verify", "--quiet", "--end-of-options",
                 f"{ref}^{{commit}}"],
            )
            return sha.strip()
        except git.GitCommandError:
            hint = "fetch it first (git fetch origin main)" if "/" in ref else "check the ref name"
            if self.is_shallow:
                hint += "; this clone is shallow, fetch with --unshallow or fetch-depth: 0"
            raise GitError(f"unknown git ref {ref!r}", hint=hint) from None

    def merge_base(self, a: str, b: str) -> str:
        sa, sb = self.resolve(a), self.resolve(b)
        import git

        try:
            out: str = self.repo.git.execute(["git", "merge-base", sa, sb])
        except git.GitCommandError:
            if self.is_shallow:
                raise ShallowCloneError(
                    f"no merge-base between {a} and {b}: this clone is shallow",
                    hint="fetch full history (actions/checkout with fetch-depth: 0, "
                    "or git fetch --unshallow)",
                ) from None
            raise GitError(f"{a} and {b} have no common history") from None
        return out.strip()

    def show(self, ref: str, relpath: str) -> bytes | None:
        """Bytes of ``relpath`` at ``ref`` (None when the path does not exist there)."""
        sha = self.resolve(ref)
        commit = self.repo.commit(sha)
        try:
            blob = commit.tree / relpath
        except KeyError:
            return None
        if blob.type != "blob":
            return None
        data: bytes = blob.data_stream.read()
        return data

    def list_files(self, ref: str, pattern: str) -> list[str]:
        """Paths at ``ref`` matching a regular expression (full match)."""
        from git.objects import Blob

        sha = self.resolve(ref)
        rx = re.compile(pattern)
        paths = (str(item.path) for item in self.repo.commit(sha).tree.traverse()
                 if isinstance(item, Blob))
        return sorted(p for p in paths if rx.fullmatch(p))

    def message(self, ref: str) -> str:
        """The commit message of ``ref``."""
        msg = self.repo.commit(self.resolve(ref)).message
        return msg if isinstance(msg, str) else msg.decode("utf-8", "replace")

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """``path`` relative to the repository root, in git's slash form."""
        p = Path(path).resolve()
        try:
            return p.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            raise GitError(f"{path} is outside the repository at {self.root}") from None

    def remote_slug(self, remote: str = "origin") -> str | None:
        """``owner/name`` of a GitHub-style remote URL, if there is one."""
        try:
            url = self.repo.remote(remote).url
        except (ValueError, Exception):
            return None
        m = re.search(r"[:/]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$", url)
        if not m or url.startswith(("/", ".", "file:")):
            return None
        return f"{m.group(1)}/{m.group(2)}"


def merge_file(cwd: Path, current: Path, ancestor: Path, other: Path, *, name: str) -> None:
    """``git merge-file``: a three-way text merge into ``current``, leaving ordinary
    conflict markers (labelled ``<name> (current|merge-base|other)``) where it cannot."""
    import git

    git.cmd.Git(str(cwd)).execute(
        ["git", "merge-file", "-L", f"{name} (current)", "-L", f"{name} (merge-base)",
         "-L", f"{name} (other)", str(current), str(ancestor), str(other)],
        with_exceptions=False,
    )
