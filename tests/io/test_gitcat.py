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


def test_resolve_agrees_with_rev_parse(temp_repo: TempRepo) -> None:
    """resolve() reads through cat-file --batch; every ref form gives what
    ``git rev-parse --verify REF^{commit}`` gives, and no rev-parse process runs."""
    temp_repo.write("f", "1")
    first = temp_repo.commit("one")
    temp_repo.write("f", "2")
    temp_repo.commit("two")
    temp_repo.git("tag", "-a", "v1", "-m", "annotated", first)
    temp_repo.git("branch", "feature/x", first)
    tree = temp_repo.git("rev-parse", "HEAD^{tree}").strip()
    refs = ["HEAD", "HEAD~1", "main", "v1", "feature/x", first, first[:10], "HEAD^{commit}"]
    r = GitReader(temp_repo.path)
    runs: list[tuple[str, ...]] = []
    run = r._run
    r._run = lambda *a: runs.append(a) or run(*a)  # type: ignore[method-assign]
    try:
        for ref in refs:
            want = temp_repo.git("rev-parse", "--verify", f"{ref}^{{commit}}").strip()
            assert r.resolve(ref) == want, ref
        assert not runs
        for bad in (tree, "HEAD~5", "no such ref", "v1:f"):
            with pytest.raises(GitError):
                r.resolve(bad)
        assert r.message("v1").startswith("one")
    finally:
        r.close()


def test_queries_about_resolved_objects_run_once(temp_repo: TempRepo,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from inferencex_tools.io import gitcat

    temp_repo.write("configs/a-master.yaml", "a: 1\n")
    base = temp_repo.commit("one")
    temp_repo.write("configs/b-master.yaml", "b: 1\n")
    head = temp_repo.commit("two")
    r = GitReader(temp_repo.path)
    spawned: list[list[str]] = []
    real = subprocess.run

    def counting(args: list[str], **kw: object) -> object:
        spawned.append(args)
        return real(args, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(gitcat.subprocess, "run", counting)
    try:
        for _ in range(3):
            assert r.merge_base("HEAD~1", "HEAD") == base
            assert r.changed(base, head) == ["configs/b-master.yaml"]
            assert r.names(head, "configs") == ["configs/a-master.yaml",
                                                "configs/b-master.yaml"]
            assert set(r.blob_ids(base, "configs")) == {"configs/a-master.yaml"}
        assert [a[1] for a in spawned] == ["merge-base", "diff", "ls-tree", "ls-tree"]
    finally:
        r.close()
