"""Benchmark: start-up of ``ixtool -V``, ``ixtool --help`` and every command's
``--help`` as processes, against a bare ``python3 -c pass`` of the same interpreter
(issue 26: ``-V``/``--help`` ≤ 4×; issue 35: a command's ``--help`` ≤ 2×).

Paired: every round runs the commands one after the other, in a rotating order, and the
figure is the median of the per-round ratios (a busy machine slows every command of a
round alike).  The console script is the one next to this interpreter (the installed
``ixtool``), else ``python -m inferencex_tools``; the processes may write .pyc files (as
an installed tool does).  What a command imports at start-up: ``python -X importtime -m
inferencex_tools -V``.

    python benchmarks/startup.py [--rounds N] [--max-ratio R] [--max-help-ratio R]
                                 [--commands]   (every command's --help too)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["COLUMNS"] = "80"


def _time(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env=ENV)
    return time.perf_counter() - t0


def _command_paths() -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from inferencex_tools.cli.roothelp import command_paths

    return command_paths()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--max-ratio", type=float, default=4.0)
    ap.add_argument("--max-help-ratio", type=float, default=2.0)
    ap.add_argument("--commands", action="store_true", help="every command's --help too")
    args = ap.parse_args()
    exe = shutil.which("ixtool", path=str(Path(sys.executable).parent))
    ixtool = [exe] if exe else [sys.executable, "-m", "inferencex_tools"]
    cmds = {"python3 -c pass": [sys.executable, "-c", "pass"],
            "ixtool -V": [*ixtool, "-V"], "ixtool --help": [*ixtool, "--help"]}
    budget = {"ixtool -V": args.max_ratio, "ixtool --help": args.max_ratio}
    for path in _command_paths() if args.commands else []:
        cmds[f"ixtool {path} --help"] = [*ixtool, *path.split(), "--help"]
        budget[f"ixtool {path} --help"] = args.max_help_ratio
    names = list(cmds)
    for argv in cmds.values():  # warm the page cache and the .pyc files
        _time(argv)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            times[n].append(_time(cmds[n]))
    base = times["python3 -c pass"]
    over = []
    width = max(len(n) for n in names)
    print(f"{'command':<{width}} {'median ms':>9} {'× pass (paired median)':>24}")
    for n in names:
        ratio = statistics.median(t / b for t, b in zip(times[n], base, strict=True))
        if n in budget and ratio > budget[n]:
            over.append(n)
        print(f"{n:<{width}} {statistics.median(times[n]) * 1000:>9.1f} {ratio:>24.2f}")
    print(f"{args.rounds} rounds, load {os.getloadavg()[0]:.1f}; targets: -V/--help "
          f"≤ {args.max_ratio}×, a command's --help ≤ {args.max_help_ratio}×: "
          + ("ok" if not over else "over: " + ", ".join(over)))
    return 0 if not over else 1


if __name__ == "__main__":
    sys.exit(main())
