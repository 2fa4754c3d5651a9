"""File reads with limits, and atomic writes (temp file + fsync + rename)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError

DEFAULT_MAX_BYTES = 32 * 1024 * 1024

# Test hook: called with the temp path after a partial write, before fsync/rename.
# Fault-injection tests set it to kill the process mid-write.
_FAULT_HOOK: Callable[[Path], None] | None = None


def _work_tree_of(path: Path) -> Path | None:
    """The nearest enclosing directory holding ``.git`` (not resolving symlinks)."""
    for d in path.parents:
        if (d / ".git").exists():
            return d
    return None


def _check_symlinks(p: Path) -> Path:
    """``p`` resolved; InputError when a symlink leads out of its git work tree.

    ixtool runs on untrusted pull-request content: a committed symlink such as
    ``perf-changelog.yaml -> /proc/self/environ`` or ``-> /dev/tty`` must not make it
    read (and echo) a file outside the repository, or block on a device.
    """
    absolute = Path(os.path.abspath(p))
    try:
        real = absolute.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # symlink loop
        raise InputError(f"{p}: cannot resolve the path: {exc}",
                         hint="check the path") from None
    if real == absolute:
        return real
    tree = _work_tree_of(absolute)
    if tree is None:
        return real
    root = tree.resolve()
    if real != root and root not in real.parents:
        raise InputError(
            f"{p}: is a symbolic link to {real}, outside the repository at {root}",
            hint="ixtool does not follow symlinks out of the repository; "
            "replace the link by the file itself",
        )
    git = root / ".git"
    if real == git or git in real.parents:
        # git's own files are not the repository's content: its config holds the
        # checkout's credentials (an http.extraheader), its hooks run on git commands
        raise InputError(
            f"{p}: is a symbolic link into {git}, git's own files, not the repository's",
            hint="ixtool does not follow symlinks into .git; "
            "replace the link by the file itself",
        )
    return real


class PathRefused(InputError):
    """A path taken from repository data leaves the repository or its folder, or goes
    through a symbolic link where ixtool does not follow one."""


def contained(root: str | os.PathLike[str], rel: str, folder: str = "", *,
              leaf_link_ok: bool = False) -> Path:
    """``root/rel`` when it stays inside ``root/folder``; :class:`PathRefused` otherwise.

    ``rel`` comes from data (a config's model-prefix, a recipe name, a runner node): it
    must be relative, without ``..`` components, backslashes or control characters, and
    no directory on the way below ``root`` may be a symbolic link (a committed directory
    link would carry the path anywhere).  The last component may be a link only with
    ``leaf_link_ok`` and only to a file in the same folder (a launcher alias such as
    ``launch_b200-dgxc-slurm.sh -> launch_b200-dgxc.sh``).  The path need not exist.
    """
    base = Path(root)
    parts = _plain_parts(rel)
    want = [p for p in folder.split("/") if p not in ("", ".")]
    if parts[:len(want)] != want:
        raise PathRefused(f"{rel[:200]}: outside {folder}/")
    here = base
    for i, part in enumerate(parts):
        here = here / part
        try:
            st = here.lstat()
        except FileNotFoundError:
            break
        except OSError as exc:
            raise PathRefused(f"{rel[:200]}: cannot check the path: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            _allowed_link(here, parts, i, leaf_link_ok)
    return base.joinpath(*parts)


def _plain_parts(rel: str) -> list[str]:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    bad = any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f or c == "\\" for c in rel)
    if rel.startswith("/") or ".." in parts or bad or not parts:
        raise PathRefused(f"{rel[:200]!r}: not a plain path inside the repository",
                          hint="paths built from configs and recipes must stay in their folder")
    return parts


def _allowed_link(here: Path, parts: list[str], i: int, leaf_link_ok: bool) -> None:
    last = i == len(parts) - 1
    rel = "/".join(parts)
    if not (last and leaf_link_ok):
        raise PathRefused(
            f"{rel[:200]}: {'/'.join(parts[:i + 1])} is a symbolic link "
            f"({'file' if last else 'directory'}); ixtool does not follow links in paths "
            "taken from repository data", hint="commit the file itself instead of a link")
    if here.resolve().parent != here.parent.resolve():
        raise PathRefused(f"{rel[:200]}: is a symbolic link out of its folder")


def read_bytes(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    p = Path(path)
    _check_symlinks(p)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file", hint="check the path") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}",
                         hint="check the path and its permissions") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{p}: is a directory, expected a file",
                         hint="give the path of a file inside it, not the directory")
    if stat.S_ISSOCK(st.st_mode):
        raise InputError(f"{p}: is a socket, expected a file",
                         hint="give the path of a regular file")
    if st.st_size > max_bytes:
        raise InputError(
            f"{p}: file is {st.st_size / 2**20:.1f} MiB, over the "
            f"{max_bytes // (1024 * 1024)} MiB limit",
            hint="ixtool refuses files this large; check that the right file was given",
        )
    try:
        with p.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}",
                         hint="check the path and its permissions") from None
    if len(data) > max_bytes:
        raise InputError(f"{p}: file grew past the {max_bytes // (1024 * 1024)} MiB limit",
                         hint="the file changed while it was read; re-run once it is complete")
    return data


class WriteError(InputError, OSError):
    """A file could not be written (read-only filesystem, permissions, disk full).

    Also an :class:`OSError`, so callers that already catch ``OSError`` keep working;
    unhandled, the CLI reports it as a clean ``ixtool: error:`` (exit 2).
    """


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old or the new file, never a mix.

    The temp file (``.<name>.<random>.ixtool-tmp``) lives in the same directory (same
    filesystem), is fsynced, takes the permissions of the file it replaces, and is
    renamed over it; the directory is fsynced after the rename.  A symlink inside the
    repository is kept and its target is replaced.  A path whose links — the file itself
    or any directory on the way — lead out of its git work tree is refused (a PR can
    commit ``ixtool.sarif -> /home/runner/.bashrc`` or ``out -> /etc``); a rename never
    writes through a FIFO or a device.  Failures raise :class:`WriteError` and leave the
    old file untouched.
    """
    p = Path(path)
    try:
        real = _check_symlinks(p)
    except InputError as exc:
        raise WriteError(f"cannot write: {exc.message}", hint=exc.hint) from None
    if p.is_symlink():  # write the link's target (inside the repository), keep the link
        p = real
    directory = p.parent if str(p.parent) else Path(".")
    try:
        st = p.stat()
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    except OSError as exc:
        raise WriteError(f"{p}: cannot write: {exc.strerror}") from None
    else:
        if stat.S_ISDIR(st.st_mode):
            raise WriteError(f"{p}: is a directory, cannot write it as a file")
        mode = stat.S_IMODE(st.st_mode)
    import tempfile  # here, not at start-up (random, hashlib): most runs never write

    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".ixtool-tmp",
                                        dir=directory)
    except OSError as exc:
        raise WriteError(f"{p}: cannot write: {exc.strerror}",
                         hint="check that the directory exists and is writable") from None
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
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(f"{p}: cannot write: {exc.strerror or exc}") from None
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def atomic_append(path: str | os.PathLike[str], data: bytes) -> None:
    """Append ``data`` to ``path`` (created when missing) through :func:`atomic_write`:
    readers see the old content or the old content + ``data``, never a part."""
    p = Path(path)
    try:
        old = p.read_bytes() if p.exists() else b""
    except OSError as exc:
        raise WriteError(f"{p}: cannot read it to append: {exc.strerror or exc}") from None
    atomic_write(p, old + data)


def read_json(path: str | os.PathLike[str], what: str, *,
              max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """A JSON file (size-limited read); InputError naming ``what`` when it is not JSON."""
    import json

    raw = read_bytes(path, max_bytes=max_bytes)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: {what} is not valid JSON: {exc}",
                         hint=f"{what} must be JSON; check {path}") from None
