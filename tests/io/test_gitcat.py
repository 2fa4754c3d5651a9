"""io.gitcat: the GitPython-free reader the gate uses, on a real temporary repository."""

from __future__ import annotations

import pytest

from inferencex_tools.errors import GitError
from inferencex_tools.io.gitcat import GitReader
from tests.conftest import TempRepo


def test_reads_commits_blobs_and_trees(temp_repo: TempRepo) -> None:
    temp_repo.write("configs/a-master.yaml", "a: 1\n")
    temp_repo.write("configs/sub/x.yaml", "x\n")
    base = temp_repo.commit("base")
    temp_repo.write("configs/b-master.yaml", b"b: \x00\xff\n")
    head = temp_repo.commit("head\n\nbody [skip-sweep]\n")
    r = GitReader(temp_repo.path)
    try:
        assert r.resolve("HEAD") == head and r.resolve("HEAD~1") == base
        assert r.merge_base(base, head) == base
        assert "[skip-sweep]" in r.message(head) and r.message(head).startswith("head")
        assert r.blob(head, "configs/b-master.yaml") == (b"b: \x00\xff\n", 6)
        assert r.blob(base, "configs/b-master.yaml") == (None, 0)
        assert r.blob(head, "configs") == (None, 0)  # a tree is not a file
        assert r.blob(head, "a\nb") == (None, 0)
        assert r.names(head, "configs") == ["configs/a-master.yaml", "configs/b-master.yaml"]
        assert r.paths(head, "configs") == {"configs/a-master.yaml", "configs/b-master.yaml",
                                            "configs/sub/x.yaml"}
        assert r.changed(base, head) == ["configs/b-master.yaml"]
        assert r.remote_slug("origin") is None
    finally:
        r.close()


@pytest.mark.parametrize("ref", ["nope", "-x", "a\nb", ""])
def test_bad_refs(temp_repo: TempRepo, ref: str) -> None:
    temp_repo.write("f", "x")
    temp_repo.commit()
    with pytest.raises(GitError):
        GitReader(temp_repo.path).resolve(ref)


def test_not_a_repository(tmp_path: object) -> None:
    with pytest.raises(GitError):
        GitReader(str(tmp_path))
