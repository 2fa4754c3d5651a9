"""Benchmark: the policy check's traces against their bash floor, on the real tree (issue 35).

The real tree (``inferencex-tree-843c6254f.tar.xz``, as ``benchmarks/policy_real_tree.py``
builds it) is checked in-process with every ``Session.trace`` call recorded (script,
environment, workspace views, working directory, inline text; the trace's tool calls).
Then, in one run:

* **full check vs floor** — the whole check's CPU (this process and every child) against
  its floor: for every trace, a *bare* ``bash`` run of the same script (launcher,
  recipe, or the inline submission) with the same environment, and one ``/bin/true``
  per tool call the trace recorded;
* **one trace vs bare bash** — a random sample of the traces (``--one N``) run again,
  one at a time, in one warm session; each trace's CPU (this process plus the trace
  server and what it reaped, from ``/proc``) against the bare run of the same script:
  the median and p95 of the per-trace ratios.

A bare run: ``bash SCRIPT`` as user nobody in a new network namespace, the repository
tree itself (read-only to nobody) at the trace's workspace paths (the environment's
absolute paths moved as the sandbox's basic mode moves them, below a fresh directory);
every tool the sandbox stubs is ``/bin/true`` on ``PATH``, except the tools that end a
launcher's trace (``srun``, ``docker``, …), which end the bare run too when they are
handed a script (a two-line ``sh``); real coreutils otherwise; the benchmark library
unshimmed.  Its CPU is the ``wait4`` figure of that process tree.  A bare run that
takes more than ``--bare-timeout`` seconds (a wait loop a stub cannot satisfy) is
left out of the medians and counted; a repeated trace is run bare once.  A ``/bin/true``
answer (an empty job id, an empty model path) can end a bare run early where the
sandbox's stub answered: the floor is a lower bound, and the count of such runs is
printed.

    nice -n 10 python benchmarks/trace_floor.py [--jobs 2] [--one 80] [--seed 35]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import policy_real_tree as prt  # the real tree as a git repository, cpu()

ROOT = prt.ROOT
sys.path.insert(0, str(ROOT))
NOBODY = 65534
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
STOP = "#!/bin/sh\ncase \" $* \" in *.sh\\ *|*' bash '*|*' -c '*) kill -KILL \"$PPID\" ;; esac\n"
CLK = os.sysconf("SC_CLK_TCK")


@dataclass
class Call:
    """One Session.trace call of the check and what it recorded."""
    script: str
    env: dict[str, str]
    workspace_at: list[Any]
    cwd: str | None
    inline: str | None
    stop: tuple[str, ...] = ()
    tools: int = 0
    returncode: int | None = None
    bare_cpu: float | None = None
    bare_exit: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def record_traces(calls: list[Call]) -> Any:
    """Wrap Session.trace so that every call is recorded (returns the undo)."""
    from inferencex_tools.sandbox import trace as tr

    real = tr.Session.trace
    lock = threading.Lock()

    def trace(self: Any, script: str, env: Any, **kw: Any) -> Any:
        res = real(self, script, env, **kw)
        call = Call(script, dict(env), list(kw.get("workspace_at") or ()), kw.get("cwd"),
                    kw.get("inline"), tuple(kw.get("stop") or ()), tools=len(res.records),
                    returncode=res.returncode)
        with lock:
            calls.append(call)
        return res

    tr.Session.trace = trace  # type: ignore[method-assign]
    return lambda: setattr(tr.Session, "trace", real)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out.extend(int(x) for x in fh.read().split())
    return out


def _stat_cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of a live process, in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / CLK


def tree_cpu() -> float:
    """This process, its reaped children, and every live descendant (with what each
    reaped): the CPU of everything this process started."""
    total = prt.cpu()
    todo = _children(os.getpid())
    while todo:
        pid = todo.pop()
        total += _stat_cpu(pid)
        todo.extend(_children(pid))
    return total


class Floor:
    """Bare bash runs of traced scripts (see the module's doc)."""

    def __init__(self, repo: Path, work: Path, timeout: float) -> None:
        from inferencex_tools.sandbox import _stubs

        self.repo, self.work, self.timeout = repo, work, timeout
        self.bin = work / "bin"
        self.bin.mkdir(parents=True)
        stop = self.bin / ".stop"
        stop.write_text(STOP)
        stop.chmod(0o755)
        for tool in _stubs.ALL_TOOLS:
            if tool == "sed":  # (real sed: the sandbox's own front runs it too)
                continue
            target = ".stop" if tool in ("srun", "docker", "podman", "sbatch", "srtctl") \
                else "/bin/true"
            os.symlink(target, self.bin / tool)
        work.chmod(0o755)
        self._n = 0
        self.true_cpu = self._true_cost()
        # what starting a bare run costs before bash (the fork's set-up, the namespaces):
        # taken off every bare run, so that its figure is bash's own
        self.start_cpu = min(self._wait(["/bin/true"], str(self.work),
                                        {"PATH": "/usr/bin:/bin"})[1] for _ in range(7))

    def _true_cost(self, n: int = 400) -> float:
        """CPU of one fork + exec of /bin/true from bash (a loop of n, minus the loop)."""
        def loop(body: str) -> float:
            return self._wait(["/bin/bash", "-c", f"for ((i=0;i<{n};i++)); do {body}; done"],
                              str(self.work), {"PATH": "/usr/bin:/bin"})[1]
        best = min(loop("/bin/true") - loop(":") for _ in range(3))
        return max(best, 0.0) / n

    def _wait(self, argv: list[str], cwd: str, env: dict[str, str]) -> tuple[int, float]:
        libc = ctypes.CDLL(None, use_errno=True)

        def drop() -> None:  # own network, own /tmp and /dev/shm; then nobody
            if libc.unshare(CLONE_NEWNET | CLONE_NEWNS) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
            for d in (b"/tmp", b"/dev/shm"):
                if libc.mount(b"tmpfs", d, b"tmpfs", 0, b"mode=1777") != 0:
                    raise OSError(ctypes.get_errno(), "mount tmpfs")
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)

        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=drop, process_group=0)
        timer = threading.Timer(self.timeout, lambda: _kill(p.pid))
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        code = -1 if timer.finished.is_set() and p.returncode < 0 else p.returncode
        return code, ru.ru_utime + ru.ru_stime

    def run(self, c: Call) -> tuple[int, float]:
        from inferencex_tools.sandbox.trace import _local, localize

        self._n += 1
        fs = self.work / f"r{self._n}"
        for d in ("fs", "home", "tmp"):
            (fs / d).mkdir(parents=True)
        shutil.chown(fs, NOBODY, NOBODY)
        for d in fs.iterdir():
            shutil.chown(d, NOBODY, NOBODY)
        mounts = []
        for b in c.workspace_at:
            path, sub = (b, "") if isinstance(b, str) else b
            mounts.append((path.rstrip("/") or "/", str(self.repo / sub.strip("/"))))
        ms = sorted(mounts, key=lambda m: -len(m[0]))
        env = localize(c.env, fs_root=str(fs / "fs"), mounts=mounts)
        env.update({"PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(fs / "home"),
                    "TMPDIR": str(fs / "tmp"), "LANG": "C.UTF-8"})
        cwd = _local(c.cwd, str(fs / "fs"), ms) if c.cwd else (ms[-1][1] if ms else str(self.repo))
        if c.inline is not None:
            script = fs / "inline.sh"
            script.write_text(c.inline)
            target = str(script)
        else:
            target = _local(c.script, str(fs / "fs"), ms) if c.script.startswith("/") \
                else c.script
        if not Path(cwd).is_dir():
            cwd = str(self.repo)
        try:
            code, cpu = self._wait(["/bin/bash", target], cwd, env)
            return code, max(0.0, cpu - self.start_cpu)
        finally:
            shutil.rmtree(fs, ignore_errors=True)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[max(0, round(0.95 * len(s)) - 1)] if s else 0.0


def one_traces(repo: Path, calls: list[Call], floor: Floor) -> list[tuple[float, float]]:
    """Each sampled trace again, alone, in one warm session: (its CPU, its bare CPU)."""
    from inferencex_tools.sandbox import Session

    out = []
    with Session(repo) as s:
        c0 = calls[0]
        s.trace(c0.script, c0.env, workspace_at=c0.workspace_at, cwd=c0.cwd, inline=c0.inline)
        for c in calls:
            t0 = tree_cpu()
            s.trace(c.script, c.env, workspace_at=c.workspace_at, cwd=c.cwd, inline=c.inline,
                    stop=c.stop)
            time.sleep(0.05)  # the server's reaping of the trace's processes lands
            ix = tree_cpu() - t0
            if c.bare_cpu is not None:
                out.append((ix, c.bare_cpu))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="the check's parallel traces")
    ap.add_argument("--one", type=int, default=80, help="traces in the one-trace sample")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--bare-timeout", type=float, default=1.0,
                    help="seconds; a wait loop on a /bin/true stub spins until then")
    ap.add_argument("--config-keys", nargs="*", help="only these keys (a quick look)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("the bare runs need root (to run them as nobody in their own network "
              "namespace)", file=sys.stderr)
        return 2
    from inferencex_tools.policy.service import CheckRequest, run_check

    # not below /tmp: the bare runs get their own /tmp
    with tempfile.TemporaryDirectory(prefix="ixtool-bench-floor-", dir="/var/tmp") as tmp_:
        tmp = Path(tmp_)
        tmp.chmod(0o755)
        repo = prt.make_repo(tmp)
        calls: list[Call] = []
        undo = record_traces(calls)
        load0 = os.getloadavg()[0]
        c0, t0 = tree_cpu(), time.perf_counter()
        res = run_check(CheckRequest(root=repo, jobs=args.jobs, base=None,
                                     config_keys=args.config_keys or None))
        wall, check_cpu = time.perf_counter() - t0, tree_cpu() - c0
        undo()
        print(f"full check: {len(calls)} traces, wall {wall:.1f} s, CPU {check_cpu:.1f} s, "
              f"exit {res.exit_code()}, load {load0:.1f} → {os.getloadavg()[0]:.1f}")
        floor = Floor(repo, tmp / "floor", args.bare_timeout)
        b0 = time.perf_counter()
        seen: dict[str, tuple[int, float]] = {}
        for c in calls:  # a repeated trace (same script, env, views) is run bare once
            key = repr((c.script, sorted(c.env.items()), c.workspace_at, c.cwd, c.inline))
            if key not in seen:
                seen[key] = floor.run(c)
            c.bare_exit, cpu = seen[key]
            c.bare_cpu = cpu if c.bare_exit != -1 else None
        timed_out = sum(1 for c in calls if c.bare_cpu is None)
        measured = [c for c in calls if c.bare_cpu is not None]
        bare = sum(c.bare_cpu or 0.0 for c in measured) * len(calls) / max(1, len(measured))
        trues = sum(c.tools for c in calls) * floor.true_cpu
        floor_cpu = bare + trues
        print(f"floor: bare bash runs {bare:.1f} CPU-s ({len(measured)} runs, "
              f"{timed_out} over {args.bare_timeout:.0f} s left out and extrapolated; "
              f"{time.perf_counter() - b0:.0f} s wall) + {sum(c.tools for c in calls)} tool "
              f"calls × /bin/true {floor.true_cpu * 1000:.2f} ms = {floor_cpu:.1f} CPU-s")
        med = statistics.median(c.bare_cpu or 0 for c in measured)
        p95 = _p95([c.bare_cpu or 0 for c in measured])
        print(f"  bare runs: median {med * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms; "
              f"{sum(1 for c in measured if c.bare_exit and not c.returncode)} of "
              f"{len(measured)} end with an error where the trace ran to its end (a "
              f"/bin/true answer ends them early: the floor is a lower bound)")
        print(f"full check / floor: {check_cpu / floor_cpu:.2f}× (target: the check ≤ 40 "
              f"CPU-s; per trace {check_cpu / max(1, len(calls)) * 1000:.0f} ms vs bare "
              f"{bare / max(1, len(calls)) * 1000:.1f} ms)")
        rnd = random.Random(args.seed)
        sample = rnd.sample(measured, min(args.one, len(measured)))
        pairs = one_traces(repo, sample, floor)
        ratios = [ix / max(b, 1e-4) for ix, b in pairs]
        print(f"one trace vs bare bash ({len(pairs)} traces, seed {args.seed}): trace CPU "
              f"median {statistics.median(ix for ix, _ in pairs) * 1000:.0f} ms, bare "
              f"{statistics.median(b for _, b in pairs) * 1000:.1f} ms; per-trace ratio "
              f"median {statistics.median(ratios):.1f}×, p95 {_p95(ratios):.1f}× "
              f"(target ≤ 2×); load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
