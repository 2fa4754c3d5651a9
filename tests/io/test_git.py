"""GitRepo over real temporary repositories (never mocked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.errors import GitError
from inferencex_tools.io.git import GitRepo
from tests.conftest import TempRepo


def make(repo: TempRepo) -> tuple[str, str]:
    repo.write("a.txt", "one\n")
    repo.write("configs/x-master.yaml", "k: 1\n")
    first = repo.commit("first")
    repo.git("checkout", "-q", "-b", "topic")
    repo.write("a.txt", "two\n")
    repo.commit("topic")
    repo.git("checkout", "-q", "main")
    repo.write("b.txt", "b\n")
    repo.commit("main moves")
    return first, repo.git("rev-parse", "topic").strip()


def test_show_merge_base_resolve_list(temp_repo: TempRepo) -> None:
    first, topic = make(temp_repo)
    g = GitRepo.open(temp_repo.path / "configs")  # found from a subdirectory
    assert g.root.resolve() == temp_repo.path.resolve()
    assert g.show("topic", "a.txt") == b"two\n"
    assert g.show("main", "a.txt") == b"one\n"
    assert g.show("main", "nope.txt") is None
    assert g.show("main", "configs") is None  # a tree, not a blob
    assert g.merge_base("main", "topic") == first
    assert g.resolve("topic") == topic
    assert g.list_files("main", r"configs/[^/]*-master\.yaml") == ["configs/x-master.yaml"]
    assert g.relpath(temp_repo.path / "configs" / "x-master.yaml") == "configs/x-master.yaml"
    assert not g.is_shallow


@pytest.mark.parametrize("ref", ["no-such", "-x", "a\nb", ""])
def test_bad_refs_are_git_errors(temp_repo: TempRepo, ref: str) -> None:
    make(temp_repo)
    g = GitRepo.open(temp_repo.path)
    with pytest.raises(GitError):
        g.resolve(ref)


def test_not_a_repository_and_outside_paths(tmp_path: Path, temp_repo: TempRepo) -> None:
    with pytest.raises(GitError, match="not inside a git repository"):
        GitRepo.open(tmp_path)
    make(temp_repo)
    g = GitRepo.open(temp_repo.path)
    with pytest.raises(GitError, match="outside the repository"):
        g.relpath(tmp_path)


def test_unrelated_histories(temp_repo: TempRepo) -> None:
    make(temp_repo)
    temp_repo.git("checkout", "-q", "--orphan", "other")
    temp_repo.commit("orphan")
    g = GitRepo.open(temp_repo.path)
    with pytest.raises(GitError, match="no common history"):
        g.merge_base("main", "other")


@pytest.mark.parametrize(("url", "slug"), [
    ("git@github.com:acme/bench.git", "acme/bench"),
    ("https://github.com/acme/bench", "acme/bench"),
    ("https://github.com/acme/bench.git/", "acme/bench"),
    ("ssh://git@github.com/acme/my.repo.git", "acme/my.repo"),
    ("/srv/git/bench.git", None),
    ("file:///srv/acme/bench.git", None),
])
def test_remote_slug(temp_repo: TempRepo, url: str, slug: str | None) -> None:
    make(temp_repo)
    temp_repo.git("remote", "add", "origin", url)
    g = GitRepo.open(temp_repo.path)
    assert g.remote_slug() == slug
    assert g.remote_slug("upstream") is None
