"""Benchmark: ``ixtool ci gate`` and ``ixtool sweep full`` as processes vs the YAML floor.

Floor = what any implementation must at least do, measured in this process with
PyYAML's C loader (``yaml.CSafeLoader``): for the gate, parsing the changelog at the
base and at the head plus the master configs at the head; for the full sweep, parsing
the master configs.  ixtool is measured as a whole process (interpreter start-up,
imports, git, every stage, output), best of N, on:

* ``history``: the last commit of ``../shared/corpus/inferencex-history.bundle``
  (base = its parent), a real PR that added changelog entries and changed a config;
* ``tree``: the real repository tree (``inferencex-tree-843c6254f.tar.xz``) as the head,
  its changelog without the last entry as the base (a PR adding that entry).

Prints the ratios; the targets are <= 2x the floor for both.

It also prints the ratio to a *lower bound of the reference tooling*: the reference
parses every file with PyYAML's pure-Python ``safe_load`` (spec SWEEP.md §1) and then
validates with pydantic; the bound counts only that parsing, so the printed
"x reference" figure overstates ixtool's share of the reference's time (issue targets:
<= 0.1x for the gate, <= 0.25x for the full sweep).

    python benchmarks/pr_gate.py [--repeat N] [--shared DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SHARED = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared"))
TARGET = 2.0
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@ixtool.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@ixtool.invalid"}


def git(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True).stdout


def best(fn: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def best_cpu(fn: Callable[[], object], n: int, *, child: bool) -> float:
    """Least CPU seconds (user+sys) of ``fn``: this process's, or its children's."""
    import resource

    who = resource.RUSAGE_CHILDREN if child else resource.RUSAGE_SELF
    times = []
    for _ in range(n):
        a = resource.getrusage(who)
        fn()
        b = resource.getrusage(who)
        times.append(b.ru_utime - a.ru_utime + b.ru_stime - a.ru_stime)
    return min(times)


def history_repo(shared: Path, tmp: Path) -> Path:
    dest = tmp / "history"
    subprocess.run(["git", "clone", "-q", str(shared / "corpus" / "inferencex-history.bundle"),
                    str(dest)], env=GIT_ENV, check=True)
    return dest


def tree_repo(shared: Path, tmp: Path) -> Path:
    with tarfile.open(shared / "corpus" / "inferencex-tree-843c6254f.tar.xz") as tar:
        tar.extractall(tmp / "tree", filter="data")
    dest = tmp / "tree" / "inferencex"
    changelog = dest / "perf-changelog.yaml"
    head = changelog.read_bytes()
    starts = [m.start() for m in re.finditer(rb"(?m)^- config-keys:", head)]
    git(dest, "init", "-q", "-b", "main")
    changelog.write_bytes(head[:starts[-1]])  # the base: without the last entry
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "base")
    changelog.write_bytes(head)
    git(dest, "commit", "-q", "-am", "Add the last entry")
    return dest


def measure(name: str, repo: Path, repeat: int) -> list[float]:
    import yaml

    def show(ref: str, path: str) -> bytes:
        return git(repo, "show", f"{ref}:{path}")

    masters = sorted(p.decode() for p in git(repo, "ls-tree", "--name-only", "HEAD",
                                              "configs/").split()
                     if re.fullmatch(rb"configs/[^/]*-master\.yaml", p))
    base_cl, head_cl = show("HEAD~1", "perf-changelog.yaml"), show("HEAD", "perf-changelog.yaml")
    head_masters = [show("HEAD", p) for p in masters]

    def floor_gate() -> None:
        for raw in (base_cl, head_cl, *head_masters):
            yaml.load(raw, Loader=yaml.CSafeLoader)

    def floor_full() -> None:
        for raw in head_masters:
            yaml.load(raw, Loader=yaml.CSafeLoader)

    def reference_gate() -> None:
        for raw in (base_cl, head_cl, *head_masters):
            yaml.load(raw, Loader=yaml.SafeLoader)

    def reference_full() -> None:
        for raw in head_masters:
            yaml.load(raw, Loader=yaml.SafeLoader)

    out = Path(tempfile.mkdtemp()) / "matrix.json"
    gate_cmd = [sys.executable, "-m", "inferencex_tools", "ci", "gate", "--base", "HEAD~1",
                "--head", "HEAD", "--label", "full-sweep-enabled", "--matrix-out", str(out),
                "--format", "json"]
    full_cmd = [sys.executable, "-m", "inferencex_tools", "sweep", "full", "--config-files",
                *masters, "--runner-config", "configs/runners.yaml"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}

    def run(cmd: list[str]) -> Callable[[], object]:
        def go() -> None:
            p = subprocess.run(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, check=False)
            if p.returncode not in (0, 1):
                raise SystemExit(f"{' '.join(cmd[3:6])} failed: {p.stderr.decode()[-500:]}")
        return go

    run(gate_cmd)()  # warm the OS caches
    f_gate, f_full = best(floor_gate, repeat), best(floor_full, repeat)
    t_gate, t_full = best(run(gate_cmd), repeat), best(run(full_cmd), repeat)
    r_gate, r_full = t_gate / f_gate, t_full / f_full
    c_gate = best_cpu(run(gate_cmd), repeat, child=True) / best_cpu(floor_gate, repeat,
                                                                    child=False)
    c_full = best_cpu(run(full_cmd), repeat, child=True) / best_cpu(floor_full, repeat,
                                                                    child=False)
    print(f"[{name}] floor gate (PyYAML C: changelog base+head, {len(masters)} masters): "
          f"{f_gate * 1000:7.1f} ms")
    print(f"[{name}] ixtool ci gate (process):                          "
          f"{t_gate * 1000:7.1f} ms  ratio {r_gate:.2f}x "
          f"({'OK' if r_gate <= TARGET else 'OVER'} target <= {TARGET}x)")
    print(f"[{name}] floor full (PyYAML C: masters):                    "
          f"{f_full * 1000:7.1f} ms")
    print(f"[{name}] ixtool sweep full (process):                       "
          f"{t_full * 1000:7.1f} ms  ratio {r_full:.2f}x "
          f"({'OK' if r_full <= TARGET else 'OVER'} target <= {TARGET}x)")
    print(f"[{name}] CPU-time ratios (user+sys, steadier on a busy machine): "
          f"gate {c_gate:.2f}x, full {c_full:.2f}x")
    ref_gate, ref_full = best(reference_gate, repeat), best(reference_full, repeat)
    print(f"[{name}] reference lower bound (pure-Python PyYAML parse only): gate "
          f"{ref_gate * 1000:.0f} ms, full {ref_full * 1000:.0f} ms; ixtool = "
          f"{t_gate / ref_gate:.2f}x reference gate (target <= 0.1x), "
          f"{t_full / ref_full:.2f}x reference full sweep (target <= 0.25x)")
    return [r_gate, r_full]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    args = ap.parse_args()
    if not (args.shared / "corpus").is_dir():
        print(f"corpus not found under {args.shared}", file=sys.stderr)
        return 2
    # An installed ixtool has byte-compiled modules (pip compiles on install); with
    # PYTHONDONTWRITEBYTECODE set, an editable checkout would recompile every module
    # in every process and the ratio would measure the compiler, not ixtool.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "inferencex_tools")],
                   check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="ixtool-bench-") as tmp:
        measure("history", history_repo(args.shared, Path(tmp)), args.repeat)
        measure("tree", tree_repo(args.shared, Path(tmp)), args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
