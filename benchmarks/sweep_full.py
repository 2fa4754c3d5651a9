"""Benchmark: ``ixtool sweep full`` over the real corpus vs. the YAML floor.

Floor = loading both master files with PyYAML's C loader (``yaml.CSafeLoader``),
the least any generator must do.  Measured in one process, best of N, each
ixtool run cold (its in-process parse cache cleared).  Prints the ratio; the
target is ≤ 2.5×.

    python benchmarks/sweep_full.py [CORPUS_DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared")) / "corpus" / \
    "inferencex"
TARGET = 2.5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import yaml

    from inferencex_tools.sweep import load
    from inferencex_tools.sweep.generate import SweepRequest, dumps
    from inferencex_tools.sweep.service import run_sweep

    masters = [args.corpus / "configs" / "amd-master.yaml",
               args.corpus / "configs" / "nvidia-master.yaml"]
    runners = args.corpus / "configs" / "runners.yaml"
    if not all(p.is_file() for p in [*masters, runners]):
        print(f"corpus not found under {args.corpus}", file=sys.stderr)
        return 2

    def floor() -> None:
        for p in masters:
            yaml.load(p.read_bytes(), Loader=yaml.CSafeLoader)

    n_rows = 0

    def ixtool() -> None:
        nonlocal n_rows
        load.clear_cache()
        m = run_sweep(SweepRequest(mode="full"), [str(p) for p in masters], str(runners))
        n_rows = len(m.rows)
        dumps(m.rows)

    def best(fn: object) -> float:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()  # type: ignore[operator]
            times.append(time.perf_counter() - t)
        return min(times)

    floor()
    ixtool()  # warm imports
    t_floor = best(floor)
    t_ix = best(ixtool)
    ratio = t_ix / t_floor
    print(f"floor  (PyYAML CSafeLoader, 2 master files): {t_floor * 1000:8.1f} ms")
    print(f"ixtool sweep full ({n_rows} rows, cold parse):  {t_ix * 1000:8.1f} ms")
    print(f"ratio: {ratio:.2f}x (target <= {TARGET}x) -> "
          f"{'OK' if ratio <= TARGET else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
