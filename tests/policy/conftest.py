"""Fixtures of the policy tests: writable clones of the real InferenceX tree (the
session-wide ``real_tree`` fixture of tests/conftest.py is the read-only original)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import GIT_ENV


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


def clone(src: Path, dest: Path) -> Path:
    """A writable clone of ``src`` (local, hard-linked objects)."""
    subprocess.run(["git", "clone", "-q", "--local", str(src), str(dest)], env=GIT_ENV,
                   check=True, capture_output=True)
    return dest


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
