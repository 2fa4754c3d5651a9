"""Workflow-run artifacts as ixtool reads them: a directory laid out as
``gh run download RUN_ID -D DIR`` writes it (one subdirectory per artifact), or the
artifact zip archives GitHub serves.  Never trusted:

* nothing is extracted to disk; a member is read as a bounded stream (the bytes really
  decompressed are counted, the sizes an archive declares are not believed), so a zip
  bomb costs at most ``max_file`` bytes of reading;
* an archive with more than ``max_members`` entries, a member whose name is absolute,
  climbs with ``..``, holds a backslash or a control character, or is a link, is
  skipped and reported;
* in a directory, symbolic links are not followed and special files are not opened;
* a ``.tar.gz`` member (the multi-node server-log tarball) is read the same way,
  one level deep.

What was refused is returned as :class:`Refusal` records; the caller reports them.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

CHUNK = 1 << 16
MiB = 1 << 20
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\\]")


@dataclass(frozen=True)
class Limits:
    """What one audit reads at most (see docs/al-audit.md)."""

    max_file: int = 1024 * MiB  # bytes decompressed from one file (a server log)
    max_json: int = 64 * MiB  # a metrics export is parsed whole: at most this
    max_artifact: int = 4096 * MiB  # bytes read from one artifact, all files together
    max_members: int = 20_000  # entries of one archive or artifact directory
    max_download: int = 2048 * MiB  # one artifact archive downloaded


@dataclass(frozen=True)
class Refusal:
    artifact: str
    path: str  # inside the artifact ("" for the artifact itself)
    why: str


@dataclass(frozen=True)
class Member:
    path: str  # posix path inside the artifact (nested: "logs.tar.gz!/node0/server.log")
    size: int | None  # as declared (informative only)


@dataclass
class Budget:
    """Bytes left to read in one artifact."""

    left: int


class Truncated(Exception):
    """A stream hit its byte limit (the chunks before it were delivered)."""


# What reading an untrusted artifact may raise (a limit, a corrupt archive, I/O).
READ_ERRORS: tuple[type[BaseException], ...] = (
    Truncated, OSError, EOFError, zipfile.BadZipFile, zlib.error, tarfile.TarError,
    RuntimeError, ValueError)


def safe_name(name: str) -> str | None:
    """``name`` as a relative posix path, or None when it is not a plain one."""
    if not name or len(name) > 1024 or _UNSAFE.search(name) or name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def _bounded(f: IO[bytes], limit: int, budget: Budget) -> Iterator[bytes]:
    """Chunks of ``f`` up to ``limit`` bytes (and the artifact budget); Truncated after."""
    read = 0
    while True:
        want = min(CHUNK, limit - read + 1, budget.left + 1)
        chunk = f.read(want)
        if not chunk:
            return
        read += len(chunk)
        budget.left -= len(chunk)
        if read > limit or budget.left < 0:
            keep = len(chunk) - max(read - limit, -budget.left, 0)
            if keep > 0:
                yield chunk[:keep]
            raise Truncated(f"stopped after {min(limit, read):,} bytes (limit "
                            f"{limit:,} per file, {budget.left + len(chunk):,} left for "
                            "the artifact)")
        yield chunk


class Artifact:
    """One artifact: its members and bounded streams of their bytes."""

    def __init__(self, name: str, limits: Limits) -> None:
        self.name = name
        self.limits = limits
        self.refused: list[Refusal] = []
        self.budget = Budget(limits.max_artifact)

    def members(self) -> list[Member]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _open(self, path: str) -> IO[bytes]:  # pragma: no cover - abstract
        raise NotImplementedError

    def chunks(self, member: Member, limit: int | None = None) -> Iterator[bytes]:
        """The bytes of ``member`` (at most ``limit``, default ``max_file``)."""
        cap = self.limits.max_file if limit is None else limit
        outer, bang, inner = member.path.partition("!/")
        if bang:
            yield from self._nested(outer, inner, cap)
            return
        with self._open(outer) as f:
            yield from _bounded(f, cap, self.budget)

    def read(self, member: Member, limit: int) -> bytes:
        """``member`` whole, or Truncated when it is longer than ``limit``."""
        return b"".join(self.chunks(member, limit))

    # -- a tarball inside the artifact (multi-node server logs) --------------------
    @contextlib.contextmanager
    def _tar(self, path: str) -> Iterator[tarfile.TarFile]:
        """``path`` as a streamed tarball (never seeks; reads at most ``max_file``)."""
        with self._open(path) as raw, tarfile.open(fileobj=cast(IO[bytes], _Counted(
                raw, self.limits.max_file, self.budget)), mode="r|*") as tf:
            yield tf

    def tar_members(self, member: Member) -> list[Member]:
        out: list[Member] = []
        try:
            with self._tar(member.path) as tf:
                for ti in tf:
                    if len(out) >= self.limits.max_members:
                        self.refused.append(Refusal(
                            self.name, member.path,
                            f"more than {self.limits.max_members:,} entries: the rest "
                            "was not read"))
                        break
                    name = safe_name(ti.name)
                    if ti.isfile() and name is not None:
                        out.append(Member(f"{member.path}!/{name}", ti.size))
                    elif not ti.isdir():
                        self.refused.append(Refusal(
                            self.name, f"{member.path}!/{ti.name[:200]!r}",
                            "not a plain file with a plain relative name: skipped"))
        except (tarfile.TarError, OSError, EOFError, Truncated, ValueError) as exc:
            self.refused.append(Refusal(self.name, member.path,
                                        f"not a readable tarball: {_short(exc)}"))
        return out

    def _nested(self, outer: str, inner: str, cap: int) -> Iterator[bytes]:
        with self._tar(outer) as tf:
            for ti in tf:
                if ti.isfile() and safe_name(ti.name) == inner:
                    f = tf.extractfile(ti)
                    if f is not None:
                        yield from _bounded(f, cap, Budget(cap))
                    return


class _Counted:
    """A read-only file object that stops after ``limit`` bytes (for tarfile)."""

    def __init__(self, f: IO[bytes], limit: int, budget: Budget) -> None:
        self._f, self._left, self._budget = f, limit, budget

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0 or self._budget.left <= 0:
            raise Truncated("the tarball is larger than the per-file limit")
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._f.read(min(n, self._budget.left))
        self._left -= len(data)
        self._budget.left -= len(data)
        return data


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


# ----------------------------------------------------------------------------- directory

class DirArtifact(Artifact):
    """``DIR/<artifact name>/…`` as ``gh run download`` extracts it."""

    def __init__(self, path: Path, limits: Limits) -> None:
        super().__init__(path.name, limits)
        self.path = path
        self._members: list[Member] | None = None

    def members(self) -> list[Member]:
        if self._members is None:
            self._members = self._walk()
        return self._members

    def _walk(self) -> list[Member]:
        out: list[Member] = []
        for top, dirs, files in os.walk(self.path, followlinks=False):
            rel_top = Path(top).relative_to(self.path).as_posix()
            for d in [d for d in dirs if (Path(top) / d).is_symlink()]:
                dirs.remove(d)
                self.refused.append(Refusal(self.name, d if rel_top == "." else
                                            f"{rel_top}/{d}", "a link: not followed"))
            dirs.sort()
            for fn in sorted(files):
                rel = fn if rel_top == "." else f"{rel_top}/{fn}"
                if len(out) >= self.limits.max_members:
                    self.refused.append(Refusal(self.name, "", f"more than "
                                                f"{self.limits.max_members:,} files: the "
                                                "rest was not read"))
                    return out
                try:
                    st = os.lstat(Path(top) / fn)
                except OSError as exc:
                    self.refused.append(Refusal(self.name, rel, _short(exc)))
                    continue
                name = safe_name(rel)
                if not stat.S_ISREG(st.st_mode) or name is None:
                    self.refused.append(Refusal(self.name, rel[:300],
                                                "a link or special file: not followed"))
                    continue
                out.append(Member(name, st.st_size))
        return out

    def _open(self, path: str) -> IO[bytes]:
        p = self.path / path
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(p, flags)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{path}: not a regular file")
        return os.fdopen(fd, "rb")


def run_directory(path: Path, limits: Limits) -> list[DirArtifact]:
    """The artifacts of a ``gh run download -D DIR`` directory (its subdirectories)."""
    from inferencex_tools.errors import InputError

    if not path.is_dir():
        raise InputError(f"{path}: not a directory",
                         hint="give the directory `gh run download RUN_ID -D DIR` wrote")
    subdirs = sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink())
    if not subdirs:
        raise InputError(f"{path}: no artifact subdirectories",
                         hint="`gh run download RUN_ID -D DIR` writes one subdirectory per "
                         "artifact; download all of them (no -n NAME)")
    return [DirArtifact(p, limits) for p in subdirs]


# ----------------------------------------------------------------------------- zip archive

class ZipArtifact(Artifact):
    """An artifact archive as GitHub serves it (a zip of the uploaded files)."""

    def __init__(self, name: str, archive: Path, limits: Limits) -> None:
        super().__init__(name, limits)
        self.archive = archive
        self._zip: zipfile.ZipFile | None = None
        self._members: list[Member] | None = None
        self._infos: dict[str, zipfile.ZipInfo] = {}

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def members(self) -> list[Member]:
        if self._members is None:
            self._members = self._list()
        return self._members

    def _list(self) -> list[Member]:
        try:
            self._zip = zipfile.ZipFile(self.archive)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            self.refused.append(Refusal(self.name, "", f"not a readable zip archive: "
                                        f"{_short(exc)}"))
            return []
        if len(infos) > self.limits.max_members:
            self.refused.append(Refusal(self.name, "", f"{len(infos):,} entries, over the "
                                        f"{self.limits.max_members:,} limit: not read"))
            return []
        out: list[Member] = []
        for info in infos:
            if info.is_dir():
                continue
            name = safe_name(info.filename)
            mode = info.external_attr >> 16
            if name is None or stat.S_ISLNK(mode) or name in self._infos:
                self.refused.append(Refusal(
                    self.name, info.filename[:300],
                    "an unsafe or repeated entry name, or a link: skipped"))
                continue
            if info.flag_bits & 0x1:
                self.refused.append(Refusal(self.name, name, "encrypted: skipped"))
                continue
            self._infos[name] = info
            out.append(Member(name, info.file_size))
        return out

    def _open(self, path: str) -> IO[bytes]:
        assert self._zip is not None
        return self._zip.open(self._infos[path])


def download(forge: Any, infos: list[Any], dest: Path, limits: Limits
             ) -> tuple[list[ZipArtifact], list[Refusal]]:
    """The artifacts ``infos`` of a run (``io.github.ArtifactInfo``) downloaded into
    ``dest`` as zip archives; an expired, oversized or failing one is a refusal."""
    from inferencex_tools.errors import ForgeError, UsageError

    out: list[ZipArtifact] = []
    refused: list[Refusal] = []
    for i, info in enumerate(infos):
        if info.expired:
            refused.append(Refusal(info.name, "", "expired: GitHub no longer serves it"))
            continue
        if info.size > limits.max_download:
            refused.append(Refusal(info.name, "", f"{info.size:,} bytes, over the "
                                   f"{limits.max_download:,}-byte download limit"))
            continue
        path = dest / f"{i}.zip"
        try:
            forge.download_artifact(info, path, max_bytes=limits.max_download)
        except (ForgeError, UsageError) as exc:
            refused.append(Refusal(info.name, "", f"not downloaded: {exc.message}"))
            continue
        out.append(ZipArtifact(info.name, path, limits))
    return out, refused
