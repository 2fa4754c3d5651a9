"""Read-only git access for hot paths (``ixtool ci gate``): plain ``git`` processes and
one ``git cat-file --batch`` for every blob; :class:`~inferencex_tools.io.git.GitRepo`
reads through it too.

Same rules as :mod:`inferencex_tools.io.git`: user and system configuration neutralised,
no shell, refs checked before use (``--end-of-options``); reads go through the object
database, so attributes, filters and hooks of the checkout play no part.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import IO

from inferencex_tools.errors import GitError, ShallowCloneError


def process_env() -> dict[str, str]:
    """The environment of a git process started now (io/git.py's): this process's, with
    user and system configuration neutralised, no prompts, replace refs ignored (a pushed
    refs/replace/<id> must not change what a revision holds)."""
    return {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1", "LC_ALL": "C"}


MAX_BLOB = 32 * 1024 * 1024
_HUNK = re.compile(r"(?m)^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_SLUG = re.compile(r"[:/]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


class GitReader:
    """Commits, blobs and trees of one repository, each ref resolved once."""

    def __init__(self, path: str | os.PathLike[str] = ".") -> None:
        self._cwd = Path(path)
        self._memo: dict[tuple[str, ...], str] = {}
        try:
            top = self._run("rev-parse", "--show-toplevel").strip()
        except GitError:
            raise GitError(f"{Path(path).resolve()}: not inside a git repository",
                           hint="run from a clone of the repository") from None
        self.root = Path(top)
        self._resolved: dict[str, str] = {}
        self._batch: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------ processes
    def _run(self, *args: str) -> str:
        if args in self._memo:  # queries about immutable objects (resolved ids) only
            return self._memo[args]
        p = subprocess.run(["git", *args], cwd=self._cwd, env=process_env(), capture_output=True,
                           check=False)
        if p.returncode != 0:
            err = p.stderr.decode("utf-8", "replace").strip()
            raise GitError(f"git {' '.join(args[:3])} failed: {err[:300]}")
        return p.stdout.decode("utf-8", "replace")

    def _status(self, *args: str) -> tuple[int, str]:
        """(exit status, stdout) of a git command whose status is an answer."""
        p = subprocess.run(["git", *args], cwd=self._cwd, env=process_env(), capture_output=True,
                           check=False)
        return p.returncode, p.stdout.decode("utf-8", "replace")

    def _kept(self, *args: str) -> str:
        """``_run`` for a query whose answer cannot change (its refs are resolved object
        ids): asked once per reader."""
        out = self._run(*args)
        self._memo[args] = out
        return out

    def _cat(self) -> tuple[IO[bytes], IO[bytes]]:
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self._cwd,
                                           env=process_env(), stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self._batch.stdin is not None and self._batch.stdout is not None
        return self._batch.stdin, self._batch.stdout

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin is not None:
                self._batch.stdin.close()
            self._batch.wait(timeout=10)
            self._batch = None

    # ------------------------------------------------------------------------ refs
    def resolve(self, ref: str) -> str:
        if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
            raise GitError(f"invalid git ref {ref!r}")
        if ref not in self._resolved:
            # through the cat-file process the blob reads use anyway (same name
            # resolution as rev-parse, one process fewer); rev-parse decides otherwise
            sha = self._peeled_commit(ref)
            if sha is not None:
                self._resolved[ref] = self._resolved[sha] = sha
                return sha
            try:
                sha = self._run("rev-parse", "--verify", "--quiet", "--end-of-options",
                                f"{ref}^{{commit}}").strip()
            except GitError:
                raise GitError(f"unknown git ref {ref!r}",
                               hint="fetch it first; with actions/checkout use "
                               "fetch-depth: 0") from None
            self._resolved[ref] = self._resolved[sha] = sha
        return self._resolved[ref]

    def _peeled_commit(self, ref: str) -> str | None:
        """The commit ``ref`` names, from ``git cat-file --batch`` (None: not sure)."""
        try:
            obj = self._object(f"{ref}^{{commit}}", want="commit")
        except (GitError, OSError, ValueError):
            return None
        if obj is None or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", obj[0]):
            return None
        return obj[0]

    def merge_base(self, a: str, b: str) -> str:
        sa, sb = self.resolve(a), self.resolve(b)
        try:
            return self._kept("merge-base", sa, sb).strip()
        except GitError:
            if (self.root / ".git" / "shallow").exists():
                raise ShallowCloneError(
                    f"no merge-base between {a} and {b}: this clone is shallow",
                    hint="fetch full history (actions/checkout with fetch-depth: 0)") from None
            raise GitError(f"{a} and {b} have no common history") from None

    # --------------------------------------------------------------------- objects
    def _object(self, spec: str, want: str | None = None) -> tuple[str, bytes] | None:
        """(type, content) of ``spec``; with ``want``, (object id, content) of an object
        of that type."""
        if "\n" in spec or "\r" in spec:
            return None
        stdin, stdout = self._cat()
        stdin.write(spec.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().decode("utf-8", "replace").split()
        if len(header) != 3:
            return None  # "<spec> missing" / ambiguous
        size = int(header[2])
        if size > MAX_BLOB:
            while size > 0:  # drain it; the caller reports the size
                size -= len(stdout.read(min(size, 1 << 20)))
            stdout.read(1)
            raise GitError(f"{spec}: {int(header[2]) / 2**20:.1f} MiB, over the "
                           f"{MAX_BLOB // (1024 * 1024)} MiB limit")
        data = stdout.read(size)
        stdout.read(1)  # the newline after the content
        if want is not None:
            return (header[0], data) if header[1] == want else None
        return header[1], data

    def message(self, ref: str) -> str:
        obj = self._object(self.resolve(ref))
        if obj is None or obj[0] != "commit":
            raise GitError(f"{ref}: not a commit")
        text = obj[1].decode("utf-8", "replace")
        return text.split("\n\n", 1)[1] if "\n\n" in text else ""

    def blob(self, ref: str, path: str) -> tuple[bytes | None, int]:
        """(content, size) of ``path`` at ``ref``; (None, 0) when absent or not a file."""
        obj = self._object(f"{self.resolve(ref)}:{path}")
        if obj is None or obj[0] != "blob":
            return None, 0
        return obj[1], len(obj[1])

    def names(self, ref: str, folder: str) -> list[str]:
        """Paths of the files directly in ``folder`` at ``ref``."""
        out = self._kept("ls-tree", "-z", self.resolve(ref), "--", folder.rstrip("/") + "/")
        names = []
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            if path and meta.split(" ")[1:2] == ["blob"]:
                names.append(path)
        return sorted(names)

    def tree(self, ref: str) -> str:
        """The id of ``ref``'s root tree."""
        return self._kept("rev-parse", "--verify", "-q", f"{self.resolve(ref)}^{{tree}}").strip()

    def paths(self, ref: str, *folders: str) -> set[str]:
        out = self._kept("ls-tree", "-r", "--name-only", "-z", self.resolve(ref), "--",
                         *folders)
        return {p for p in out.split("\0") if p}

    def blob_ids(self, ref: str, *folders: str) -> dict[str, str]:
        """Every file (blob or symlink) at ``ref`` under ``folders`` (all when none):
        path → blob id."""
        args = ["ls-tree", "-r", "-z", self.resolve(ref)]
        if folders:
            args += ["--", *folders]
        out: dict[str, str] = {}
        for entry in self._kept(*args).split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split(" ")
            if path and len(parts) == 3 and parts[1] == "blob":
                out[path] = parts[2]
        return out

    def symlinks(self, ref: str, *folders: str) -> set[str]:
        """The symbolic links (mode 120000) at ``ref`` under ``folders``: their blobs hold
        the link's target."""
        args = ["ls-tree", "-r", "-z", self.resolve(ref)]
        if folders:
            args += ["--", *folders]
        return {path for entry in self._kept(*args).split("\0")
                for meta, _, path in [entry.partition("\t")]
                if path and meta.startswith("120000 ")}

    def changed(self, a: str, b: str) -> list[str]:
        out = self._kept("diff", "--name-only", "--no-renames", "--no-ext-diff", "-z",
                         self.resolve(a), self.resolve(b))
        return [p for p in out.split("\0") if p]

    def added_lines(self, a: str, b: str, path: str) -> set[int]:
        """Line numbers of ``path`` at ``b`` that ``git diff a b`` shows as added (the
        lines a pull request's review comments and suggestions may sit on)."""
        out = self._kept("diff", "--unified=0", "--no-color", "--no-ext-diff", "--no-renames",
                         "--text", self.resolve(a), self.resolve(b), "--", path)
        lines: set[int] = set()
        for m in _HUNK.finditer(out):
            start, count = int(m.group(1)), int(m.group(2) or 1)
            lines.update(range(start, start + count))
        return lines

    def uncommitted(self) -> list[str]:
        """Paths of the working tree that differ from ``HEAD``: tracked files changed
        (staged or not) and untracked files that are not ignored."""
        out = self._run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                        "--no-renames", "--ignore-submodules=none")
        return [item[3:] for item in out.split("\0") if len(item) > 3]

    def staged(self) -> set[str]:
        """Paths the index changes against ``HEAD`` (added, copied, modified, renamed,
        type-changed: what pre-commit passes a hook on a commit, deletions left out)."""
        out = self._run("diff", "--cached", "--name-only", "--no-ext-diff", "-z",
                        "--diff-filter=ACMRTUXB")
        return {p for p in out.split("\0") if p}

    def head_unborn(self) -> bool:
        """HEAD names a branch without a commit yet (a new repository's first commit)."""
        status, _ = self._status("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        return status != 0

    # ------------------------------------------------------- history and trees
    def parents(self, ref: str) -> list[str]:
        """The parents of commit ``ref``, in order."""
        obj = self._object(self.resolve(ref))
        if obj is None or obj[0] != "commit":
            raise GitError(f"{ref}: not a commit")
        header = obj[1].split(b"\n\n", 1)[0].decode("utf-8", "replace")
        return [ln.split(" ", 1)[1] for ln in header.splitlines() if ln.startswith("parent ")]

    def is_ancestor(self, a: str, b: str) -> bool:
        status, _ = self._status("merge-base", "--is-ancestor", self.resolve(a),
                                 self.resolve(b))
        if status > 1:
            raise GitError(f"git merge-base --is-ancestor {a} {b} failed")
        return status == 0

    def delta(self, a: str, b: str) -> dict[str, tuple[str, str]]:
        """What changed from tree-ish ``a`` to ``b``: path → (mode, blob id) at ``b``
        (``("000000", "")`` for a path deleted), renames seen as delete + add."""
        out = self._kept("diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff",
                         _treeish(a, self), _treeish(b, self))
        fields = out.split("\0")
        changes: dict[str, tuple[str, str]] = {}
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            parts = meta.lstrip(":").split(" ")
            if len(parts) == 5 and path:
                mode, blob = parts[1], parts[3]
                changes[path] = ("000000", "") if parts[4].startswith("D") else (mode, blob)
        return changes

    def merge_tree(self, ours: str, theirs: str) -> tuple[str, set[str]]:
        """``git merge-tree --write-tree`` of two commits: the merged tree (conflicted
        files hold conflict markers) and the conflicted paths."""
        status, out = self._status("merge-tree", "--write-tree", "-z", "--no-messages",
                                   self.resolve(ours), self.resolve(theirs))
        if status not in (0, 1):
            raise GitError("git merge-tree failed", hint="ixtool needs git 2.38 or newer")
        parts = out.split("\0")
        conflicts = {item.partition("\t")[2] for item in parts[1:] if "\t" in item}
        return parts[0], conflicts

    def blob_at(self, treeish: str, path: str) -> bytes | None:
        """Content of ``path`` in a commit or tree (None: absent or not a file)."""
        obj = self._object(f"{_treeish(treeish, self)}:{path}")
        return obj[1] if obj is not None and obj[0] == "blob" else None

    def remote_slug(self, remote: str) -> str | None:
        try:
            url = self._run("remote", "get-url", "--", remote).strip()
        except GitError:
            return None
        m = _SLUG.search(url)
        if not m or url.startswith(("/", ".", "file:")):
            return None
        return f"{m.group(1)}/{m.group(2)}"


def _treeish(ref: str, reader: GitReader) -> str:
    """An object id as given (tree or commit), else ``ref`` resolved to its commit."""
    if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", ref):
        return ref
    return reader.resolve(ref)
