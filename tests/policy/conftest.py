"""Fixtures: the real InferenceX tree (../shared/corpus) as a temporary git repository."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, SHARED

TREE = SHARED / "corpus" / "inferencex-tree-843c6254f.tar.xz"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


def extract_tree(dest: Path) -> Path:
    """The snapshot under ``dest`` (its ``inferencex/`` directory is the repository)."""
    with tarfile.open(TREE) as tar:
        tar.extractall(dest, filter="data")
    return dest / "inferencex"


@pytest.fixture(scope="session")
def real_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real tree, committed once (read-only use: clone it with :func:`clone`)."""
    if not TREE.is_file():
        pytest.skip(f"real tree snapshot not found at {TREE}")
    repo = extract_tree(tmp_path_factory.mktemp("real"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "InferenceX at 843c6254f")
    return repo


def clone(src: Path, dest: Path) -> Path:
    """A writable clone of ``src`` (local, hard-linked objects)."""
    subprocess.run(["git", "clone", "-q", "--local", str(src), str(dest)], env=GIT_ENV,
                   check=True, capture_output=True)
    return dest


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return dest
