"""io/artifacts.py: artifact archives and directories are read as bounded streams, never
extracted, never trusted (zip bombs, unsafe names, links, nested tarballs)."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from inferencex_tools.errors import InputError
from inferencex_tools.io.artifacts import (
    DirArtifact,
    Limits,
    Truncated,
    ZipArtifact,
    run_directory,
    safe_name,
)


def make_zip(path: Path, members: list[tuple[str, bytes]], *, link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/etc/passwd")
    return path


@pytest.mark.parametrize(("name", "ok"), [
    ("server.log", "server.log"), ("results/./server.log", "results/server.log"),
    ("../x", None), ("/etc/passwd", None), ("a\\b", None), ("a/../../b", None),
    ("bad\nname", None), ("", None), ("x" * 2000, None),
])
def test_safe_name(name: str, ok: str | None) -> None:
    assert safe_name(name) == ok


def test_zip_bomb_reads_at_most_the_limit(tmp_path: Path) -> None:
    # 64 MiB of zeros compress to ~64 KiB; only 1 MiB may be decompressed
    z = make_zip(tmp_path / "a.zip", [("server.log", b"\0" * (64 << 20))])
    a = ZipArtifact("server_logs_x", z, Limits(max_file=1 << 20))
    (m,) = a.members()
    assert m.size == 64 << 20  # declared; not believed
    got = 0
    with pytest.raises(Truncated):
        for chunk in a.chunks(m):
            got += len(chunk)
    assert got == 1 << 20


def test_artifact_budget_spans_files(tmp_path: Path) -> None:
    z = make_zip(tmp_path / "a.zip", [(f"{i}.log", b"y" * 1000) for i in range(5)])
    a = ZipArtifact("x", z, Limits(max_artifact=2500))
    ms = a.members()
    assert b"".join(a.chunks(ms[0])) and b"".join(a.chunks(ms[1]))
    with pytest.raises(Truncated):
        b"".join(a.chunks(ms[2]))


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_unsafe_names_links_and_duplicates_are_skipped(tmp_path: Path) -> None:
    z = make_zip(tmp_path / "a.zip", [("../escape.log", b"1"), ("/abs.log", b"2"),
                                      ("ok.log", b"3"), ("ok.log", b"4")], link="l.log")
    a = ZipArtifact("x", z, Limits())
    assert [m.path for m in a.members()] == ["ok.log"]
    assert len(a.refused) == 4
    assert b"".join(a.chunks(a.members()[0])) == b"3"


def test_too_many_entries_and_not_a_zip(tmp_path: Path) -> None:
    z = make_zip(tmp_path / "a.zip", [(f"{i}", b"") for i in range(30)])
    a = ZipArtifact("x", z, Limits(max_members=10))
    assert a.members() == [] and "over the 10 limit" in a.refused[0].why
    bad = tmp_path / "b.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    b = ZipArtifact("y", bad, Limits())
    assert b.members() == [] and "not a readable zip" in b.refused[0].why


def test_nested_tarball_is_streamed(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("node0/server.log", b"line\n"), ("../evil.log", b"x")):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        ti = tarfile.TarInfo("node0/link.log")
        ti.type = tarfile.SYMTYPE
        ti.linkname = "/etc/passwd"
        tf.addfile(ti)
    z = make_zip(tmp_path / "a.zip", [("multinode_server_logs.tar.gz", buf.getvalue())])
    a = ZipArtifact("multinode_server_logs_x", z, Limits())
    (outer,) = a.members()
    inner = a.tar_members(outer)
    assert [m.path for m in inner] == ["multinode_server_logs.tar.gz!/node0/server.log"]
    assert len(a.refused) == 2
    assert b"".join(a.chunks(inner[0])) == b"line\n"


def test_directory_layout(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        run_directory(tmp_path / "nope", Limits())
    (tmp_path / "flat.log").write_text("x")
    with pytest.raises(InputError, match="no artifact subdirectories"):
        run_directory(tmp_path, Limits())
    art = tmp_path / "server_logs_x"
    (art / "sub").mkdir(parents=True)
    (art / "sub" / "server.log").write_text("hello\n")
    os.mkfifo(art / "fifo.log")
    (art / "up").symlink_to(tmp_path)
    (arts,) = run_directory(tmp_path, Limits())
    assert isinstance(arts, DirArtifact)
    assert [m.path for m in arts.members()] == ["sub/server.log"]
    assert {r.path for r in arts.refused} == {"fifo.log", "up"}
    assert b"".join(arts.chunks(arts.members()[0])) == b"hello\n"
