"""Real merged PRs as review pairs (a base commit and the PR's head commit).

* From the full-history bundle: the real repository at ``<sha>^1`` (base) and ``<sha>``
  (head, the merge commit), every file as it was.
* From the history bundle (data files only, up to 2026-08): the real tree 843c6254f with
  the data files (changelog, configs, golden curves) of ``<sha>^1`` as the base and of
  ``<sha>`` as the head.  Benchmark files that the PR's added config lines name and that no
  base config names are taken out of the base: the PR added them (as the real PR did).
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests.conftest import GIT_ENV, git

DATA = ("perf-changelog.yaml", "configs", "golden_al_distribution")
_NAMED = re.compile(r"benchmarks/[A-Za-z0-9_./+-]+")


def _overlay(repo: Path, hist: Path, sha: str) -> None:
    """The data files of ``hist`` at ``sha`` in place of ``repo``'s."""
    for name in DATA:
        p = repo / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    raw = subprocess.run(["git", "archive", sha], cwd=hist, env=GIT_ENV, check=True,
                         capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        tar.extractall(repo, filter="data")


def _configs_text(repo: Path) -> str:
    return "".join(p.read_text("utf-8", "replace")
                   for p in sorted((repo / "configs").glob("*.yaml")))


def hist_pair(tree: Path, hist: Path, sha: str, dest: Path) -> tuple[Path, str]:
    """A clone of the real ``tree`` with the PR ``sha`` of ``hist`` replayed: branch main
    is the base, the checkout (branch pr) the head.  Returns (repo, base sha)."""
    subprocess.run(["git", "clone", "-q", "--local", str(tree), str(dest)], env=GIT_ENV,
                   check=True, capture_output=True)
    git(dest, "remote", "remove", "origin")
    _overlay(dest, hist, f"{sha}^")
    base_text = _configs_text(dest)
    _overlay(dest, hist, sha)
    head_text = _configs_text(dest)
    added = {m.group().rstrip(".") for m in _NAMED.finditer(head_text)
             if m.group() not in base_text}
    moved = dest.parent / (dest.name + "-pr-files")
    for rel in sorted(added):
        p = dest / rel
        if p.is_file():
            (moved / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(p, moved / rel)
    _overlay(dest, hist, f"{sha}^")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "--allow-empty", "-m", "base")
    base = git(dest, "rev-parse", "HEAD").strip()
    git(dest, "checkout", "-q", "-b", "pr")
    if moved.is_dir():
        shutil.copytree(moved, dest, dirs_exist_ok=True)
        shutil.rmtree(moved)
    _overlay(dest, hist, sha)
    git(dest, "add", "-A")
    subject = git(hist, "log", "-1", "--format=%s", sha).strip()
    git(dest, "commit", "-q", "--allow-empty", "-m", subject)
    return dest, base


def full_pair(full: Path, sha: str, dest: Path) -> tuple[Path, str]:
    """A clone of the full-history repository checked out at the merge commit ``sha``
    (branch pr); returns (repo, the first parent's sha)."""
    subprocess.run(["git", "clone", "-q", "--local", "--no-checkout", str(full), str(dest)],
                   env=GIT_ENV, check=True, capture_output=True)
    git(dest, "checkout", "-q", "-b", "pr", sha)
    return dest, git(dest, "rev-parse", f"{sha}^1").strip()
