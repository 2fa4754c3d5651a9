"""The read-recording file system of the trace server: a read-only FUSE view of the
session's repository copy that notes every path a trace looks up, lists or finds missing.

The trace server (:mod:`._sandboxd`) opens ``/dev/fuse`` inside its user namespace,
mounts this file system once (every trace sees the repository through it) and serves
its requests itself while a trace runs, through the raw kernel protocol (no libfuse).
The kernel keeps what it was told (a name found or missing, attributes) for the rest of
the trace — each path reaches the server once — and when the trace is over the server
drops every entry the trace looked up (``FUSE_NOTIFY_INVAL_ENTRY``), so the next trace's
lookups reach it again; the server runs one trace at a time, so what it serves while a
trace runs is that trace's.

What is recorded, as repository-relative paths (the root is ``""``):

* ``files``   a path looked up (stat, open, exec, a path walk through it) that exists;
              a symbolic link's target too;
* ``listed``  a directory whose entries were read;
* ``missing`` a path looked up that does not exist (a file a change could add).

Standalone (stdlib only): copied into the session next to the trace server and imported
by it, never by ixtool.  Linux only.
"""

from __future__ import annotations

import errno
import os
import stat
import struct

# opcodes (include/uapi/linux/fuse.h)
LOOKUP, FORGET, GETATTR, READLINK, OPEN, READ, STATFS, RELEASE = 1, 2, 3, 5, 14, 15, 17, 18
GETXATTR, LISTXATTR, FLUSH, INIT, OPENDIR, READDIR, RELEASEDIR = 22, 23, 25, 26, 27, 28, 29
ACCESS, INTERRUPT, DESTROY, BATCH_FORGET = 34, 36, 38, 42
NO_REPLY = frozenset({FORGET, BATCH_FORGET, INTERRUPT})

IN_HEADER = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid extlen pad
OUT_HEADER = struct.Struct("<IiQ")  # len error unique
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")
ENTRY = struct.Struct("<QQQQII")  # nodeid generation entry_valid attr_valid (+ nsec)
ATTR_OUT = struct.Struct("<QII")
READ_IN = struct.Struct("<QQII")  # fh offset size read_flags
DIRENT = struct.Struct("<QQII")  # ino off namelen type
STATFS_OUT = struct.Struct("<QQQQQIIII24x")
OPEN_OUT = struct.Struct("<QIi")  # fh open_flags backing_id
INIT_OUT = struct.Struct("<IIIIHHIIHHII24x")

# init flags: asynchronous reads, big pages, parallel lookups, cached symlinks
ASYNC_READ, MAX_PAGES, PARALLEL_DIROPS, CACHE_SYMLINKS = 1, 1 << 22, 1 << 18, 1 << 23
WANT = ASYNC_READ | MAX_PAGES | PARALLEL_DIROPS | CACHE_SYMLINKS
MINOR = 31  # the protocol this server speaks (7.31: max_pages, cached symlinks)
BUFFER = (1 << 20) + 4096  # one request: the kernel's biggest is max_write + a header
# seconds the kernel may keep an entry (a name looked up, found or not) and a node's
# attributes: the copy never changes, and every entry a trace looked up is dropped when it
# ends (ReadFS.end), so each trace's first lookup of a path reaches the server
ENTRY_VALID = ATTR_VALID = 3600
NOTIFY_INVAL_ENTRY = 3
INVAL_ENTRY = struct.Struct("<QII")  # parent namelen flags
MAX_PATHS = 200_000  # per trace, the three sets together: past it the set is unknown
DT = {stat.S_IFDIR: 4, stat.S_IFREG: 8, stat.S_IFLNK: 10}

MOUNT_OPTIONS = ("rootmode=40000,user_id=0,group_id=0,default_permissions,allow_other,"
                 "max_read=131072")


class Failed(Exception):
    """The connection failed (unmounted, aborted, a reply refused): nothing it recorded
    since can be trusted complete."""


class ReadFS:
    """The server side of one FUSE connection over ``backing`` (a directory)."""

    def __init__(self, fd: int, backing: str) -> None:
        self.fd = fd
        self.backing = backing.rstrip("/") or "/"
        self.paths: list[str] = ["", ""]  # nodeid → path (1 is the root)
        self.ids: dict[str, int] = {"": 1}
        self.fds: dict[int, int] = {}  # nodeid → backing fd, for reads
        self.listings: dict[int, list[tuple[str, int, int]]] = {}
        self.failed: str | None = None
        self.files: set[str] = set()
        self.listed: set[str] = set()
        self.missing: set[str] = set()
        self.cached: set[tuple[int, str]] = set()  # (parent node, name) looked up

    # -- one trace's record
    def begin(self) -> None:
        """A new trace: empty sets (a failure of the connection stays)."""
        self.files, self.listed, self.missing = set(), set(), set()

    def end(self) -> None:
        """The trace is over (none of its processes is left): every entry it looked up
        is dropped from the kernel's cache, so that the next trace's lookups reach the
        server again.  One that cannot be dropped fails the connection: no later trace's
        reads could be trusted complete."""
        if self.failed is not None:
            return
        for node, name in self.cached:
            raw = os.fsencode(name)
            body = INVAL_ENTRY.pack(node, len(raw), 0) + raw + b"\0"
            try:
                os.write(self.fd, OUT_HEADER.pack(OUT_HEADER.size + len(body),
                                                  NOTIFY_INVAL_ENTRY, 0) + body)
            except OSError as exc:
                if exc.errno != errno.ENOENT:  # ENOENT: not cached (any more)
                    self.failed = f"dropping the cached entry {name!r}: {exc}"
                    return
        self.cached.clear()

    def result(self) -> dict[str, list[str]] | None:
        """The trace's read set, or None when the connection failed or a cap was hit."""
        if self.failed is not None:
            return None
        if len(self.files) + len(self.listed) + len(self.missing) > MAX_PATHS:
            return None
        return {"files": sorted(self.files), "listed": sorted(self.listed),
                "missing": sorted(self.missing)}

    # -- the protocol
    def handshake(self) -> None:
        """Answer the kernel's INIT (the first request after the mount; blocking)."""
        os.set_blocking(self.fd, True)
        try:
            req = os.read(self.fd, BUFFER)
        except OSError as exc:
            raise Failed(f"no INIT from the kernel: {exc}") from exc
        _, op, unique = IN_HEADER.unpack_from(req)[:3]
        if op != INIT:
            raise Failed(f"the first request was {op}, not INIT")
        major, _minor, readahead, flags = struct.unpack_from("<IIII", req, IN_HEADER.size)
        if major != 7:
            self._reply(unique, -errno.EPROTO)
            raise Failed(f"FUSE protocol {major} is not 7")
        body = INIT_OUT.pack(7, MINOR, readahead, flags & WANT, 16, 12, 131072, 1, 32, 0, 0,
                             0)
        self._reply(unique, 0, body)
        os.set_blocking(self.fd, False)

    def serve(self) -> None:
        """Answer every request waiting now (non-blocking)."""
        if self.failed is not None:
            return
        while True:
            try:
                req = os.read(self.fd, BUFFER)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            except OSError as exc:
                if exc.errno == errno.ENOENT:  # the request was interrupted: it is gone
                    continue
                self.failed = f"reading /dev/fuse: {exc}"
                return
            if not req:
                self.failed = "the FUSE connection closed"
                return
            try:
                self._one(req)
            except Failed as exc:
                self.failed = str(exc)
                return

    def _one(self, req: bytes) -> None:
        _, op, unique, node = IN_HEADER.unpack_from(req)[:4]
        arg = memoryview(req)[IN_HEADER.size:]
        if op in NO_REPLY:
            return
        handler = _HANDLERS.get(op)
        if handler is None:
            self._reply(unique, -errno.ENOSYS)
            return
        try:
            err, body = handler(self, node, arg)
        except OSError as exc:
            err, body = -(exc.errno or errno.EIO), b""
        self._reply(unique, err, body)

    def _reply(self, unique: int, err: int, body: bytes = b"") -> None:
        out = OUT_HEADER.pack(OUT_HEADER.size + (0 if err else len(body)), err, unique)
        try:
            os.write(self.fd, out if err else out + body)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # ENOENT: the request was interrupted meanwhile
                raise Failed(f"a reply was refused: {exc}") from exc

    # -- nodes
    def _path(self, node: int) -> str:
        if not 0 < node < len(self.paths):
            raise OSError(errno.ESTALE, "unknown node")
        return self.paths[node]

    def _real(self, path: str) -> str:
        return f"{self.backing}/{path}" if path else self.backing

    def _node(self, path: str) -> int:
        node = self.ids.get(path)
        if node is None:
            node = self.ids[path] = len(self.paths)
            self.paths.append(path)
        return node

    def _attr(self, st: os.stat_result) -> bytes:
        return ATTR.pack(st.st_ino, st.st_size, st.st_blocks, int(st.st_atime),
                         int(st.st_mtime), int(st.st_ctime), 0, 0, 0, st.st_mode,
                         st.st_nlink, 0, 0, 0, 4096, 0)

    def _saw(self, path: str, st: os.stat_result) -> None:
        if path:
            self.files.add(path)
        if stat.S_ISLNK(st.st_mode):
            target = os.path.normpath(os.path.join(os.path.dirname(path),
                                                   os.readlink(self._real(path))))
            if not target.startswith(("/", "../")) and target not in ("..", "."):
                self.files.add(target)

    # -- requests: (error, reply body)
    def lookup(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        name = bytes(arg).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        if not name or "/" in name or name in (".", ".."):
            return -errno.ENOENT, b""
        parent = self._path(node)
        path = f"{parent}/{name}" if parent else name
        self.cached.add((node, name))  # the kernel keeps the answer until end() drops it
        try:
            st = os.lstat(self._real(path))
        except (FileNotFoundError, NotADirectoryError):
            self.missing.add(path)
            # a negative entry (node 0), kept like the others
            return 0, ENTRY.pack(0, 0, ENTRY_VALID, 0, 0, 0) + bytes(ATTR.size)
        self._saw(path, st)
        return 0, (ENTRY.pack(self._node(path), 0, ENTRY_VALID, ATTR_VALID, 0, 0)
                   + self._attr(st))

    def getattr(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        path = self._path(node)
        st = os.lstat(self._real(path))
        if path:
            self.files.add(path)
        return 0, ATTR_OUT.pack(ATTR_VALID, 0, 0) + self._attr(st)

    def readlink(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        path = self._path(node)
        st = os.lstat(self._real(path))
        self._saw(path, st)
        return 0, os.fsencode(os.readlink(self._real(path)))

    def read(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        _, offset, size, _ = READ_IN.unpack_from(arg)
        fd = self.fds.get(node)
        if fd is None:
            fd = os.open(self._real(self._path(node)), os.O_RDONLY | os.O_NOFOLLOW |
                         os.O_CLOEXEC)
            if len(self.fds) >= 256:
                for old in list(self.fds)[:128]:
                    os.close(self.fds.pop(old))
            self.fds[node] = fd
        return 0, os.pread(fd, min(size, 1 << 20), offset)

    def readdir(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        _, offset, size, _ = READ_IN.unpack_from(arg)
        path = self._path(node)
        self.listed.add(path)
        entries = self.listings.get(node)
        if entries is None:
            entries = [(".", 1, 4), ("..", 1, 4)]
            with os.scandir(self._real(path)) as it:
                for e in sorted(it, key=lambda e: e.name):
                    st = e.stat(follow_symlinks=False)
                    entries.append((e.name, st.st_ino, DT.get(stat.S_IFMT(st.st_mode), 0)))
            self.listings[node] = entries
        out = bytearray()
        for i in range(offset, len(entries)):
            name, ino, kind = entries[i]
            raw = os.fsencode(name)
            rec = DIRENT.pack(ino, i + 1, len(raw), kind) + raw
            rec += b"\0" * (-len(rec) % 8)
            if len(out) + len(rec) > size:
                break
            out += rec
        return 0, bytes(out)

    def statfs(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        s = os.statvfs(self.backing)
        return 0, STATFS_OUT.pack(s.f_blocks, s.f_bfree, s.f_bavail, s.f_files, s.f_ffree,
                                  s.f_bsize, s.f_namemax, s.f_frsize, 0)

    def opendir(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        self._path(node)
        return 0, OPEN_OUT.pack(0, 0, 0)  # no FOPEN_CACHE_DIR: every listing is asked for

    def nothing(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        return 0, b""

    def unsupported(self, node: int, arg: memoryview) -> tuple[int, bytes]:
        return -errno.ENOSYS, b""  # the kernel then stops asking (open, flush, xattrs, access)


_HANDLERS = {
    LOOKUP: ReadFS.lookup, GETATTR: ReadFS.getattr, READLINK: ReadFS.readlink,
    READ: ReadFS.read, READDIR: ReadFS.readdir, STATFS: ReadFS.statfs,
    RELEASE: ReadFS.nothing, RELEASEDIR: ReadFS.nothing, FLUSH: ReadFS.unsupported,
    DESTROY: ReadFS.nothing, OPEN: ReadFS.unsupported, OPENDIR: ReadFS.opendir,
    GETXATTR: ReadFS.unsupported, LISTXATTR: ReadFS.unsupported,
    ACCESS: ReadFS.unsupported,
}
