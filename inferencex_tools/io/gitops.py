"""Write-side git operations for ``merge-with-reuse`` (no shell).

Two kinds of git processes, on purpose:

* **Reads and local plumbing** (status, merge-base, merge-tree, log, the private
  worktree, ``merge``, ``add``) run like every ixtool read: global and system
  configuration neutralised (:mod:`inferencex_tools.io.git`), so colour, textconv,
  filters, merge drivers or ``autocrlf`` in the user's configuration cannot
  change what ixtool sees or the content of the commit it builds.
* **What talks to the remote or writes a commit as the user** — ``fetch``,
  ``commit``, ``push`` and their preflight probes — run with the user's own
  environment and configuration: identity (``user.name``/``user.email``, also
  from ``~/.gitconfig``), credential helpers, ``url.*.insteadOf``, proxies,
  ``core.sshCommand``, signing.  Only what would make them hang or guess is
  fixed: no terminal prompts, no guessed identity (``user.useConfigOnly``).

All work happens in a private *worktree* (``<git-dir>/ixtool/merge-pr-N``) with a
detached HEAD, so the user's checkout, branches and index are never touched;
fetched refs go to ``refs/ixtool/pr-N/…`` only, and so does ixtool's own state:
``refs/ixtool/pr-N/prepared`` is the preparation commit ixtool made (the SHA it
recognises as its own, never a message trailer).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from inferencex_tools.errors import GitError
from inferencex_tools.io.git import GitRepo, run_git, run_git_bytes

# Variables that would point a user-config git process at another repository.
_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                  "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
                  "GIT_PREFIX", "GIT_CEILING_DIRECTORIES")
NETWORK_TIMEOUT = 900.0  # seconds for one fetch/push (a hung remote must not hang ixtool)


def _run(cwd: Path, *args: str, check: bool = True) -> tuple[int, str, str]:
    """A git command in ``cwd`` with ixtool's isolated configuration."""
    return run_git(cwd, *args, check=check)


def _last_error(text: str) -> str:
    """The most telling line of git's stderr (``fatal:``/``error:`` first)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for prefix in ("fatal:", "error:", "remote: error:", "!"):
        hits = [ln for ln in lines if ln.startswith(prefix)]
        if hits:
            return hits[-1][:400]
    return (lines[-1] if lines else "no detail")[:400]


def access_hint(detail: str, remote: str) -> str:
    """A hint naming the setting behind a failed fetch or push (git's message)."""
    low = detail.lower()
    if "could not read username" in low or "terminal prompts disabled" in low \
            or "authentication failed" in low or "401" in low:
        return (f"git has no credentials for {remote}: configure credential.helper "
                "(e.g. `gh auth setup-git`, or a helper in ~/.gitconfig) or use an SSH "
                "remote; ixtool never prompts for a password")
    if "permission denied (publickey" in low or "host key verification" in low:
        return ("ssh could not authenticate: check your key (ssh-agent, core.sshCommand, "
                "~/.ssh/config)")
    if "403" in low or "denied" in low or "not allowed" in low:
        return f"your credentials for {remote} cannot push to this repository"
    if "ssl" in low or "certificate" in low:
        return ("git does not trust the remote's certificate: check http.sslCAInfo "
                "(or GIT_SSL_CAINFO) in your git configuration")
    if "could not resolve" in low or "proxy" in low or "connect" in low:
        return "check the network, http.proxy and url.<base>.insteadOf settings"
    return f"make `git fetch {remote}` and `git push {remote}` work from this clone, then re-run"


@dataclass
class MergeAttempt:
    clean: bool
    conflicted: list[str]


@dataclass
class MergeTree:
    """``git merge-tree --write-tree`` of two commits: conflicts and their stages."""

    clean: bool
    conflicts: dict[str, set[int]] = field(default_factory=dict)  # path → stages present


@dataclass
class Probe:
    ok: bool
    detail: str  # the identity, or why it failed
    missing: list[str] = field(default_factory=list)  # settings to set


class Workspace:
    """The user's repository plus ixtool's private worktree for one PR.

    ``user_env`` is the environment of the user's own git processes (fetch,
    commit, push): by default this process's environment."""

    def __init__(self, repo: GitRepo, remote: str = "origin",
                 user_env: Mapping[str, str] | None = None) -> None:
        self.repo = repo
        self.remote = remote
        base = dict(os.environ if user_env is None else user_env)
        for var in _LOCATION_VARS:
            base.pop(var, None)
        # never wait for a password on a terminal; C messages (parsed for hints)
        self._user_env = base | {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C"}
        self._wt: Path | None = None

    # -- git as the user ------------------------------------------------------------
    def _as_user(self, cwd: Path, *args: str, timeout: float = NETWORK_TIMEOUT
                 ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(["git", *args], cwd=cwd, env=self._user_env,
                                  capture_output=True, text=True, errors="replace",
                                  stdin=subprocess.DEVNULL, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} did not finish within {timeout:.0f}s",
                           hint="check the network connection to the remote") from None
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror}") from None

    @property
    def _root(self) -> Path:
        return Path(self.repo.root)

    # -- read-only checks ------------------------------------------------------------
    def dirty(self) -> list[str]:
        """``git status --porcelain`` lines of the user's checkout."""
        _, out, _ = _run(self.repo.root, "status", "--porcelain")
        return [ln for ln in out.splitlines() if ln.strip()]

    def identity(self) -> Probe:
        """The author and committer identity git would use for ixtool's commit, from
        the user's configuration or environment — never guessed from the host name."""
        missing: list[str] = []
        for key, env_vars in (("user.name", ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")),
                              ("user.email", ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"))):
            if all(self._user_env.get(v) for v in env_vars):
                continue
            got = self._as_user(self._root, "config", "--get", key, timeout=60)
            if got.returncode != 0 or not got.stdout.strip():
                missing.append(key)
        idents: list[str] = []
        for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
            got = self._as_user(self._root, "-c", "user.useConfigOnly=true", "var", var,
                                timeout=60)
            if got.returncode != 0:
                return Probe(False, _last_error(got.stderr), missing or ["user.email"])
            idents.append(got.stdout.strip().rsplit(" ", 2)[0])
        if missing:
            return Probe(False, "not configured: " + ", ".join(missing), missing)
        return Probe(True, idents[1])

    def push_probe(self, sha: str, branch: str) -> Probe:
        """``git push --dry-run`` of the branch's own head to it: authenticates with
        the remote for pushing (credential helper, SSH key) without changing it."""
        got = self._as_user(self._root, "push", "--dry-run", "--porcelain", "--no-verify",
                            "--no-follow-tags", "--recurse-submodules=no",
                            f"--force-with-lease=refs/heads/{branch}:{sha}",
                            self.remote, f"{sha}:refs/heads/{branch}")
        if got.returncode == 0:
            return Probe(True, "")
        return Probe(False, _last_error(got.stderr or got.stdout))

    # -- fetch -----------------------------------------------------------------------
    def fetch(self, pr: int, base: str) -> tuple[str, str]:
        """Fetch ``pull/N/head`` and ``base`` into ``refs/ixtool/``; their SHAs."""
        head_ref, base_ref = self.head_ref(pr), self.base_ref(pr)
        got = self._as_user(self._root, "fetch", "--quiet", "--no-tags",
                            "--no-write-fetch-head", "--no-prune", "--recurse-submodules=no",
                            self.remote, f"+refs/pull/{pr}/head:{head_ref}",
                            f"+refs/heads/{base}:{base_ref}")
        if got.returncode != 0:
            detail = _last_error(got.stderr)
            raise GitError(f"git fetch {self.remote} failed: {detail}",
                           hint=access_hint(detail, self.remote))
        return self.repo.resolve(head_ref), self.repo.resolve(base_ref)

    @staticmethod
    def head_ref(pr: int) -> str:
        return f"refs/ixtool/pr-{pr}/head"

    @staticmethod
    def base_ref(pr: int) -> str:
        return f"refs/ixtool/pr-{pr}/base"

    @staticmethod
    def prepared_ref(pr: int) -> str:
        return f"refs/ixtool/pr-{pr}/prepared"

    def is_ancestor(self, a: str, b: str) -> bool:
        status, _, _ = _run(self.repo.root, "merge-base", "--is-ancestor", a, b, check=False)
        return status == 0

    def parents(self, sha: str) -> list[str]:
        _, out, _ = _run(self.repo.root, "rev-list", "--parents", "-n", "1", sha)
        return out.split()[1:]

    def commits_between(self, base: str, head: str, *exclude: str) -> list[tuple[str, str]]:
        """(sha, message) of commits in ``head`` but not in ``base`` (nor in any of
        ``exclude``), oldest first — what GitHub lists as a PR's commits, without its
        250-commit cap."""
        _, out, _ = _run(self.repo.root, "log", "--reverse", "--format=%H%x00%B%x01",
                         head, f"^{base}", *(f"^{x}" for x in exclude), "--")
        items = []
        for rec in out.split("\x01"):
            rec = rec.strip("\n")
            if rec:
                sha, _, msg = rec.partition("\x00")
                items.append((sha, msg))
        return items

    def merge_tree(self, ours: str, theirs: str) -> MergeTree:
        """Merge ``theirs`` into ``ours`` in memory (``git merge-tree --write-tree``):
        every conflicted path with the index stages it has.  Nothing is checked out."""
        status, out, err = _run(self.repo.root, "merge-tree", "--write-tree", "-z",
                                "--no-messages", ours, theirs, check=False)
        if status not in (0, 1):
            raise GitError(f"git merge-tree failed: {_last_error(err)}",
                           hint="ixtool needs git 2.38 or newer")
        parts = out.split("\0")
        result = MergeTree(clean=status == 0)  # parts[0] is the merged tree's id
        for item in parts[1:]:
            if not item:
                break
            meta, _, path = item.partition("\t")
            fields = meta.split(" ")
            if len(fields) == 3 and fields[2].isdigit():
                result.conflicts.setdefault(path, set()).add(int(fields[2]))
        return result

    # -- ixtool's own state ------------------------------------------------------------
    def recorded_prepared(self, pr: int) -> str | None:
        status, out, _ = _run(self.repo.root, "rev-parse", "--verify", "--quiet",
                              f"{self.prepared_ref(pr)}^{{commit}}", check=False)
        return out.strip() if status == 0 and out.strip() else None

    def record_prepared(self, pr: int, sha: str) -> None:
        _run(self.repo.root, "update-ref", self.prepared_ref(pr), sha)

    # -- the private worktree ------------------------------------------------------------
    def worktree_path(self, pr: int) -> Path:
        return self.repo.git_dir / "ixtool" / f"merge-pr-{pr}"

    def prepare_worktree(self, pr: int, sha: str) -> Path:
        """A fresh detached worktree at ``sha`` (a leftover one is discarded)."""
        path = self.worktree_path(pr)
        self.discard_worktree(pr)
        path.parent.mkdir(parents=True, exist_ok=True)
        _run(self.repo.root, "worktree", "add", "--quiet", "--detach", str(path), sha)
        self._wt = path
        return path

    def discard_worktree(self, pr: int) -> None:
        path = self.worktree_path(pr)
        if path.exists():
            _run(self.repo.root, "worktree", "remove", "--force", str(path), check=False)
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
        _run(self.repo.root, "worktree", "prune", check=False)
        self._wt = None

    @contextlib.contextmanager
    def tree_at(self, sha: str) -> Iterator[Path]:
        """A detached scratch worktree at ``sha`` (under ``.git/ixtool/``), removed after:
        the files a check at that commit reads (``ixtool al audit`` of a reused run).
        A worktree, not ``git archive``: the tree's own ``export-ignore`` attributes
        cannot hide a file from the check."""
        path = self.repo.git_dir / "ixtool" / f"tree-{sha[:16]}"
        if path.exists():
            _run(self.repo.root, "worktree", "remove", "--force", str(path), check=False)
            shutil.rmtree(path, ignore_errors=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        _run(self.repo.root, "worktree", "add", "--quiet", "--detach", str(path), sha)
        try:
            yield path
        finally:
            _run(self.repo.root, "worktree", "remove", "--force", str(path), check=False)
            shutil.rmtree(path, ignore_errors=True)
            _run(self.repo.root, "worktree", "prune", check=False)

    @property
    def wt(self) -> Path:
        if self._wt is None:
            raise GitError("internal: no worktree prepared")
        return self._wt

    def merge(self, ref: str) -> MergeAttempt:
        """``git merge --no-ff --no-commit ref`` in the worktree (isolated config)."""
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
        code, data, _ = run_git_bytes(self.wt, "show", f":{stage}:{path}")
        return data if code == 0 else None

    def read(self, path: str) -> bytes:
        from inferencex_tools.io.files import read_bytes

        return read_bytes(self.wt / path)

    def write(self, path: str, data: bytes) -> None:
        from inferencex_tools.io.files import atomic_write

        atomic_write(self.wt / path, data)
        _run(self.wt, "add", "--", path)

    def commit(self, message: str) -> str:
        """Commit the worktree's index as the user (their identity, signing, hooks
        except pre-commit/commit-msg); the identity is never guessed."""
        wt_dir = self.wt
        got = self._as_user(wt_dir, "-c", "user.useConfigOnly=true", "commit", "--quiet",
                            "--allow-empty", "--no-verify", "--cleanup=verbatim",
                            "-m", message, timeout=300)
        if got.returncode != 0:
            raise GitError(f"git commit failed: {_last_error(got.stderr)}",
                           hint="set user.name and user.email in your git configuration "
                           "(git config --global user.email you@example.com)")
        _, out, _ = _run(self.wt, "rev-parse", "HEAD")
        return out.strip()

    def push(self, sha: str, branch: str, expected_old: str) -> tuple[bool, str]:
        """Push ``sha`` to ``branch`` as the user, only if the remote branch is still
        ``expected_old``."""
        got = self._as_user(self._root, "push", "--porcelain", "--quiet", "--no-follow-tags",
                            "--recurse-submodules=no",
                            f"--force-with-lease=refs/heads/{branch}:{expected_old}",
                            self.remote, f"{sha}:refs/heads/{branch}")
        return got.returncode == 0, _last_error(got.stderr or got.stdout) \
            if got.returncode else ""
