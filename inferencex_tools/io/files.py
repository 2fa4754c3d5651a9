"""File reads with limits, and atomic writes (temp file + fsync + rename)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from inferencex_tools.errors import InputError

DEFAULT_MAX_BYTES = 32 * 1024 * 1024

# Test hook: called with the temp path after a partial write, before fsync/rename.
# Fault-injection tests set it to kill the process mid-write.
_FAULT_HOOK: Callable[[Path], None] | None = None


def read_bytes(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file", hint="check the path") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{p}: is a directory, expected a file")
    if st.st_size > max_bytes:
        raise InputError(
            f"{p}: file is {st.st_size / 1e6:.1f} MB, over the "
            f"{max_bytes // (1024 * 1024)} MiB limit",
            hint="ixtool refuses files this large; check that the right file was given",
        )
    try:
        with p.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise InputError(f"{p}: file grew past the {max_bytes // (1024 * 1024)} MiB limit")
    return data


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old or the new file, never a mix.

    The temp file lives in the same directory (same filesystem), is fsynced, takes
    the permissions of the file it replaces, and is renamed over it.
    """
    p = Path(path)
    directory = p.parent if str(p.parent) else Path(".")
    try:
        mode = stat.S_IMODE(p.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".ixtool-tmp", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            half = len(data) // 2
            fh.write(data[:half])
            if _FAULT_HOOK is not None:
                fh.flush()
                _FAULT_HOOK(tmp)
            fh.write(data[half:])
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
