"""Benchmark: the event-driven fast path of ``load_safe`` (``io/yamlio.py::_fast_safe``)
against ruamel's own safe constructor (the path every fallback takes), on the real
master configs, runners.yaml and the changelog.

Paired: each round times both, in alternating order, on the same texts in the same
process (the machine's load hits both alike); the median of the per-round ratios is the
figure.  The fast path must stay well ahead (``--max-ratio``, default 0.6): a split of
its loop that puts a call on every event shows up here.

    python benchmarks/yaml_fast.py [CORPUS_DIR] [--rounds N] [--max-ratio R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared")) / "corpus" / \
    "inferencex"
FILES = ("configs/nvidia-master.yaml", "configs/amd-master.yaml", "configs/runners.yaml",
         "perf-changelog.yaml")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--max-ratio", type=float, default=0.6)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from inferencex_tools.io import yamlio

    paths = [args.corpus / f for f in FILES]
    if not all(p.is_file() for p in paths):
        print(f"corpus not found under {args.corpus}", file=sys.stderr)
        return 2
    texts = [p.read_text(encoding="utf-8") for p in paths]
    limits = yamlio.DEFAULT_LIMITS

    def fast() -> float:
        t0 = time.perf_counter()
        for t in texts:
            yamlio._fast_safe(t, limits)
        return time.perf_counter() - t0

    def full() -> float:
        t0 = time.perf_counter()
        for t in texts:
            yamlio._load("safe", t, "x", limits, fast=False)
        return time.perf_counter() - t0

    for t in texts:  # the same values, or the comparison means nothing
        assert yamlio._fast_safe(t, limits) == yamlio._load("safe", t, "x", limits,
                                                            fast=False)
    fast_t: list[float] = []
    full_t: list[float] = []
    for i in range(args.rounds):
        if i % 2:
            fast_t.append(fast())
            full_t.append(full())
        else:
            full_t.append(full())
            fast_t.append(fast())
    ratios = [a / b for a, b in zip(fast_t, full_t, strict=True)]
    ratio = statistics.median(ratios)
    print(f"fast path {statistics.median(fast_t) * 1000:.1f} ms, ruamel safe "
          f"{statistics.median(full_t) * 1000:.1f} ms (medians of {args.rounds} paired "
          f"rounds, {sum(len(t) for t in texts):,} characters); fast/full {ratio:.2f} "
          f"(target ≤ {args.max_ratio})")
    return 0 if ratio <= args.max_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
