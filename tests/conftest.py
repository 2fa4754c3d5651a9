"""Shared fixtures: the real corpus under ../shared, temporary git repositories."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No wall-clock limit in a test (the machine is shared; its load is not the code's): no
# per-example deadline, no "data generation too slow" health check, for every property
# test.  A bound on work is asserted as work (:class:`CPU`, counts).
settings.register_profile("ixtool", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ixtool")

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "inferencex"
BUNDLE = SHARED / "corpus" / "inferencex-history.bundle"
FULL_BUNDLE = SHARED / "corpus" / "inferencex-full-history-9aeaa75d8.bundle"
FULL_BRANCH = "main-upto-0715"
ORACLE = SHARED / "oracle"

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "ixtool tests",
    "GIT_AUTHOR_EMAIL": "tests@ixtool.invalid",
    "GIT_COMMITTER_NAME": "ixtool tests",
    "GIT_COMMITTER_EMAIL": "tests@ixtool.invalid",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(autouse=True)
def _no_outer_pull_request_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite itself runs in CI under a pull_request event: every command ixtool runs
    in-process would then be in a PR context (settings from the base, docs/security.md).
    Tests that want an event set these themselves."""
    monkeypatch.delenv("GITHUB_EVENT_NAME", raising=False)
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def history_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of the real history bundle (read-only use; session-wide)."""
    if not BUNDLE.is_file():
        pytest.skip(f"history bundle not found at {BUNDLE}")
    dest = tmp_path_factory.mktemp("history") / "inferencex"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(dest)], env=GIT_ENV, check=True)
    return dest


@pytest.fixture(scope="session")
def full_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of the repository's whole history (every file; branch main-upto-0715;
    read-only use, session-wide)."""
    if not FULL_BUNDLE.is_file():
        pytest.skip(f"full history bundle not found at {FULL_BUNDLE}")
    dest = tmp_path_factory.mktemp("full-history") / "inferencex"
    subprocess.run(["git", "clone", "-q", "-b", FULL_BRANCH, str(FULL_BUNDLE), str(dest)],
                   env=GIT_ENV, check=True)
    return dest


class CPU:
    """CPU seconds (user + system) of this process and of the child processes it waited
    for, spent inside the ``with`` block: a bound on work that the machine's load does not
    move, where a test would otherwise time itself (``with CPU() as cpu: …; assert
    cpu.seconds < 5``)."""

    seconds: float = 0.0

    @staticmethod
    def now() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def __enter__(self) -> CPU:
        self._start = self.now()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = self.now() - self._start


class TempRepo:
    """A real temporary git repository with helpers to write and commit files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", "main")

    def write(self, rel: str, data: bytes | str) -> Path:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        return p

    def commit(self, message: str = "commit") -> str:
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--allow-empty", "-m", message)
        return git(self.path, "rev-parse", "HEAD").strip()

    def git(self, *args: str) -> str:
        return git(self.path, *args)


@pytest.fixture
def temp_repo(tmp_path: Path) -> Iterator[TempRepo]:
    yield TempRepo(tmp_path / "repo")


TREE_SNAPSHOT = SHARED / "corpus" / "inferencex-tree-843c6254f.tar.xz"


CORPUS_CONFIGS = ("nvidia-master.yaml", "amd-master.yaml", "runners.yaml")


def copy_corpus(corpus: Path, dest: Path, *, configs: tuple[str, ...] = CORPUS_CONFIGS,
                changelog: bool = True) -> None:
    """The real corpus's config files (into ``dest/configs``) and, with ``changelog``,
    its perf-changelog.yaml into ``dest``."""
    (dest / "configs").mkdir(parents=True, exist_ok=True)
    for name in configs:
        shutil.copyfile(corpus / "configs" / name, dest / "configs" / name)
    if changelog:
        shutil.copyfile(corpus / "perf-changelog.yaml", dest / "perf-changelog.yaml")


def extract_real_tree(dest: Path) -> Path:
    """The real InferenceX tree snapshot extracted under ``dest`` and committed as the
    first commit of a new git repository (branch main); returns the repository root."""
    import tarfile

    if not TREE_SNAPSHOT.is_file():
        pytest.skip(f"real tree snapshot not found at {TREE_SNAPSHOT}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(TREE_SNAPSHOT) as tar:
        tar.extractall(dest, filter="data")
    root = dest / "inferencex"
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "real tree 843c6254f")
    return root


@pytest.fixture(scope="session")
def real_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real tree as a git repository (session-wide: read it, never write it; tests that
    change it work on ``clone_real_tree(real_tree, their tmp_path / …)``)."""
    return extract_real_tree(tmp_path_factory.mktemp("real-tree"))


def clone_real_tree(real_tree: Path, dest: Path) -> Path:
    """A writable copy of the session's ``real_tree`` at ``dest``: a local clone (objects
    hard-linked, branch main checked out, no remote: like a fresh extraction), several times
    cheaper than extracting the snapshot again."""
    subprocess.run(["git", "clone", "-q", "--local", str(real_tree), str(dest)], env=GIT_ENV,
                   check=True, capture_output=True)
    git(dest, "remote", "remove", "origin")
    return dest
