"""Benchmark: `changelog validate` diff mode on the real corpus vs. a YAML floor.

Clones ../shared/corpus/inferencex-history.bundle, takes HEAD~1..HEAD, and times in
one run:

* floor   — parse base and head with PyYAML's C loader (``yaml.CSafeLoader``);
* core    — ixtool's pure diff-mode gate (``analyze_change``) on the same bytes,
            with the master-config keys of HEAD;
* service — the whole command path in-process (git reads via GitPython, merge-base,
            master configs at the head ref, analysis);
* cli     — ``ixtool changelog validate --base HEAD~1 --head HEAD`` as a subprocess;
* help    — ``ixtool --help`` as a subprocess (start-up cost, lazy imports).

Prints the best-of-N times and the ratios to the floor.  No timed asserts.

Then, against the reference (issue 35: diff mode ≤ 0.06× it): on the newest
``--ref-prs`` merged PRs of the full-history bundle that change ``perf-changelog.yaml``,
each round runs, in alternating order, the reference check-changelog step of that
commit (``python3 utils/validate_perf_changelog.py --changelog-file perf-changelog.yaml
--base-ref C^1 --head-ref C``, which runs ``process_changelog.py`` and the generator; it
needs pydantic and PyYAML in this interpreter) and ``ixtool changelog validate --base
C^1 --head C``, both as processes (CPU of each process tree from ``wait4``); the figure is
the median (and p95) of the per-round CPU ratios.  ``--ref-prs 0`` skips it.

Usage: python benchmarks/changelog_validate.py [--repeat N] [--ref-prs N] [--ref-rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared")) / "corpus" / \
    "inferencex-history.bundle"


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def against_reference(n_prs: int, rounds: int) -> None:
    """ixtool changelog validate vs the reference's check-changelog step (paired CPU)."""
    import importlib.util
    import statistics

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import replay_prs as rp

    if importlib.util.find_spec("pydantic") is None or not rp.BUNDLE.is_file():
        print("reference: skipped (needs pydantic and the full-history bundle)")
        return
    ixtool = shutil.which("ixtool") or str(Path(sys.executable).parent / "ixtool")
    with tempfile.TemporaryDirectory(prefix="ixtool-bench-clref-") as tmp:
        repo = rp.clone(Path(tmp), rp.BUNDLE)
        touched = set(rp.git(repo, "log", "--first-parent", "--format=%H", rp.BRANCH, "--",
                             "perf-changelog.yaml").split())
        prs = [m for m in rp.merges(repo) if m.sha in touched
               and rp._exists(repo, m.sha, "utils/validate_perf_changelog.py")][-n_prs:]
        env = {**rp.gate_env(),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        ratios, rows = [], []
        for m in prs:
            rp.git(repo, "checkout", "-q", "-f", "--detach", m.sha)
            ref = [sys.executable, "utils/validate_perf_changelog.py", "--changelog-file",
                   "perf-changelog.yaml", "--base-ref", f"{m.sha}^1", "--head-ref", m.sha]
            ix = [ixtool, "changelog", "validate", "--base", f"{m.sha}^1", "--head", m.sha]
            for r in range(rounds):
                got = {}
                for name in (("ref", "ix") if r % 2 else ("ix", "ref")):
                    run = rp.run_measured(ref if name == "ref" else ix, repo, env, 600.0)
                    got[name] = run
                ratios.append(got["ix"].cpu / max(got["ref"].cpu, 1e-6))
                rows.append((m.pr, got["ref"].cpu, got["ref"].code, got["ix"].cpu,
                             got["ix"].code))
    for pr, rc, re_, ic, ie in rows:
        print(f"  #{pr}: reference {rc * 1000:7.0f} ms CPU (exit {re_}), ixtool "
              f"{ic * 1000:6.0f} ms CPU (exit {ie}), {ic / max(rc, 1e-6):.3f}×")
    s = sorted(ratios)
    print(f"reference: {len(prs)} PRs × {rounds} rounds, ixtool changelog validate / "
          f"validate_perf_changelog.py CPU: median {statistics.median(s):.3f}×, p95 "
          f"{s[max(0, round(0.95 * len(s)) - 1)]:.3f}× (target ≤ 0.06×); load "
          f"{os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ref-prs", type=int, default=6)
    ap.add_argument("--ref-rounds", type=int, default=3)
    args = ap.parse_args()

    from inferencex_tools.changelog.configkeys import top_level_keys
    from inferencex_tools.changelog.service import ValidateRequest, run_validate
    from inferencex_tools.changelog.validate import Options, analyze_change

    tmp = Path(tempfile.mkdtemp(prefix="ixtool-bench-"))
    try:
        repo = tmp / "inferencex"
        subprocess.run(["git", "clone", "-q", str(BUNDLE), str(repo)], check=True)

        def show(ref: str, path: str) -> bytes:
            return subprocess.run(["git", "-C", str(repo), "show", f"{ref}:{path}"],
                                  check=True, capture_output=True).stdout

        base, head = show("HEAD~1", "perf-changelog.yaml"), show("HEAD", "perf-changelog.yaml")
        keys = [k for f in ("configs/amd-master.yaml", "configs/nvidia-master.yaml")
                for k in top_level_keys(show("HEAD", f).decode())]

        def floor() -> None:
            yaml.load(base, Loader=yaml.CSafeLoader)
            yaml.load(head, Loader=yaml.CSafeLoader)

        def core() -> None:
            a = analyze_change(base, head, "perf-changelog.yaml", Options(master_keys=keys))
            assert a.ok, [f.message for f in a.findings]

        cwd = os.getcwd()
        os.chdir(repo)

        def service() -> None:
            r = run_validate(ValidateRequest(path=Path("perf-changelog.yaml"), base="HEAD~1",
                                             head="HEAD"))
            assert r.ok

        ixtool = shutil.which("ixtool") or str(Path(sys.executable).parent / "ixtool")

        def cli() -> None:
            subprocess.run([ixtool, "changelog", "validate", "--base", "HEAD~1", "--head", "HEAD"],
                           check=True, capture_output=True)

        def python_start() -> None:
            subprocess.run([sys.executable, "-c", "pass"], check=True)

        def help_() -> None:
            subprocess.run([ixtool, "--help"], check=True, capture_output=True)

        core()  # warm caches (schema compile) once, like a real run does on first use
        t_floor = best(floor, args.repeat)
        t_core = best(core, args.repeat)
        t_service = best(service, args.repeat)
        t_cli = best(cli, max(3, args.repeat // 2))
        t_py = best(python_start, args.repeat)
        t_help = best(help_, args.repeat)
        os.chdir(cwd)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"corpus: {len(base):,} → {len(head):,} bytes (HEAD~1..HEAD of the history bundle)")
    print(f"floor   PyYAML C loader, base+head     {t_floor * 1e3:8.1f} ms   1.00×")
    print(f"core    analyze_change (pure)           {t_core * 1e3:8.1f} ms   "
          f"{t_core / t_floor:.2f}× floor (target ≤ 3×)")
    print(f"service run_validate (git + configs)    {t_service * 1e3:8.1f} ms   "
          f"{t_service / t_floor:.2f}× floor")
    print(f"cli     ixtool changelog validate       {t_cli * 1e3:8.1f} ms   "
          f"{t_cli / t_floor:.2f}× floor (incl. interpreter start {t_py * 1e3:.0f} ms)")
    print(f"help    ixtool --help                   {t_help * 1e3:8.1f} ms   (target < 150 ms)")
    if args.ref_prs:
        against_reference(args.ref_prs, args.ref_rounds)


if __name__ == "__main__":
    main()
