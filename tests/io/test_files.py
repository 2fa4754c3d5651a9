"""read_bytes limits and errors; atomic_write keeps readers safe and cleans up."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from inferencex_tools.errors import InputError
from inferencex_tools.io import files
from inferencex_tools.io.files import atomic_write, read_bytes


def test_read_bytes_ok_and_errors(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    f.write_bytes(b"x\n")
    assert read_bytes(f) == b"x\n"
    with pytest.raises(InputError, match="no such file"):
        read_bytes(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="is a directory"):
        read_bytes(tmp_path)
    f.write_bytes(b"x" * 2000)
    with pytest.raises(InputError, match="over the"):
        read_bytes(f, max_bytes=1000)


def test_atomic_write_replaces_and_keeps_mode(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_bytes(b"old\n")
    os.chmod(f, 0o640)
    atomic_write(f, b"new\n")
    assert f.read_bytes() == b"new\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]
    atomic_write(tmp_path / "fresh.yaml", b"1\n")
    assert (tmp_path / "fresh.yaml").read_bytes() == b"1\n"


def test_atomic_write_failure_leaves_old_file_and_no_temp(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "c.yaml"
    f.write_bytes(b"old\n")

    def boom(tmp: Path) -> None:
        assert tmp.exists() and tmp.parent == tmp_path
        raise OSError("disk full")

    monkeypatch.setattr(files, "_FAULT_HOOK", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(f, b"new content\n")
    assert f.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


@pytest.mark.parametrize("layout", ["leaf link to a file", "leaf link dangling",
                                    "directory link", "link inside, then out"])
def test_atomic_write_refuses_links_out_of_the_repository(tmp_path: Path, layout: str) -> None:
    """Issue 27 item 5: a PR commits an output path as a link out of the checkout; the
    trusted step that writes it must not write outside (nor follow a linked directory)."""
    from tests.conftest import TempRepo

    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("precious\n")
    repo = TempRepo(tmp_path / "repo")
    root = repo.path
    if layout == "leaf link to a file":
        os.symlink(victim, root / "ixtool.sarif")
        target = root / "ixtool.sarif"
    elif layout == "leaf link dangling":
        os.symlink(outside / "new.txt", root / "ixtool.sarif")
        target = root / "ixtool.sarif"
    elif layout == "directory link":
        os.symlink(outside, root / "out")
        target = root / "out" / "victim.txt"
    else:
        (root / "sub").mkdir()
        os.symlink("../up", root / "sub" / "x")
        os.symlink(outside, root / "up")
        target = root / "sub" / "x" / "victim.txt"
    repo.commit("PR")
    with pytest.raises(files.WriteError, match="outside the repository"):
        atomic_write(target, b"overwritten\n")
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


def test_atomic_write_follows_links_that_stay_inside(tmp_path: Path) -> None:
    from tests.conftest import TempRepo

    repo = TempRepo(tmp_path / "repo")
    (repo.path / "real").mkdir()
    (repo.path / "real" / "f.txt").write_text("old\n")
    os.symlink("real", repo.path / "alias")
    os.symlink("real/f.txt", repo.path / "f-link")
    atomic_write(repo.path / "alias" / "f.txt", b"a\n")
    atomic_write(repo.path / "f-link", b"b\n")
    assert (repo.path / "real" / "f.txt").read_text() == "b\n"
    assert (repo.path / "f-link").is_symlink()


def test_gate_matrix_out_through_a_committed_link_is_a_clear_error(tmp_path: Path,
                                                                   corpus: Path) -> None:
    """``ci gate --matrix-out`` at a path the PR made a link out of the checkout: exit 2
    with a message naming the link; nothing outside is written."""
    import subprocess
    import sys

    from tests.conftest import TempRepo, copy_corpus

    victim = tmp_path / "victim.json"
    victim.write_text("precious\n")
    repo = TempRepo(tmp_path / "repo")
    copy_corpus(corpus, repo.path)
    base = repo.commit("base")
    with (repo.path / "perf-changelog.yaml").open("a") as fh:
        fh.write("\n- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n"
                 "    - \"Re-run.\"\n  pr-link: XXX\n")
    os.symlink(victim, repo.path / "matrix.json")
    repo.commit("PR")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    args = ["ci", "gate", "--base", base, "--pr", "7", "--label", "sweep-enabled",
            "--no-policy", "--priority", "none"]
    proc = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *args,
                           "--matrix-out", "matrix.json"], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert victim.read_text() == "precious\n"
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "outside the repository" in proc.stderr and "Traceback" not in proc.stderr
    ok = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *args,
                         "--matrix-out", str(tmp_path / "m.json")], cwd=repo.path, env=env,
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and (tmp_path / "m.json").stat().st_size > 100, ok.stdout
