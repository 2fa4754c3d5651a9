"""Benchmark: what one trace costs, against a bare ``bash`` run of the same scripts.

Extracts ../shared/corpus/inferencex-tree-843c6254f.tar.xz, runs ``policy check`` on a
sample of config keys once to learn the traces the check really runs (launcher stages,
benchmark scripts, static submissions: script, environment, working directory and the
paths at which the job sees the checkout), then replays each of them, interleaved:

* **trace** — ``Session.trace`` in one session (namespace mode when available): the CPU
  of ixtool's own process (its reading threads), of the trace server (setup, the
  read-recording file system) and of the traced processes;
* **bash**  — ``bash SCRIPT`` with the same environment, the checkout copied to a
  scratch directory standing for the job's paths, and every tool the sandbox stubs a
  link to ``/bin/true`` first on ``PATH`` (the floor: the shell's own work plus one
  ``true`` per tool call).

Prints per-trace CPU (median, p90, mean) of both, the median of the per-trace ratios
(issue 35's target: <= 2), the read-set sizes and the machine's load.  No timed asserts.
Usage: python benchmarks/trace_cost.py [--keys GLOB…] [--rounds N] [--limit N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
# IXTOOL_BENCH_CODE: another checkout's ixtool (e.g. main, for a before/after figure)
ROOT = Path(os.environ.get("IXTOOL_BENCH_CODE", HERE))
SHARED = Path(os.environ.get("IXTOOL_SHARED", HERE.parent / "shared"))
TREE = SHARED / "corpus" / "inferencex-tree-843c6254f.tar.xz"
KEYS = ("minimaxm3-fp8-h200-vllm-agentic-mtp", "dsv4-fp4-mi355x-vllm*", "dsv4-fp4-b200*",
        "qwen3.5-fp8-h200*", "glm5.2-fp4-b300*", "kimik3*mi355x*")
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@ixtool.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@ixtool.invalid"}


def make_repo(tmp: Path) -> Path:
    with tarfile.open(TREE) as tar:
        tar.extractall(tmp, filter="data")
    repo = tmp / "inferencex"
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "t")):
        subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True)
    return repo


def learn(repo: Path, keys: Iterable[str]) -> list[tuple[str, dict[str, str], dict[str, Any]]]:
    """The traces ``policy check`` runs for ``keys``: (script, env, keyword arguments)."""
    from inferencex_tools.policy.service import CheckRequest, run_check
    from inferencex_tools.sandbox import trace as tracemod

    seen: list[tuple[str, dict[str, str], dict[str, Any]]] = []
    real = tracemod.Session.trace

    def spy(self: Any, script: str, env: Any, **kw: Any) -> Any:
        seen.append((script, dict(env), dict(kw)))
        return real(self, script, env, **kw)

    tracemod.Session.trace = spy  # type: ignore[method-assign]
    try:
        run_check(CheckRequest(root=repo, config_keys=list(keys), jobs=1))
    finally:
        tracemod.Session.trace = real  # type: ignore[method-assign]
    return seen


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def proc_cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            f = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


class Bare:
    """``bash SCRIPT`` with the stubbed tools as ``/bin/true``, in a scratch copy."""

    def __init__(self, repo: Path, tmp: Path) -> None:
        from inferencex_tools.sandbox import _stubs

        self.bin = tmp / "bin"
        self.bin.mkdir()
        for tool in (*_stubs.ALL_TOOLS, "lmcache", "hipcc"):
            os.symlink(shutil.which("true") or "/bin/true", self.bin / tool)
        self.tmp = tmp
        self.repo = repo
        self.n = 0

    def run(self, script: str, env: dict[str, str], kw: dict[str, Any]) -> float:
        self.n += 1
        ws = self.tmp / f"ws{self.n}"
        shutil.copytree(self.repo, ws, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        fs = self.tmp / f"fs{self.n}"
        fs.mkdir()
        views = [v if isinstance(v, str) else v[0] for v in kw.get("workspace_at", ())]

        def local(v: str) -> str:
            for p in views:
                v = v.replace(p, str(ws))
            return v

        full = {k: local(v) for k, v in env.items()}
        full.update(PATH=f"{self.bin}:/usr/bin:/bin", HOME=str(fs), TMPDIR=str(fs))
        cwd = Path(local(kw.get("cwd") or (views[0] if views else str(ws))))
        if not cwd.is_dir():
            cwd = ws
        if kw.get("inline") is not None:
            (fs / "inline.sh").write_text(kw["inline"])
            script = str(fs / "inline.sh")
        c0 = cpu_children()
        subprocess.run(["bash", local(script)], cwd=cwd, env=full, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
                       check=False)
        used = cpu_children() - c0
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(fs, ignore_errors=True)
        return used


def sandboxed(session: Any, script: str, env: dict[str, str], kw: dict[str, Any]
              ) -> tuple[float, Any]:
    servers = [s.proc.pid for s in session._servers]
    s0 = sum(proc_cpu(p) for p in servers)
    c0, m0 = cpu_children(), cpu_self()
    tr = session.trace(script, env, **kw)
    servers = [s.proc.pid for s in session._servers]
    server = sum(proc_cpu(p) for p in servers) - s0
    traced = tr.cpu_seconds if tr.cpu_seconds is not None else cpu_children() - c0
    return (cpu_self() - m0) + server + traced, tr


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", nargs="*", default=list(KEYS))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--limit", type=int, default=60, help="distinct traces replayed")
    ap.add_argument("--reads-ab", action="store_true",
                    help="also replay in a session without the read-recording view")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from inferencex_tools.sandbox import Session

    with tempfile.TemporaryDirectory(prefix="ixtool-bench-trace-") as tmp:
        repo = make_repo(Path(tmp))
        print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; keys {args.keys}")
        seen = learn(repo, args.keys)
        uniq: dict[str, tuple[str, dict[str, str], dict[str, Any]]] = {}
        for s, e, kw in seen:
            uniq.setdefault(repr((s, sorted(e.items()), sorted(kw.items()))), (s, e, kw))
        todo = list(uniq.values())[:args.limit]
        print(f"traces the check ran: {len(seen)}, distinct {len(uniq)}, replayed "
              f"{len(todo)} x {args.rounds} rounds")
        bare = Bare(repo, Path(tmp))
        traced: list[list[float]] = [[] for _ in todo]
        floor: list[list[float]] = [[] for _ in todo]
        noreads: list[list[float]] = [[] for _ in todo]
        reads: list[int] = []
        known = 0
        with contextlib.ExitStack() as stack:
            session = stack.enter_context(Session(repo))
            other = None
            if args.reads_ab:
                other = stack.enter_context(Session(repo, record_reads=False))
            for s_ in (session, other):
                if s_ is not None:  # start the worker's server
                    s_.trace("benchmarks/benchmark_lib.sh", {})
            print(f"isolation {session.isolation}")
            t0 = time.perf_counter()
            for _ in range(args.rounds):
                for i, (s, e, kw) in enumerate(todo):
                    c, tr = sandboxed(session, s, e, kw)
                    traced[i].append(c)
                    floor[i].append(bare.run(s, e, kw))
                    if other is not None:
                        noreads[i].append(sandboxed(other, s, e, kw)[0])
                    if getattr(tr, "reads", None) is not None:
                        known += 1
                        reads.append(len(tr.reads.files) + len(tr.reads.listed)
                                     + len(tr.reads.missing))
            wall = time.perf_counter() - t0
        per_t = [min(x) for x in traced]
        per_b = [max(min(x), 1e-4) for x in floor]
        ratios = [t / b for t, b in zip(per_t, per_b, strict=True)]
        ms = 1000.0
        print(f"trace CPU per trace: median {statistics.median(per_t) * ms:.1f} ms, p90 "
              f"{pct(per_t, 0.9) * ms:.1f} ms, mean {statistics.mean(per_t) * ms:.1f} ms")
        print(f"bare bash CPU:       median {statistics.median(per_b) * ms:.1f} ms, p90 "
              f"{pct(per_b, 0.9) * ms:.1f} ms, mean {statistics.mean(per_b) * ms:.1f} ms")
        print(f"ratio trace/bash: median x{statistics.median(ratios):.2f}, p90 "
              f"x{pct(ratios, 0.9):.2f} (issue 35 target: median <= x2)")
        if args.reads_ab:
            per_n = [min(x) for x in noreads]
            diff = [t - n for t, n in zip(per_t, per_n, strict=True)]
            print(f"without the read-recording view: median {statistics.median(per_n) * ms:.1f}"
                  f" ms; recording costs median {statistics.median(diff) * ms:+.1f} ms per "
                  f"trace (mean {statistics.mean(diff) * ms:+.1f} ms)")
        if reads:
            print(f"read sets known for {known}/{len(todo) * args.rounds} traces; paths "
                  f"per trace median {statistics.median(reads):.0f}, max {max(reads)}")
        print(f"wall {wall:.1f} s; load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
