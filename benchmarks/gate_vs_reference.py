"""Benchmark: ``ixtool ci gate`` (with and without its policy stage) against the reference
steps ``run-sweep.yml`` runs, on a fixed sample of real merged PRs (issue 35).

The sample: the newest ``--n`` (default 24) first-parent commits of the full-history
bundle (``inferencex-full-history-9aeaa75d8.bundle``) that carry a PR number and change
``perf-changelog.yaml`` — run-sweep.yml's ``paths`` filter: on other PRs the reference
runs nothing.  Each PR is replayed as in ``benchmarks/replay_prs.py``: a checkout of the
merge commit C, base ``C^1``, the label ``--label`` (default ``sweep-enabled``).

The reference is what that commit's own ``.github/workflows/run-sweep.yml`` runs for such
a PR, read from the file: every ``python3 utils/….py`` step that takes
``--changelog-file`` (``validate_perf_changelog.py`` in check-changelog, from 2026-06-18;
``process_changelog.py`` in setup, which starts the generator
``utils/matrix_logic/generate_sweep_configs.py``), with ``--changelog-file
perf-changelog.yaml --base-ref C^1 --head-ref C`` and the flag the step adds for the
label (``--trim-conc`` for ``sweep-enabled``), run from that checkout with this
interpreter as ``python3`` (it needs pydantic and PyYAML, as the workflow installs).
The GitHub API steps (``find_reusable_sweep_run.py``) and ``pip install`` are left out.

Each round runs, in a rotating order, the reference steps, ``ixtool ci gate --base C^1
--pr N --label L --format json`` and the same with ``--no-policy``, each in its own
process group, CPU (user + sys of the process and every descendant, ``wait4``) and wall
taken per run.  The figures are per-round paired ratios ixtool CPU / reference CPU: the
median and p95 over every round (``--rounds`` per PR), and the CPU spread of each side.

    nice -n 10 python benchmarks/gate_vs_reference.py [--n 24] [--rounds 1] \\
        [--ixtool /path/to/ixtool] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_prs as rp  # the full-history clone, merges, run_measured

WORKFLOW = ".github/workflows/run-sweep.yml"
STEP = re.compile(r'python3\s+"?(?:\$\{GITHUB_WORKSPACE\}/)?(?P<script>utils/[\w/.-]+\.py)"?'
                  r'(?P<rest>.*?)(?:"\$\{CMD\[@\]\}"|\n\s*\n|$)', re.S)
LABEL_FLAGS = {"sweep-enabled": "--trim-conc", "all-evals": "--all-evals",
               "evals-only": "--evals-only"}


@dataclass
class Round:
    pr: int
    sha: str
    date: str
    order: list[str]
    ref_cpu: float = 0.0
    ref_wall: float = 0.0
    ref_exits: list[int] = field(default_factory=list)
    ref_steps: list[str] = field(default_factory=list)
    gate_cpu: float = 0.0
    gate_wall: float = 0.0
    gate_exit: int = 0
    gate_stages: dict[str, str] = field(default_factory=dict)
    nopol_cpu: float = 0.0
    nopol_wall: float = 0.0
    nopol_exit: int = 0
    load: float = 0.0


def reference_steps(workflow: str, label: str) -> list[list[str]]:
    """The ``python3 utils/X.py --changelog-file …`` steps of run-sweep.yml, each with the
    flag its block adds for ``label`` (as ``CMD+=(--flag)`` under the label's variable)."""
    steps = []
    for m in STEP.finditer(workflow):
        if "--changelog-file" not in m.group("rest")[:400]:
            continue
        block = m.group("rest")
        argv = [m.group("script")]
        flag = LABEL_FLAGS.get(label)
        if flag and f"CMD+=({flag})" in block:
            argv.append(flag)
        steps.append(argv)
    return steps


def sample(repo: Path, n: int, prs: list[int] | None) -> list[rp.Merge]:
    touched = set(rp.git(repo, "log", "--first-parent", "--format=%H", rp.BRANCH, "--",
                         "perf-changelog.yaml").split())
    ms = [m for m in rp.merges(repo) if m.sha in touched]
    if prs:
        return [m for m in ms if m.pr in set(prs)]
    return ms[-n:]


def one_round(m: rp.Merge, repo: Path, ixtool: list[str], label: str, order: list[str],
              timeout: float) -> Round:
    rp.git(repo, "checkout", "-q", "-f", "--detach", m.sha)
    rp.git(repo, "clean", "-q", "-fdx")
    bindir = str(Path(sys.executable).parent)
    ref_env = {**rp.gate_env(), "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    steps = reference_steps((repo / WORKFLOW).read_text(), label)
    common = ["--changelog-file", "perf-changelog.yaml", "--base-ref", f"{m.sha}^1",
              "--head-ref", m.sha]
    gate = [*ixtool, "ci", "gate", "--base", f"{m.sha}^1", "--pr", str(m.pr),
            "--label", label, "--format", "json"]
    r = Round(m.pr, m.sha, m.date, order, load=round(os.getloadavg()[0], 2),
              ref_steps=[shlex.join(s) for s in steps])
    for what in order:
        if what == "reference":
            for s in steps:
                run = rp.run_measured([sys.executable, s[0], *common, *s[1:]], repo, ref_env,
                                      timeout)
                r.ref_cpu += run.cpu
                r.ref_wall += run.seconds
                r.ref_exits.append(run.code)
        elif what == "gate":
            run = rp.run_measured(gate, repo, rp.gate_env(), timeout)
            r.gate_cpu, r.gate_wall, r.gate_exit = run.cpu, run.seconds, run.code
            doc, _ = rp.gate_doc(run)
            r.gate_stages = dict((doc.get("info") or {}).get("stages") or {})
        else:
            run = rp.run_measured([*gate, "--no-policy"], repo, rp.gate_env(), timeout)
            r.nopol_cpu, r.nopol_wall, r.nopol_exit = run.cpu, run.seconds, run.code
    return r


def _p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[max(0, round(0.95 * len(s)) - 1)] if s else 0.0


def report(rounds: list[Round]) -> dict[str, object]:
    ok = [r for r in rounds if r.ref_cpu > 0]
    ratio = [r.gate_cpu / r.ref_cpu for r in ok]
    nopol = [r.nopol_cpu / r.ref_cpu for r in ok]
    print(f"{'PR':>6} {'date':10} {'ref CPU':>8} {'gate CPU':>9} {'×':>6} {'no-policy':>9} "
          f"{'×':>6}  ref exits / gate exit / policy stage")
    for r in rounds:
        x = r.gate_cpu / r.ref_cpu if r.ref_cpu else float("nan")
        y = r.nopol_cpu / r.ref_cpu if r.ref_cpu else float("nan")
        print(f"#{r.pr:>5} {r.date:10} {r.ref_cpu:8.2f} {r.gate_cpu:9.2f} {x:6.2f} "
              f"{r.nopol_cpu:9.2f} {y:6.2f}  {r.ref_exits} / {r.gate_exit} / "
              f"{r.gate_stages.get('policy', '?')}")
    out = {
        "rounds": len(rounds), "prs": len({r.pr for r in rounds}),
        "gate/reference": {"median": round(statistics.median(ratio), 3),
                           "p95": round(_p95(ratio), 3)} if ratio else None,
        "no-policy/reference": {"median": round(statistics.median(nopol), 3),
                                "p95": round(_p95(nopol), 3)} if nopol else None,
        "reference-cpu": {"median": round(statistics.median(r.ref_cpu for r in rounds), 2),
                          "p95": round(_p95([r.ref_cpu for r in rounds]), 2)},
        "gate-cpu": {"median": round(statistics.median(r.gate_cpu for r in rounds), 2),
                     "p95": round(_p95([r.gate_cpu for r in rounds]), 2),
                     "max": round(max(r.gate_cpu for r in rounds), 2)},
        "load": {"min": min(r.load for r in rounds), "max": max(r.load for r in rounds)},
    }
    print(json.dumps(out, indent=1))
    print("targets (issue 35): gate/reference median ≤ 0.5×, p95 ≤ 2×")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, default=rp.BUNDLE)
    ap.add_argument("--n", type=int, default=24, help="the newest N changelog PRs")
    ap.add_argument("--prs", type=int, nargs="*", help="exactly these PRs instead")
    ap.add_argument("--rounds", type=int, default=1, help="rounds per PR")
    ap.add_argument("--label", default="sweep-enabled")
    ap.add_argument("--ixtool", help="the ixtool command (default: this python -m ...)")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--workdir", type=Path, help="keep the clone here")
    ap.add_argument("--json", type=Path, help="write every round and the figures here")
    args = ap.parse_args()
    ixtool = shlex.split(args.ixtool) if args.ixtool else [sys.executable, "-m",
                                                           "inferencex_tools"]
    with tempfile.TemporaryDirectory(prefix="ixtool-gate-ref-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        repo = rp.clone(work, args.bundle)
        todo = sample(repo, args.n, args.prs)
        print(f"{len(todo)} PRs × {args.rounds} round(s), {os.cpu_count()} CPUs, load "
              f"{os.getloadavg()[0]:.1f}; ixtool: {shlex.join(ixtool)}", file=sys.stderr)
        kinds = ["reference", "gate", "no-policy"]
        one_round(todo[0], repo, ixtool, args.label, kinds, args.timeout)  # warm the caches
        rounds = []
        for i in range(args.rounds):
            for k, m in enumerate(todo):
                turn = (i * len(todo) + k) % 3
                r = one_round(m, repo, ixtool, args.label, kinds[turn:] + kinds[:turn],
                              args.timeout)
                rounds.append(r)
                print(f"[{len(rounds)}/{len(todo) * args.rounds}] #{m.pr} ref {r.ref_cpu:.2f}"
                      f" gate {r.gate_cpu:.2f} no-policy {r.nopol_cpu:.2f} CPU-s, load "
                      f"{r.load:.1f}", file=sys.stderr, flush=True)
    figures = report(rounds)
    if args.json:
        args.json.write_text(json.dumps({"figures": figures,
                                         "rounds": [asdict(r) for r in rounds]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
