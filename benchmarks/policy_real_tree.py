"""Benchmark: `ixtool policy check` on the real InferenceX tree (843c6254f).

Extracts ../shared/corpus/inferencex-tree-843c6254f.tar.xz into a temporary git
repository and times, in one run:

* full — the whole check, no --registry (derived), every row of the sweep;
* base — ``--base HEAD~1`` on the tree's last commit: the base commit is the tree
         with the master configs of the history bundle's previous commit (the real
         change: one config block of dsv4-fp4-b200-vllm-agentic-mtp);
* one  — one trace of the seed recipe's script alone (the unit the check multiplies).

Prints traces, unique traces, wall and CPU seconds (this process and every child),
verdict counts per rule, and the ratios to the targets (full <= 60 s, base <= 10 s
wall on the 2-core machine) and to the one-trace unit.  No timed asserts.
Usage: python benchmarks/policy_real_tree.py [--jobs N] [--skip-full] [--skip-base]
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared"))
TREE = SHARED / "corpus" / "inferencex-tree-843c6254f.tar.xz"
BUNDLE = SHARED / "corpus" / "inferencex-history.bundle"
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@ixtool.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@ixtool.invalid"}
SEED = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def make_repo(tmp: Path) -> Path:
    """The tree as two commits: HEAD~1 with the bundle's previous master configs."""
    with tarfile.open(TREE) as tar:
        tar.extractall(tmp, filter="data")
    repo = tmp / "inferencex"
    hist = tmp / "history"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(hist)], env=GIT_ENV, check=True)
    git(repo, "init", "-q", "-b", "main")
    head = {p: (repo / p).read_bytes() for p in ("configs/nvidia-master.yaml",
                                                 "configs/amd-master.yaml")}
    for p in head:
        blob = subprocess.run(["git", "show", f"HEAD~1:{p}"], cwd=hist, env=GIT_ENV,
                              check=True, capture_output=True).stdout
        (repo / p).write_bytes(blob)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base: the tree with the previous master configs")
    for p, data in head.items():
        (repo / p).write_bytes(data)
    git(repo, "commit", "-q", "-am", "843c6254f")
    return repo


def run(repo: Path, jobs: int, base: str | None) -> tuple[float, float, object]:
    from inferencex_tools.policy.service import CheckRequest, run_check

    print(f"  (load before: {os.getloadavg()[0]:.1f})")
    c0, t0 = cpu(), time.perf_counter()
    res = run_check(CheckRequest(root=repo, jobs=jobs, base=base))
    return time.perf_counter() - t0, cpu() - c0, res


def report(name: str, wall: float, cpu_s: float, res: object, target: float) -> None:
    info = res.info  # type: ignore[attr-defined]
    rules = collections.Counter(f.rule for f in res.findings)  # type: ignore[attr-defined]
    rows = info.get("rows", [])
    single = [r for r in rows if not r["multinode"]]
    launched = sum(1 for r in single if r["server"])
    print(f"{name}: traces {info.get('traces', 0)}, unique traces "
          f"{info.get('unique-traces', 0)}, wall {wall:.1f} s, cpu {cpu_s:.1f} s "
          f"(x{wall / target:.2f} of the {target:.0f} s target), exit "
          f"{res.exit_code()}, load after {os.getloadavg()[0]:.1f}")  # type: ignore[attr-defined]
    stages = info.get("stages", {})
    if stages:  # per stage: jobs → traces run (what deduplication saved where)
        print("  stages: " + ", ".join(f"{k} {v[0]} jobs → {v[1]} traces"
                                       for k, v in stages.items()))
    print(f"  rows {len(rows)} (single-node {len(single)}, to a server command "
          f"{launched} = {100 * launched / max(1, len(single)):.1f}%)")
    print("  findings per rule: " + ", ".join(f"{k} {v}" for k, v in sorted(rules.items())))


def one_trace(repo: Path) -> tuple[float, float]:
    from inferencex_tools.sandbox import Session

    env = {"MODEL": "MiniMaxAI/MiniMax-M3-MXFP8", "TP": "8", "CONC": "4",
           "KV_OFFLOADING": "none", "TOTAL_CPU_DRAM_GB": "0", "RESULT_DIR":
           "/workspace/results", "DURATION": "3600", "PORT": "8888", "EVAL_ONLY": "false",
           "HF_HUB_CACHE": "/mnt/hf_hub_cache/", "RUNNER_NAME": "h200-dgxc-slurm_0",
           "IS_AGENTIC": "1"}
    with Session(repo) as s:
        s.trace(SEED, env, workspace_at=["/workspace"])  # start the worker
        c0, t0 = cpu(), time.perf_counter()
        n = 5
        for _ in range(n):
            s.trace(SEED, env, workspace_at=["/workspace"])
        wall = (time.perf_counter() - t0) / n
    return wall, (cpu() - c0) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=3 * (os.cpu_count() or 1))
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--skip-base", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="ixtool-bench-policy-") as tmp:
        repo = make_repo(Path(tmp))
        print(f"real tree at {repo} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}), "
              f"jobs {args.jobs}")
        w1, c1 = one_trace(repo)
        print(f"one trace of {SEED}: wall {w1:.3f} s, cpu {c1:.3f} s")
        if not args.skip_full:
            wall, cpu_s, res = run(repo, args.jobs, None)
            report("full check", wall, cpu_s, res, 60.0)
            uniq = res.info.get("unique-traces", 0)  # type: ignore[attr-defined]
            if uniq:
                print(f"  per unique trace: wall {wall / uniq:.3f} s, cpu {cpu_s / uniq:.3f} s"
                      f" (x{cpu_s / uniq / max(c1, 1e-9):.2f} of the one-trace unit)")
        if not args.skip_base:
            wall, cpu_s, res = run(repo, args.jobs, "HEAD~1")
            report("--base HEAD~1", wall, cpu_s, res, 10.0)
            print("  traced keys: " + ", ".join(
                sorted(res.info.get("base", {}).get("traced-keys", {}))))  # type: ignore


if __name__ == "__main__":
    main()
