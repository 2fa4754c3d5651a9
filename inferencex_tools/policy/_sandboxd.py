"""The trace server: one per worker, inside its own user, mount and network namespaces.

ixtool starts it once per worker thread (``unshare -rmn --kill-child python -I -S``) and
sends it one request per trace over a Unix socket, with the write ends of the trace's
stdout, stderr and xtrace pipes attached (SCM_RIGHTS: ixtool keeps the read ends).  For
each trace the server forks a child into a new mount and pid namespace that builds the
trace's root with mount(2) calls (no helper processes), chroots and runs the traced
shell; it answers with the exit status.  Setting up a namespace this way costs a few
system calls instead of some twenty short-lived processes per trace.

Standalone (stdlib only): the file is copied into the session and run by path, never
imported by ixtool.  Linux only.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
FLAG_OF = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
           "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME,
           "strictatime": MS_STRICTATIME}
FSIZE = 64 * 1024 * 1024
PR_SET_PDEATHSIG = 1
XFD = 3

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_void_p)


def mount(src: str | None, dst: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    if libc.mount(src.encode() if src else None, dst.encode(),
                  fstype.encode() if fstype else None, flags,
                  data.encode() if data else None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {src} {dst}: {os.strerror(e)}")


def unshare(flags: int) -> None:
    if libc.unshare(flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"unshare: {os.strerror(e)}")


def mountinfo() -> list[tuple[str, int]]:
    """(mount point, per-mount flags) of every mount in this namespace."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            f = line.split()
            mp = f[4].replace("\\040", " ")
            flags = 0
            for o in f[5].split(","):
                flags |= FLAG_OF.get(o, 0)
            out.append((mp, flags))
    return out


def bind_ro(src: str, dst: str) -> None:
    """Bind ``src`` at ``dst`` read-only, whatever the source mount allows (a user
    namespace keeps the source's locked flags: they are repeated in the remount)."""
    mount(src, dst, None, MS_BIND | MS_REC)
    flags = 0
    for mp, f in mountinfo():
        if mp == dst:
            flags = f
    mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def prepare(stage: str) -> str:
    """Once per server: a read-only view of the host at ``stage/host``."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", stage, "tmpfs", 0, "size=1m,mode=755")
    host = os.path.join(stage, "host")
    os.mkdir(host)
    mount("/", host, None, MS_BIND | MS_REC)
    for mp, flags in mountinfo():
        if mp != host and not mp.startswith(host + "/"):
            continue
        rel = mp[len(host):] or "/"
        if rel.startswith(("/proc", "/dev", "/sys")):
            continue
        with contextlib.suppress(OSError):
            mount(None, mp, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
    return host


def build_root(req: dict[str, Any], host: str) -> None:
    """In the trace's own mount namespace: its root at req["rootdir"], then chroot."""
    r, trace = req["rootdir"], req["trace"]
    mount("tmpfs", r, "tmpfs", 0, "size=1g,mode=755")
    os.mkdir(f"{r}/.host")
    mount(host, f"{r}/.host", None, MS_BIND | MS_REC)
    mount("proc", f"{r}/.host/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path, opts in ((f"{r}/.host/dev/shm", "size=4t,mode=1777"),):
        with contextlib.suppress(OSError):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts)
    try:
        mount("tmpfs", f"{r}/.host/sys/class", "tmpfs", 0, "size=1m,mode=755")
        for d in ("mlx5_0", "mlx5_1"):
            os.makedirs(f"{r}/.host/sys/class/infiniband/{d}/ports/1")
            with open(f"{r}/.host/sys/class/infiniband/{d}/ports/1/state", "w") as fh:
                fh.write("4: ACTIVE\n")
    except OSError:
        pass
    shared = req.get("shared")
    if shared:  # ixtool's stubs, read-only
        os.mkdir(f"{r}{req['shared_at']}")
        bind_ro(shared.replace("@HOST@", host), f"{r}{req['shared_at']}")
    for d in req["system"]:
        if os.path.lexists(f"/{d}"):
            os.symlink(f".host/{d}", f"{r}/{d}")
    os.mkdir(f"{r}/tmp")
    mount("tmpfs", f"{r}/tmp", "tmpfs", 0, "size=1g,mode=1777")
    os.mkdir(f"{r}/tmp/ixtrace")
    mount(trace, f"{r}/tmp/ixtrace", None, MS_BIND | MS_REC)
    bind_ro(req["repo_view"].replace("@HOST@", host), f"{r}/tmp/ixtrace/repo")
    for path, sub in req["binds"]:
        os.makedirs(f"{r}{path}", exist_ok=True)
        src = f"{trace}/ws" + (f"/{sub}" if sub else "")
        mount(src, f"{r}{path}", None, MS_BIND)
    os.chroot(r)


def run_trace(req: dict[str, Any], fds: list[int], host: str) -> None:
    """The forked child: new mount + pid namespaces, the traced shell as pid 1's child."""
    unshare(CLONE_NEWNS | CLONE_NEWPID)
    pid = os.fork()
    if pid == 0:
        try:
            # the namespace dies with its waiter (a timeout kills the waiter)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.setsid()  # its own session: a stub's `kill 0` ends this trace only
            build_root(req, host)
            os.chdir(req["cwd"])
            out, err, xtrace = fds
            null = os.open("/dev/null", os.O_RDONLY)
            for fd, to in ((null, 0), (out, 1), (err, 2), (xtrace, XFD)):
                if fd != to:
                    os.dup2(fd, to)
            resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE, FSIZE))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.closerange(XFD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            os.execve(req["bash"], [req["bash"], "--noprofile", "--norc", req["inner"],
                                    req["script"], req["cwd"], str(XFD)], req["env"])
        except BaseException as exc:
            try:
                os.write(2, f"ixtool sandbox setup failed: {exc}\n".encode())
            finally:
                os._exit(97)
    # pid 1 of the trace's namespace must stay the reaper: wait for it
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = 0
            break
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status)
             else 128 + os.WTERMSIG(status))


def recv(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    head = b""
    fds: list[int] = []
    while len(head) < 4:
        msg, got, _, _ = socket.recv_fds(sock, 4 - len(head), 8)
        if not msg:
            return None, fds
        head += msg
        fds += got
    (n,) = struct.unpack("!I", head)
    body = b""
    while len(body) < n:
        msg, got, _, _ = socket.recv_fds(sock, n - len(body), 8)
        if not msg:
            return None, fds
        body += msg
        fds += got
    return json.loads(body), fds


def send(sock: socket.socket, obj: dict[str, Any]) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack("!I", len(data)) + data)


def main() -> int:
    sock = socket.socket(fileno=int(sys.argv[1]))
    stage = sys.argv[2]
    try:
        host = prepare(stage)
    except OSError as exc:
        send(sock, {"ready": False, "error": str(exc)})
        return 1
    send(sock, {"ready": True})
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        req, fds = recv(sock)
        if req is None:
            return 0
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            sock.close()
            run_trace(req, fds, host)
            os._exit(99)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        left = start + float(req["timeout"]) - time.monotonic()
        ready, _, _ = select.select([pidfd], [], [], max(0.0, left))
        timed_out = not ready
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
        os.close(pidfd)
        rc = os.waitstatus_to_exitcode(status)
        send(sock, {"rc": rc, "timed_out": timed_out,
                    "cpu": usage.ru_utime + usage.ru_stime})


if __name__ == "__main__":
    sys.exit(main())
