"""Benchmark: start-up of ``ixtool -V`` and ``ixtool --help`` as processes, against a
bare ``python3 -c pass`` of the same interpreter (issue 26: each ≤ 4×).

Paired: every round runs the three commands one after the other, in a rotating order,
and the figure is the median of the per-round ratios (a busy machine slows all three of
a round alike).  The console script is the one next to this interpreter (the installed
``ixtool``), else ``python -m inferencex_tools``.  What a command imports at start-up:
``python -X importtime -m inferencex_tools -V``.

    python benchmarks/startup.py [--rounds N] [--max-ratio R]
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


def _time(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "COLUMNS": "80"})
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--max-ratio", type=float, default=4.0)
    args = ap.parse_args()
    exe = shutil.which("ixtool", path=str(Path(sys.executable).parent))
    ixtool = [exe] if exe else [sys.executable, "-m", "inferencex_tools"]
    cmds = {"python3 -c pass": [sys.executable, "-c", "pass"],
            "ixtool -V": [*ixtool, "-V"], "ixtool --help": [*ixtool, "--help"]}
    names = list(cmds)
    for argv in cmds.values():  # warm the page cache and the .pyc files
        _time(argv)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names[r % 3:] + names[:r % 3]:
            times[n].append(_time(cmds[n]))
    base = times["python3 -c pass"]
    worst = 0.0
    print(f"{'command':<16} {'median ms':>9} {'× pass (paired median)':>24}")
    for n in names:
        ratio = statistics.median(t / b for t, b in zip(times[n], base, strict=True))
        worst = max(worst, ratio)
        print(f"{n:<16} {statistics.median(times[n]) * 1000:>9.1f} {ratio:>24.2f}")
    verdict = "ok" if worst <= args.max_ratio else "over"
    print(f"{args.rounds} rounds; target ≤ {args.max_ratio}×: {verdict}")
    return 0 if worst <= args.max_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
