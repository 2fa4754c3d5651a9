"""Git access for the commands: plain ``git`` processes, no shell, no GitPython.

Reads use git's object database (``cat-file``: one ``git cat-file --batch`` per
repository, :class:`~inferencex_tools.io.gitcat.GitReader`), so user or repository
config (colour, textconv, diff drivers, autocrlf) cannot change what ixtool sees; user
and system configuration are neutralised for every process, replace refs ignored.  One
git layer (issue 31): GitPython cost ~140 ms to import and read blobs 24× slower than the
cat-file reader (200 blobs of the real tree: 1.16 s vs 0.05 s), and every call of it was
a git process anyway.
"""

from __future__ import annotations

import os
import re
import subprocess
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from inferencex_tools.errors import GitError, ShallowCloneError
from inferencex_tools.io.gitcat import GitReader, process_env


def run_git(cwd: str | os.PathLike[str], *args: str, check: bool = True
            ) -> tuple[int, str, str]:
    """``git ARGS`` in ``cwd`` with ixtool's isolated configuration: (status, stdout,
    stderr); with ``check``, GitError carrying git's message when it fails."""
    code, out, err = run_git_bytes(cwd, *args)
    text = out.decode("utf-8", "replace")
    if check and code != 0:
        detail = err.strip() or f"exit status {code}"
        raise GitError(f"git {' '.join(args)} failed: {detail}")
    return code, text, err


def run_git_bytes(cwd: str | os.PathLike[str], *args: str) -> tuple[int, bytes, str]:
    """``git ARGS`` as :func:`run_git`, stdout as bytes, never raising for its status."""
    try:
        p = subprocess.run(["git", *args], cwd=cwd, env=process_env(),
                           capture_output=True, stdin=subprocess.DEVNULL, check=False)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror}") from None
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


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
    """The repository a command works in: refs, blobs, merge-bases, the index."""

    root: Path  # the work tree (a bare repository: its git directory)
    git_dir: Path
    _reader: GitReader | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".") -> GitRepo:
        where = Path(path)
        code, out, _ = run_git(where, "rev-parse", "--absolute-git-dir", check=False) \
            if where.is_dir() else (1, "", "")
        if code != 0:
            raise GitError(
                f"{where.resolve()}: not inside a git repository",
                hint="run from a clone of the repository, or drop --base/--head",
            )
        git_dir = Path(out.strip())
        code, top, _ = run_git(where, "rev-parse", "--show-toplevel", check=False)
        return cls(Path(top.strip()) if code == 0 and top.strip() else git_dir, git_dir)

    def reader(self) -> GitReader:
        """The repository's cat-file reader (started once, closed with this object)."""
        if self._reader is None:
            self._reader = GitReader(self.root)
            weakref.finalize(self, self._reader.close)
        return self._reader

    def git(self, *args: str, check: bool = True) -> tuple[int, str, str]:
        """``git ARGS`` in the repository (isolated configuration)."""
        return run_git(self.root, *args, check=check)

    @property
    def head_unborn(self) -> bool:
        """HEAD names a branch without a commit yet (a new repository's first commit)."""
        return self.git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)[0] != 0

    @property
    def is_shallow(self) -> bool:
        return self.git("rev-parse", "--is-shallow-repository",
                        check=False)[1].strip() == "true"

    def resolve(self, ref: str) -> str:
        """Full commit SHA of ``ref``; GitError with a clear message when unknown."""
        if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
            raise GitError(f"invalid git ref {ref!r}")
        code, out, _ = self.git("rev-parse", "--verify", "--quiet", "--end-of-options",
                                f"{ref}^{{commit}}", check=False)
        if code != 0:
            hint = "fetch it first (git fetch origin main)" if "/" in ref else "check the ref name"
            if self.is_shallow:
                hint += "; this clone is shallow, fetch with --unshallow or fetch-depth: 0"
            raise GitError(f"unknown git ref {ref!r}", hint=hint)
        return out.strip()

    def merge_base(self, a: str, b: str) -> str:
        sa, sb = self.resolve(a), self.resolve(b)
        code, out, _ = self.git("merge-base", sa, sb, check=False)
        if code != 0:
            if self.is_shallow:
                raise ShallowCloneError(
                    f"no merge-base between {a} and {b}: this clone is shallow",
                    hint="fetch full history (actions/checkout with fetch-depth: 0, "
                    "or git fetch --unshallow)",
                )
            raise GitError(f"{a} and {b} have no common history")
        return out.strip()

    def show(self, ref: str, relpath: str) -> bytes | None:
        """Bytes of ``relpath`` at ``ref`` (None when the path does not exist there)."""
        return self.reader().blob_at(self.resolve(ref), relpath)

    def list_files(self, ref: str, pattern: str) -> list[str]:
        """Paths at ``ref`` matching a regular expression (full match)."""
        _, out, _ = self.git("ls-tree", "-r", "--name-only", "-z", self.resolve(ref))
        rx = re.compile(pattern)
        return sorted(p for p in out.split("\0") if p and rx.fullmatch(p))

    def message(self, ref: str) -> str:
        """The commit message of ``ref``."""
        return self.reader().message(self.resolve(ref))

    def index_stages(self, relpath: str) -> dict[int, bytes]:
        """The blobs the index holds for ``relpath``, by stage (0: merged; 1-3: the
        merge-base, ours and theirs of a conflict)."""
        _, out, _ = self.git("ls-files", "--stage", "-z", "--", relpath)
        stages: dict[int, bytes] = {}
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split(" ")
            if path != relpath or len(parts) != 3:
                continue
            code, data, err = run_git_bytes(self.root, "cat-file", "blob", parts[1])
            if code != 0:
                raise GitError(f"cannot read the git index entry of {relpath}: {err.strip()}")
            stages[int(parts[2])] = data
        return stages

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """``path`` relative to the repository root, in git's slash form."""
        p = Path(path).resolve()
        try:
            return p.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            raise GitError(f"{path} is outside the repository at {self.root}") from None

    def remote_slug(self, remote: str = "origin") -> str | None:
        """``owner/name`` of a GitHub-style remote URL (as configured), if there is one."""
        code, url, _ = self.git("config", "--get", f"remote.{remote}.url", check=False)
        url = url.strip()
        m = re.search(r"[:/]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$", url)
        if code != 0 or not m or url.startswith(("/", ".", "file:")):
            return None
        return f"{m.group(1)}/{m.group(2)}"


def merge_file(cwd: Path, current: Path, ancestor: Path, other: Path, *, name: str) -> None:
    """``git merge-file``: a three-way text merge into ``current``, leaving ordinary
    conflict markers (labelled ``<name> (current|merge-base|other)``) where it cannot."""
    run_git(cwd, "merge-file", "-L", f"{name} (current)", "-L", f"{name} (merge-base)",
            "-L", f"{name} (other)", str(current), str(ancestor), str(other), check=False)
