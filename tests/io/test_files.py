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
