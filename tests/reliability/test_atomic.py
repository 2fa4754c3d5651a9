"""Atomic writes under faults: a process killed mid-write leaves the old or the new
file, never a partial one; permissions survive; leftovers never look like inputs."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferencex_tools.errors import InputError
from inferencex_tools.io import files
from inferencex_tools.io.files import WriteError, atomic_write
from tests.conftest import TempRepo
from tests.reliability.helpers import ROOT, changelog, ixtool

OLD = changelog(400)  # ~50 KB, so "half written" is far from either version
NEW = changelog(500)

CHILD = """
import os, signal, sys
from pathlib import Path
from inferencex_tools.io import files
mode, target = sys.argv[1], Path(sys.argv[2])
data = Path(sys.argv[3]).read_bytes()
def hook(tmp):
    assert tmp.parent == target.parent and 0 < tmp.stat().st_size < len(data)
    Path(sys.argv[4]).write_text(tmp.name)
    if mode == "exit":
        os._exit(3)
    if mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise KeyboardInterrupt  # mode == "interrupt": an exception unwinds the write
files._FAULT_HOOK = hook
files.atomic_write(target, data)
"""


def _child(mode: str, target: Path, data: bytes, tmp_path: Path) -> tuple[int, str]:
    src = tmp_path / "new-data"
    src.write_bytes(data)
    note = tmp_path / "tmp-name"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", CHILD, mode, str(target), str(src), str(note)],
                       capture_output=True, text=True, env=env, timeout=60)
    return p.returncode, note.read_text() if note.exists() else ""


@pytest.mark.parametrize("mode,code", [("exit", 3), ("sigkill", -signal.SIGKILL),
                                       ("interrupt", -signal.SIGINT)])
def test_killed_mid_write_leaves_the_old_file(tmp_path: Path, mode: str, code: int) -> None:
    d = tmp_path / "repo"
    d.mkdir()
    target = d / "perf-changelog.yaml"
    target.write_bytes(OLD)
    target.chmod(0o640)
    rc, tmp_name = _child(mode, target, NEW, tmp_path)
    assert rc == code
    assert tmp_name.startswith(".perf-changelog.yaml.") and tmp_name.endswith(".ixtool-tmp")
    assert target.read_bytes() == OLD  # never the partial file
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    left = sorted(p.name for p in d.iterdir())
    if mode == "interrupt":  # unwinding removes the temp file
        assert left == ["perf-changelog.yaml"]
    else:  # a hard kill can only leave the hidden, never-read temp file
        assert set(left) <= {"perf-changelog.yaml", tmp_name}
        assert not any(d.glob("*.yaml")) or list(d.glob("*.yaml")) == [target]
        assert not list(d.glob("*-master.yaml"))


def test_killed_mid_write_of_a_new_file_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out" / "matrix.json"
    target.parent.mkdir()
    rc, _ = _child("sigkill", target, NEW, tmp_path)
    assert rc == -signal.SIGKILL
    assert not target.exists()


WRITER = """
import sys
from pathlib import Path
from inferencex_tools.io.files import atomic_write
target = Path(sys.argv[1])
a, b = Path(sys.argv[2]).read_bytes(), Path(sys.argv[3]).read_bytes()
print("ready", flush=True)
i = 0
while True:
    atomic_write(target, a if i % 2 else b)
    i += 1
"""


def test_random_sigkill_during_repeated_writes(tmp_path: Path) -> None:
    """No hook: SIGKILL at random moments while two 4 MB versions alternate."""
    a = b"A" * (4 << 20)
    b = b"B" * (4 << 20) + b"\n"
    (tmp_path / "a").write_bytes(a)
    (tmp_path / "b").write_bytes(b)
    target = tmp_path / "d" / "big.yaml"
    target.parent.mkdir()
    target.write_bytes(a)
    target.chmod(0o604)
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(6):
        p = subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(tmp_path / "a"),
                              str(tmp_path / "b")], stdout=subprocess.PIPE, text=True, env=env)
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.01, 0.3))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        p.stdout.close()
        data = target.read_bytes()
        assert data in (a, b), f"partial file of {len(data)} bytes"
        assert stat.S_IMODE(target.stat().st_mode) == 0o604
        for leftover in target.parent.glob(".big.yaml.*.ixtool-tmp"):
            leftover.unlink()


@pytest.mark.parametrize("mode", [0o600, 0o644, 0o755, 0o444])
def test_permissions_preserved(tmp_path: Path, mode: int) -> None:
    p = tmp_path / "f.yaml"
    p.write_bytes(OLD)
    p.chmod(mode)
    atomic_write(p, NEW)
    assert p.read_bytes() == NEW
    assert stat.S_IMODE(p.stat().st_mode) == mode
    assert [x.name for x in tmp_path.iterdir()] == ["f.yaml"]


def test_new_file_gets_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "new.yaml", b"x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.yaml").stat().st_mode) == 0o640


def test_symlink_inside_repo_is_kept(temp_repo: TempRepo) -> None:
    real = temp_repo.write("docs/perf-changelog.yaml", OLD)
    link = temp_repo.path / "perf-changelog.yaml"
    link.symlink_to("docs/perf-changelog.yaml")
    atomic_write(link, NEW)
    assert link.is_symlink() and real.read_bytes() == NEW


def test_symlink_out_of_repo_is_not_written(temp_repo: TempRepo, tmp_path: Path) -> None:
    outside = tmp_path / "victim.txt"
    outside.write_bytes(b"keep me\n")
    temp_repo.write("README", "x\n")
    link = temp_repo.path / "perf-changelog.yaml"
    link.symlink_to(outside)
    with pytest.raises(InputError, match="outside the repository"):
        atomic_write(link, NEW)
    assert outside.read_bytes() == b"keep me\n"


def test_write_errors_are_clean(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="cannot write"):
        atomic_write(tmp_path / "missing-dir" / "f.yaml", b"x")
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(WriteError, match="is a directory"):
        atomic_write(tmp_path / "dir.yaml", b"x")
    with pytest.raises(OSError):  # WriteError is an OSError too
        atomic_write(tmp_path / "missing-dir" / "f.yaml", b"x")


def test_exception_in_hook_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "f.yaml"
    p.write_bytes(OLD)

    def boom(tmp: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "_FAULT_HOOK", boom)
    with pytest.raises(WriteError, match="No space left"):
        atomic_write(p, NEW)
    assert p.read_bytes() == OLD
    assert [x.name for x in tmp_path.iterdir()] == ["f.yaml"]


def test_fix_through_the_cli_is_atomic_and_keeps_mode(temp_repo: TempRepo) -> None:
    temp_repo.write("perf-changelog.yaml", changelog(3))
    temp_repo.commit("base")
    p = temp_repo.write("perf-changelog.yaml",
                        changelog(3) + b"\n" + changelog(1, start=9).replace(
                            b"pull/9", b"pull/TBD") + b"\n\n")
    p.chmod(0o664)
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--base", "HEAD", "--fix",
               "--repo", "SemiAnalysisAI/InferenceX", cwd=temp_repo.path)
    r.assert_clean_exit()
    assert stat.S_IMODE(p.stat().st_mode) == 0o664
    assert p.read_bytes().startswith(changelog(3))
    assert not list(temp_repo.path.glob(".*.ixtool-tmp"))
