"""The trace server: one per worker, inside its own user, mount and network namespaces.

ixtool starts it once per worker thread (``python -I -S``; the server enters its
namespaces itself, :func:`enter_namespaces`) and
sends it one request per trace over a Unix socket, with the write ends of the trace's
stdout, stderr and xtrace pipes attached (SCM_RIGHTS: ixtool keeps the read ends).  For
each trace the server forks a child into a new mount and pid namespace that builds the
trace's root with mount(2) calls (no helper processes), pivots into it (the old root
detached: nothing of the host's mount table stays reachable), drops every capability
and runs the traced shell; it answers with the exit status.  Setting up a namespace
this way costs a few system calls instead of some twenty short-lived processes per
trace.

Standalone (stdlib only): the file is copied into the session and run by path, never
imported by ixtool.  Linux only.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import threading
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
CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWIPC = 0x10000000, 0x40000000, 0x08000000
FSIZE = 64 * 1024 * 1024
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4
MNT_DETACH = 2
# pivot_root(2) has no libc wrapper: its number per architecture
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217,
                  "i686": 217, "armv7l": 218}
XFD = 3
# the unprivileged host uid/gid the sandbox's root is mapped to when ixtool runs as root
# (as any other user: that user, which is unprivileged already)
SANDBOX_ID = 65534
# limits of one trace (all its processes: the pid namespace ends with its first process)
LIMITS = {
    "RLIMIT_NPROC": 512,  # per host uid: every trace of the session together
    "RLIMIT_AS": 2 << 30,  # per process
    "RLIMIT_NOFILE": 1024,
    "RLIMIT_FSIZE": FSIZE,
    "RLIMIT_CORE": 0,
    "RLIMIT_MEMLOCK": 1 << 20,
}
MAX_TRACE_BYTES = 256 * 1024 * 1024  # written into the trace directory, all files
MAX_TRACE_FILES = 20_000
TMPFS_SIZE = "size=256m"
# host devices a trace gets in its own /dev (nothing else of the host's /dev)
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
# host directories not shown at all (a trace gets its own): bound read-only are the others
OWN_DIRS = ("proc", "dev", "run", "tmp", "sys")

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
    namespace keeps the source's locked flags: they are repeated in the remount).

    ``src`` is below the server's host view, whose mounts (and their flags) do not
    change after :func:`prepare`: the bind has the flags of the view's mount holding
    ``src`` (:func:`_flags`, read once per server, not once per bind)."""
    mount(src, dst, None, MS_BIND | MS_REC)
    mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _flags(src))


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _open_fuse() -> int | None:
    """``/dev/fuse`` opened in this user namespace (a FUSE mount needs its device opened
    by the namespace that mounts it), or None: then no trace's reads are known.  Above
    the descriptors a trace's first process is given (closed there before the exec)."""
    try:
        fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


def enter_namespaces() -> int | None:
    """New user, mount and network namespaces for this server; ``/dev/fuse`` opened in
    the new user namespace (None when it cannot be).

    As root: the supplementary groups are dropped first, and the namespace's root is
    mapped to the unprivileged :data:`SANDBOX_ID` by a helper that stays outside (only a
    process in the parent namespace may map to another uid), so a trace cannot read what
    only root may (``/etc/shadow``) nor use root's groups; the device (0600 root on many
    hosts) is opened while the server still has host root's file access, just before it
    becomes that unprivileged uid.  As any other user: its own uid and gid, setgroups
    denied."""
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        unshare(CLONE_NEWUSER)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
        fuse = _open_fuse()
    else:
        os.setgroups([])
        go_r, go_w = os.pipe()
        done_r, done_w = os.pipe()
        helper = os.fork()
        if helper == 0:  # stays in the parent namespace: writes the maps, then exits
            try:
                os.close(go_w)
                os.read(go_r, 1)
                me = os.getppid()
                _write(f"/proc/{me}/setgroups", "deny")
                _write(f"/proc/{me}/uid_map", f"0 {SANDBOX_ID} 1")
                _write(f"/proc/{me}/gid_map", f"0 {SANDBOX_ID} 1")
                os.write(done_w, b"1")
            finally:
                os._exit(0)
        os.close(go_r)
        os.close(done_w)
        unshare(CLONE_NEWUSER)
        os.write(go_w, b"1")
        ok = os.read(done_r, 1)
        os.waitpid(helper, 0)
        if ok != b"1":
            raise OSError("the uid map of the sandbox could not be written")
        fuse = _open_fuse()
        # become the namespace's root, i.e. the unprivileged host uid (the credentials
        # are still host root, which has no mapping in the new namespace)
        os.setresgid(0, 0, 0)
        os.setresuid(0, 0, 0)
    unshare(CLONE_NEWNS | CLONE_NEWNET)
    return fuse


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
    _FLAGS.clear()
    _FLAGS.update(mountinfo())  # the view's mounts as every trace will find them
    return host


def mount_reads(fd: int | None, stage: str, repo: str, _readfs: Any) -> Any:
    """Once per server: the repository copy ``repo`` (a host path) seen through the
    read-recording file system at ``stage/repofs`` (``_readfs``, the module); None when
    FUSE cannot be mounted here (then no trace's reads are known)."""
    if fd is None:
        return None
    point = os.path.join(stage, "repofs")
    os.mkdir(point)
    try:
        _overlay_works(stage)
        mount("ixtool-repo", point, "fuse", MS_RDONLY | MS_NOSUID | MS_NODEV,
              f"fd={fd},{_readfs.MOUNT_OPTIONS}")
        fs = _readfs.ReadFS(fd, os.path.join(stage, "host") + repo)
        fs.handshake()
    except (OSError, _readfs.Failed):
        with contextlib.suppress(OSError):
            libc.umount2(point.encode(), MNT_DETACH)
        os.close(fd)
        return None
    return fs


def _overlay_works(stage: str) -> None:
    """Can this server's traces get their workspace as an overlay (user namespaces may
    mount one since Linux 5.11)?  Tried once on empty directories; OSError if not."""
    probe = os.path.join(stage, "probe")
    for d in ("l", "u", "w", "m"):
        os.makedirs(os.path.join(probe, d))
    mount("overlay", f"{probe}/m", "overlay", 0,
          f"lowerdir={probe}/l,upperdir={probe}/u,workdir={probe}/w,userxattr")
    libc.umount2(f"{probe}/m".encode(), MNT_DETACH)


def build_root(req: dict[str, Any], host: str) -> None:
    """In the trace's own mount namespace: its root at req["rootdir"] (entered by
    :func:`enter_root`).

    The root is a size-limited tmpfs of the trace's own (like a container's filesystem:
    a recipe may create ``/mnt/...``; nothing of it reaches the host).  Host system
    directories are bound read-only
    (no view of the whole host: nothing of the host's /proc, /dev, /run or /tmp); the
    trace gets a fresh /proc of its pid namespace, a minimal /dev (null, zero, full,
    random, urandom, tty, a private shm), private tmpfs at /run and /tmp, and a /sys
    whose class/ holds two ACTIVE InfiniBand ports."""
    r, trace = req["rootdir"], req["trace"]
    mount("tmpfs", r, "tmpfs", MS_NOSUID, f"{TMPFS_SIZE},mode=755")
    for d in req["system"]:
        if d in OWN_DIRS:
            continue
        src = f"{host}/{d}"
        if os.path.islink(src):  # merged /usr: bin -> usr/bin
            os.symlink(os.readlink(src), f"{r}/{d}")
        elif os.path.isdir(src):
            os.mkdir(f"{r}/{d}")
            mount(src, f"{r}/{d}", None, MS_BIND | MS_REC)
            with contextlib.suppress(OSError):  # read-only already (inherited from the view)
                mount(None, f"{r}/{d}", None, MS_REMOUNT | MS_BIND | MS_RDONLY | _flags(src))
    _own_dirs(r, host)
    shared = req.get("shared")
    if shared:  # ixtool's stubs, read-only
        os.mkdir(f"{r}{req['shared_at']}")
        bind_ro(shared.replace("@HOST@", host), f"{r}{req['shared_at']}")
        # the trace's bookkeeping (conf, ledger FIFO): read-only for it
        bind_ro(req["book"].replace("@HOST@", host), f"{r}{req['shared_at']}/trace")
    inner = f"{r}{req['inner_root']}"
    os.makedirs(inner)
    mount(trace, inner, None, MS_BIND | MS_REC)
    reads = req.get("reads")
    if reads:  # the read-recording view (the trace server serves it)
        bind_ro(reads, f"{inner}/repo")
        # the workspace is the checkout itself, writable: an overlay whose lower layer is
        # the recorded view (a lookup of a name the checkout does not have reaches it)
        mount("overlay", f"{inner}/ws", "overlay", 0,
              f"lowerdir={reads},upperdir={trace}/ws,workdir={trace}/.ovl,userxattr")
    else:
        bind_ro(req["repo_view"].replace("@HOST@", host), f"{inner}/repo")
    for path, sub in req["binds"]:
        os.makedirs(f"{r}{path}", exist_ok=True)
        src = f"{inner}/ws" + (f"/{sub}" if sub else "")
        mount(src, f"{r}{path}", None, MS_BIND)


def enter_root(r: str) -> None:
    """Make ``r`` this process's root for good: a mount namespace of its own (the waiter
    keeps watching the trace's file systems in the one they were built in), pivot_root
    and the old root detached.  A chroot would leave the host's mount table one
    ``chroot`` escape away for a process with CAP_SYS_CHROOT in a user namespace."""
    unshare(CLONE_NEWNS)
    os.chdir(r)
    nr = SYS_PIVOT_ROOT.get(os.uname().machine)
    if nr is None or libc.syscall(nr, b".", b".") != 0:
        raise OSError(ctypes.get_errno(), "pivot_root into the trace's root failed")
    if libc.umount2(b".", MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), "detaching the old root failed")
    os.chdir("/")


CAP_LAST = [63]  # /proc/sys/kernel/cap_last_cap, read at start (nothing is read after the pivot)


def drop_capabilities() -> None:
    """No capability survives the exec of the traced shell: the bounding and ambient
    sets emptied, no new privileges (the shell runs as the namespace's uid 0, which
    gets no capabilities from an empty bounding set).  Without CAP_SYS_ADMIN and
    CAP_SYS_CHROOT a trace cannot remount, unmount or leave its root; its read-only
    mounts are read-only for it."""
    if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "clearing the ambient capabilities failed")
    for cap in range(CAP_LAST[0] + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"dropping capability {cap} failed")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "no_new_privs failed")


def _own_dirs(r: str, host: str) -> None:
    """/proc, /dev, /run, /tmp and /sys of one trace."""
    for d in OWN_DIRS:
        os.mkdir(f"{r}/{d}")
    mount("proc", f"{r}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount("tmpfs", f"{r}/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=1m,mode=755")
    for dev in DEVICES:
        if os.path.exists(f"{host}/dev/{dev}"):
            with open(f"{r}/dev/{dev}", "w"):
                pass
            mount(f"{host}/dev/{dev}", f"{r}/dev/{dev}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{r}/dev/{name}")
    os.mkdir(f"{r}/dev/shm")
    # a large /dev/shm, as on the GPU nodes (recipes size caches by its free space); what
    # is written into it counts against MAX_TRACE_BYTES (_wait_watching)
    mount("tmpfs", f"{r}/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=4t,mode=1777")
    mount(None, f"{r}/dev", None, MS_REMOUNT | MS_NOSUID | MS_NOEXEC | MS_RDONLY)
    mount("tmpfs", f"{r}/run", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    mount("tmpfs", f"{r}/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"{TMPFS_SIZE},mode=1777")
    mount("tmpfs", f"{r}/sys", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,mode=755")
    for d in ("mlx5_0", "mlx5_1"):
        os.makedirs(f"{r}/sys/class/infiniband/{d}/ports/1")
        with open(f"{r}/sys/class/infiniband/{d}/ports/1/state", "w") as fh:
            fh.write("4: ACTIVE\n")
    mount(None, f"{r}/sys", None, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY)


_FLAGS: dict[str, int] = {}


def _flags(path: str) -> int:
    """The per-mount flags of the mount holding ``path`` (a remount must repeat them),
    from the server's mount table as :func:`prepare` left it (read there, once)."""
    if not _FLAGS:
        _FLAGS.update(mountinfo())
    best = max((mp for mp in _FLAGS if path == mp or path.startswith(mp.rstrip("/") + "/")),
               key=len, default="/")
    return _FLAGS.get(best, 0)


def _limit() -> None:
    for name, value in LIMITS.items():
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(getattr(resource, name), (value, value))


def run_trace(req: dict[str, Any], fds: list[int], host: str, report: int) -> None:
    """The forked child: new mount, pid and IPC namespaces, the traced shell as pid 1's
    child.

    It waits for the trace and watches what the trace writes into its own file systems
    (root, /tmp, /run, /dev/shm: seen here, in the trace's mount namespace, before the
    pivot); past :data:`MAX_TRACE_BYTES` it kills the trace and says why on ``report``."""
    # its own IPC namespace: System V shared memory ends with the trace, and all of it
    # together stays within the trace's memory bound (shmall, in pages)
    unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC)
    with contextlib.suppress(OSError):
        pages = max(1, int(req["memory"]) // os.sysconf("SC_PAGE_SIZE"))
        _write("/proc/sys/kernel/shmall", str(pages))
    pid = os.fork()
    if pid == 0:
        try:
            # the namespace dies with its waiter (a timeout kills the waiter)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.setsid()  # its own session: a stub's `kill 0` ends this trace only
            build_root(req, host)
            enter_root(req["rootdir"])
            os.chdir(req["cwd"])
            out, err, xtrace = fds
            null = os.open("/dev/null", os.O_RDONLY)
            for fd, to in ((null, 0), (out, 1), (err, 2), (xtrace, XFD)):
                if fd != to:
                    os.dup2(fd, to)
            _limit()
            cpu = int(float(req["timeout"])) + 5
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
            os.closerange(XFD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            drop_capabilities()
            os.execve(req["bash"], [req["bash"], "--noprofile", "--norc", req["inner"],
                                    req["script"], req["cwd"], str(XFD)], req["env"])
        except BaseException as exc:
            try:
                os.write(2, f"ixtool sandbox setup failed: {exc}\n".encode())
            finally:
                os._exit(97)
    # pid 1 of the trace's namespace must stay the reaper: wait for it
    status = _wait_watching(pid, req["rootdir"], report)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status)
             else 128 + os.WTERMSIG(status))


def _written(r: str) -> int:
    """Bytes held by the trace's own file systems (its root, /tmp, /run, /dev/shm)."""
    used = 0
    for m in (r, f"{r}/tmp", f"{r}/run", f"{r}/dev/shm"):
        with contextlib.suppress(OSError):
            if os.stat(m).st_dev == os.stat(os.path.dirname(m)).st_dev:
                continue  # not mounted yet: that is the host's file system, not the trace's
            st = os.statvfs(m)
            used += (st.f_blocks - st.f_bfree) * st.f_frsize
    return used


def _wait_watching(pid: int, r: str, report: int) -> int:
    """Wait for the trace, stopping it once its file systems hold more than the cap; a
    trace that passed the cap between two looks and ended is reported all the same (its
    files are still there): a bound passed means no verdict, however fast the trace."""
    try:  # woken as soon as the trace ends, not at the next poll
        ended: int | None = os.pidfd_open(pid)
    except OSError:
        ended = None
    said = False
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        except InterruptedError:
            continue
        over = _written(r) > MAX_TRACE_BYTES
        if over and not said:
            said = True
            with contextlib.suppress(OSError):
                os.write(report, f"disk: more than {MAX_TRACE_BYTES >> 20} MiB written"
                         .encode())
        if done:
            return status
        if over:
            os.kill(pid, signal.SIGKILL)
        if ended is None:
            time.sleep(0.1)
        else:
            with contextlib.suppress(InterruptedError):
                select.select([ended], [], [], 0.1)


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
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # ends with ixtool
    with open("/proc/sys/kernel/cap_last_cap", "rb") as fh:
        CAP_LAST[0] = int(fh.read())
    # the standalone copy beside this file, loaded while the server can still read the
    # interpreter's own library (it may live where the sandbox's uid cannot)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    readfs = __import__("_readfs")
    parent = os.getppid()
    try:
        fuse = enter_namespaces()
        host = prepare(stage)
    except OSError as exc:
        send(sock, {"ready": False, "error": str(exc)})
        return 1
    # becoming the unprivileged uid cleared the parent-death signal (prctl(2)): armed
    # again, so the server (and every trace with it) ends with ixtool however it ends
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # ixtool ended meanwhile
        return 1
    reads = mount_reads(fuse, stage, sys.argv[3], readfs) if len(sys.argv) > 3 else None
    send(sock, {"ready": True, "reads": reads is not None})
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # what the server holds stays shared with its forks: no collection walks (and so
    # copies) those pages in a trace's short-lived processes
    gc.freeze()
    while True:
        req, fds = recv(sock)
        if req is None:
            return 0
        start = time.monotonic()
        mine = os.times()
        report_r, report_w = os.pipe()
        if reads is not None:
            reads.serve()  # (nothing should be waiting: no trace runs)
            reads.begin()
            req["reads"] = os.path.join(stage, "repofs")
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            # the waiter ends with the server (and the trace's pid namespace with it)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != server:
                os._exit(99)
            gc.disable()
            sock.close()
            os.close(report_r)
            run_trace(req, fds, host, report_w)
            os._exit(99)
        os.close(report_w)
        for fd in fds:
            os.close(fd)
        timed_out, over = watch(pid, start + float(req["timeout"]), req["trace"], reads)
        _, status, usage = os.wait4(pid, 0)
        os.set_blocking(report_r, False)
        with contextlib.suppress(OSError):
            over = over or os.read(report_r, 200).decode(errors="replace") or None
        os.close(report_r)
        rc = os.waitstatus_to_exitcode(status)
        got = None
        if reads is not None:
            reads.serve()  # what the trace's last processes asked before they ended
            reads.end()
            got = reads.result()
        now = os.times()
        send(sock, {"rc": rc, "timed_out": timed_out, "limit": over,
                    "cpu": usage.ru_utime + usage.ru_stime, "reads": got,
                    "server_cpu": now.user + now.system - mine.user - mine.system})


def watch(pid: int, deadline: float, trace: str, reads: Any = None) -> tuple[bool, str | None]:
    """Wait for the trace's waiter, serving the read-recording file system meanwhile;
    kill it (and with it the trace's pid namespace) at the deadline or when the trace
    directory grows past its limits.  (timed out, the limit that stopped it — or that it
    passed before it ended on its own).

    The trace directory is measured by a thread of its own (:class:`_Walk`), never by the
    thread that answers the file system's requests: the workspace is an overlay over that
    file system, and a copy-up in it (a ``mkdir`` in a folder of the checkout) holds the
    upper folders' locks — and the host file system's rename lock — while it waits for an
    answer.  A walk of those folders in the serving thread waited for the copy-up, which
    waited for the walk: every trace's server and every overlay mount on the host's
    ``/dev/shm`` hung (found: 200 processes in D state on the shared machine)."""
    pidfd = os.pidfd_open(pid)
    wait = [pidfd] if reads is None else [pidfd, reads.fd]
    look = 0.0
    walk: _Walk | None = None
    try:
        while True:
            now = time.monotonic()
            left = deadline - now
            cap = 0.02 if walk is not None else 0.25
            ready, _, _ = select.select(wait, [], [], max(0.0, min(left, look - now, cap)))
            if reads is not None:
                reads.serve()
            ended = pidfd in ready
            over = None
            if walk is not None and not walk.is_alive():
                over, walk = walk.over, None
            if ended:
                _finish_walk(walk, reads)  # (no trace process is left to hold a lock)
                return False, over or usage_over(trace)  # a fast trace passes between looks
            if left <= 0 or over:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                _finish_walk(walk, reads)
                return left <= 0 and not over, over
            if walk is None and time.monotonic() >= look:
                look = time.monotonic() + 0.25
                walk = _Walk(trace)
                try:
                    walk.start()
                except RuntimeError:  # no thread to be had: measured here, as before
                    walk.run()
    finally:
        os.close(pidfd)


class _Walk(threading.Thread):
    """One measurement of the trace directory (:func:`usage_over`), off the serving thread."""

    def __init__(self, path: str) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.over: str | None = None

    def run(self) -> None:
        self.over = usage_over(self.path)


def _finish_walk(walk: _Walk | None, reads: Any) -> None:
    """Wait for a walk still running, answering the file system meanwhile."""
    while walk is not None and walk.is_alive():
        if reads is not None:
            select.select([reads.fd], [], [], 0.02)
            reads.serve()
        else:
            walk.join(0.02)


def usage_over(path: str) -> str | None:
    """Which limit the files below ``path`` exceed (bytes, count), or None."""
    total = files = 0
    stack = [path]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for e in it:
                files += 1
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        total += e.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    continue
                if files > MAX_TRACE_FILES:
                    return f"disk: more than {MAX_TRACE_FILES:,} files written"
                if total > MAX_TRACE_BYTES:
                    return f"disk: more than {MAX_TRACE_BYTES >> 20} MiB written"
    return None


if __name__ == "__main__":
    sys.exit(main())
