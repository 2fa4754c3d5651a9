"""Tracing sandbox: run a benchmark script under bash with stubbed servers and record
what it would launch (argv, environment, config files named in argv).

This is an I/O adapter.  The sandbox, strongest first:

* ``env -i`` plus the row's variables; ``HOME`` and the working directory are the
  sandbox directory, which holds a *copy* of the repository's ``benchmarks/`` tree
  (the repository itself is never the working directory);
* stub executables first on ``PATH`` (:mod:`._stubs`), benchmark_lib helpers that would
  wait for a server replaced by recorders, ``sleep`` capped at 0.05 s;
* when unprivileged namespaces are available (``unshare -rmnp``): no network (empty
  network namespace), every mount read-only except the sandbox directory, a private
  ``/tmp`` and ``/dev/shm``, its own pid namespace (everything dies with the trace);
* without namespaces but as root: the script runs as user nobody, owning only the
  sandbox directory;
* a wall-clock timeout that kills the whole process group, and a file-size limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from inferencex_tools.policy import _stubs

INNER_ROOT = "/tmp/ixtrace"
NOBODY = 65534
MAX_COPY_FILE = 2 * 1024 * 1024
MAX_COPY_TOTAL = 64 * 1024 * 1024
MAX_FILE_SIZE = 64 * 1024 * 1024
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
UNSHARE = ("unshare", "--user", "--map-root-user", "--mount", "--net", "--pid", "--fork",
           "--kill-child", "--mount-proc")
CONTAINED_PATTERNS = (
    ("Read-only file system", "write outside the sandbox directory blocked"),
    ("Network is unreachable", "network access blocked"),
    ("Could not resolve host", "network access blocked"),
    ("Temporary failure in name resolution", "network access blocked"),
    ("Name or service not known", "network access blocked"),
    ("Permission denied", "permission denied"),
)


@dataclass(frozen=True)
class Record:
    """One call of a stubbed executable or benchmark_lib helper."""

    tool: str
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    files: dict[str, str]
    seq: int

    @property
    def is_function(self) -> bool:
        return self.tool.startswith("fn:")


@dataclass
class TraceResult:
    script: str
    env: dict[str, str]
    root: str  # the sandbox root as the script saw it
    isolation: str  # "namespaces" | "basic"
    returncode: int | None
    timed_out: bool
    seconds: float
    records: list[Record] = field(default_factory=list)
    stdout_tail: str = ""
    stderr_tail: str = ""
    last_line: str | None = None
    events: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.returncode == 0

    def functions_called(self) -> list[str]:
        return [r.tool[3:] for r in self.records if r.is_function]


@cache
def namespaces_available() -> bool:
    """Can this process create user+mount+net+pid namespaces and remount read-only?"""
    if os.environ.get("IXTOOL_TRACE_NO_NAMESPACES") == "1" or shutil.which("unshare") is None:
        return False
    try:
        r = subprocess.run(
            [*UNSHARE, "sh", "-c", "mount -o remount,bind,ro / && mount -t tmpfs t /tmp"],
            capture_output=True, timeout=10, check=False, env={"PATH": BASE_PATH},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def _world_usable(path: str) -> bool:
    """Can any user run ``path`` (every directory o+x, the file o+rx)?"""
    p = Path(path)
    try:
        if p.stat().st_mode & 0o005 != 0o005:
            return False
        return all(d.stat().st_mode & 0o001 for d in p.parents)
    except OSError:
        return False


@cache
def _stub_python(*, for_nobody: bool = False) -> str:
    """An interpreter for the recorder (stdlib only) that the traced script can run."""
    own = os.path.realpath(sys.executable)
    if not for_nobody or _world_usable(own):
        return own
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"):
        real = os.path.realpath(cand)
        if os.path.isfile(real) and _world_usable(real):
            return real
    return ""


def _copy_tree(src: Path, dst: Path) -> None:
    total = 0
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__", "results")]
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_COPY_FILE:
                continue
            total += st.st_size
            if total > MAX_COPY_TOTAL:
                return
            shutil.copyfile(p, dst / rel / name)
            (dst / rel / name).chmod(0o755 if st.st_mode & 0o111 else 0o644)


def _install(work: Path, inner: str, repo: Path, script_rel: str, isolate: bool,
             tmpfs_tmp: bool, py: str) -> None:
    bin_dir = work / ".ixtrace" / "bin"
    (work / ".ixtrace" / "records").mkdir(parents=True)
    bin_dir.mkdir()
    recorder = (_stubs.RECORDER.replace("@ROOT@", inner)
                .replace("@STUB_MODULES@", repr(_stubs.STUB_MODULES))
                .replace("@DAEMONS@", repr(_stubs.DAEMON_TOOLS)))
    (bin_dir / ".recorder.py").write_text(recorder)
    for tool in (*_stubs.ALL_TOOLS, ".fn"):
        w = bin_dir / tool
        w.write_text(_stubs.WRAPPER.replace("@PYTHON@", py).replace("@ROOT@", inner)
                     .replace("@TOOL@", tool))
        w.chmod(0o755)
    for n in ("3.10", "3.11", "3.12", "3.13"):
        (bin_dir / f"python{n}").symlink_to("python3")
    # the repository's benchmarks/ tree (a copy) with the library shimmed
    src = repo / "benchmarks"
    if src.is_dir():
        _copy_tree(src, work / "benchmarks")
    target = work / script_rel
    if not target.is_file() and (repo / script_rel).is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(repo / script_rel, target)
    lib = work / "benchmarks" / "benchmark_lib.sh"
    lib.parent.mkdir(parents=True, exist_ok=True)
    if lib.is_file():
        lib.rename(lib.with_name(".benchmark_lib.real.sh"))
    shim = [_stubs.SHIM.replace("@ROOT@", inner)]
    for fn in _stubs.WAIT_FUNCTIONS:
        shim.append(f'{fn}() {{ __ix_wait {fn} "$@"; }}\n')
    for fn in _stubs.RECORD_FUNCTIONS:
        shim.append(f'{fn}() {{ __ix_rec {fn} "$@"; return 0; }}\n')
    lib.write_text("".join(shim))
    enter = (_stubs.ENTER.replace("@HOST_ROOT@", _q(str(work))).replace("@ROOT@", _q(inner))
             .replace("@ISOLATE@", "1" if isolate else "0")
             .replace("@TMPFS_TMP@", "1" if tmpfs_tmp else "0"))
    (work / ".ixtrace" / "enter.sh").write_text(enter)


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for n in (*dirnames, *filenames):
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(dirpath, n), uid, uid)


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _last_line(xtrace: str, root: str) -> str | None:
    lines = [ln for ln in xtrace.splitlines() if ln.startswith("+")]
    for ln in reversed(lines):
        m = re.match(r"^\++(?:\S*/)?([^/:]+):(\d+): (.*)$", ln)
        if m and not m.group(1).startswith(".benchmark_lib") and m.group(1) != "benchmark_lib.sh":
            return f"{m.group(1)}:{m.group(2)}: {m.group(3)[:200]}".replace(root + "/", "")
    return lines[-1][:200] if lines else None


def _load_records(records_dir: Path, root: str) -> list[Record]:
    out: list[Record] = []
    files = sorted(records_dir.glob("*.json"),
                   key=lambda p: tuple(int(x) for x in p.stem.split("-")))
    for i, p in enumerate(files):
        try:
            raw: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.append(Record(
            tool=str(raw.get("tool", "?")),
            argv=tuple(str(a) for a in raw.get("argv", [])),
            env={str(k): str(v) for k, v in dict(raw.get("env", {})).items()},
            cwd=str(raw.get("cwd", "")),
            files={str(k): str(v) for k, v in dict(raw.get("files", {})).items()},
            seq=i,
        ))
    return out


def trace_script(
    repo: Path, script_rel: str, env: dict[str, str], *, timeout: float = 60.0,
    isolate: bool | None = None, keep: bool = False,
) -> TraceResult:
    """Run ``repo/script_rel`` in a fresh sandbox with exactly ``env`` (+ PATH/HOME)."""
    isolate = namespaces_available() if isolate is None else isolate
    work = Path(tempfile.mkdtemp(prefix="ixtrace-")).resolve()
    drop = not isolate and os.geteuid() == 0 and shutil.which("setpriv") is not None \
        and bool(_stub_python(for_nobody=True))
    py = _stub_python(for_nobody=drop)
    tmpfs_tmp = isolate and not py.startswith("/tmp/")
    inner = INNER_ROOT if tmpfs_tmp else str(work)
    try:
        _install(work, inner, repo, script_rel, isolate, tmpfs_tmp, py)
        full_env = {k: v for k, v in env.items() if k not in ("PATH", "HOME", "PWD")}
        full_env.update({
            "PATH": f"{inner}/.ixtrace/bin:{BASE_PATH}", "HOME": inner, "PWD": inner,
            "LANG": "C.UTF-8", "TMPDIR": "/tmp" if tmpfs_tmp else inner,
        })
        cmd = ["bash", "--noprofile", "--norc", str(work / ".ixtrace" / "enter.sh"), script_rel]
        if isolate:
            cmd = [*UNSHARE, *cmd]
        elif drop:
            # no namespaces but root: run as nobody, owning only the sandbox directory
            _chown_tree(work, NOBODY)
            cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                   "--", *cmd]
        if shutil.which("prlimit"):
            cmd = ["prlimit", f"--fsize={MAX_FILE_SIZE}", "--core=0", "--", *cmd]
        out_p, err_p = work / ".ixtrace" / "stdout", work / ".ixtrace" / "stderr"
        start = time.monotonic()
        timed_out = False
        with out_p.open("wb") as out, err_p.open("wb") as err:
            proc = subprocess.Popen(cmd, cwd=work, env=full_env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, start_new_session=True)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        seconds = time.monotonic() - start
        rc_file = work / ".ixtrace" / "rc"
        rc: int | None
        try:
            rc = int(rc_file.read_text().strip())
        except (OSError, ValueError):
            rc = None if timed_out else proc.returncode
        stdout, stderr = _tail(out_p), _tail(err_p)
        res = TraceResult(
            script=script_rel, env=dict(env), root=inner,
            isolation="namespaces" if isolate else "basic", returncode=rc,
            timed_out=timed_out, seconds=seconds,
            records=_load_records(work / ".ixtrace" / "records", inner),
            stdout_tail=stdout, stderr_tail=stderr,
            last_line=_last_line(_tail(work / ".ixtrace" / "xtrace.log", 20000), inner),
        )
        if rc == 97:
            res.events.append("sandbox setup failed")
        if timed_out:
            res.events.append(f"killed after the {timeout:g}s timeout")
        for pat, what in CONTAINED_PATTERNS:
            if pat in stderr and what not in res.events:
                res.events.append(what)
        for r in res.records:
            if r.tool in ("curl", "wget", "git", "ssh", "scp", "rsync", "nc"):
                what = f"network tool '{r.tool}' called (stubbed)"
                if what not in res.events:
                    res.events.append(what)
        return res
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
