#!/usr/bin/env python3
"""Long fuzzing run over every harness of ``tests/fuzz/harness.py``.

    python benchmarks/fuzz_long.py --minutes 8 [--jobs 2] [--harness NAME ...]

Each harness gets an equal share of ``minutes × jobs`` wall-clock time in a worker
process whose address space is capped (``--memory-gib``, so unbounded memory shows
up as a MemoryError escape) and whose inputs each have a time limit (a hang is an
escape).  Inputs come from two generators, alternated in batches:

* hypothesis (structure-aware strategies, random seeds);
* a plain mutation loop (seed corpus + YAML-aware byte mutations), much faster.

Prints, per harness, the inputs tried, results, clean ixtool errors and escapes;
escaping inputs are written to ``--out`` (default ``$TMPDIR/ixtool-fuzz-escapes``).
Exit status: 0 when nothing escaped, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BATCH = 150  # hypothesis examples per batch (time is checked between batches)


def _raw_args(name: str, rng: random.Random, pool: list[bytes]) -> tuple[Any, ...] | None:
    """A fast non-hypothesis input for ``name`` (None: harness has no raw mode)."""
    from tests.fuzz.harness import REPO, mutate

    def one() -> bytes:
        base = rng.choice(pool)
        ops = [(rng.randrange(10), rng.randrange(1 << 20), rng.randrange(1 << 16),
                rng.randrange(256)) for _ in range(rng.randrange(1, 9))]
        return mutate(base, ops, pool)

    opts = {"pr": rng.choice([None, 17, 4242]), "master_keys": None, "repo": REPO}
    if name in ("yaml_safe", "yaml_rt", "changelog_parse"):
        return (one(),)
    if name == "changelog_standalone":
        return (one(), opts)
    if name in ("changelog_change", "changelog_fix", "changelog_canonicalize"):
        base = rng.choice(pool)
        head = base + rng.choice([b"\n", b"", b"\n\n"]) + one()
        if rng.randrange(3) == 0:
            head = one()
        return ((base, head), opts)
    if name in ("sweep_generate", "config_validate"):
        from tests.fuzz.harness import master_templates

        tpl = rng.choice(master_templates())
        data = mutate(json.dumps(tpl).encode(), [
            (rng.randrange(10), rng.randrange(1 << 20), rng.randrange(1 << 16),
             rng.randrange(256)) for _ in range(rng.randrange(1, 5))], pool)
        return (data, {}) if name == "sweep_generate" else (data,)
    return None


def _worker(task: tuple[str, float, int, int, str, float]) -> dict[str, Any]:
    name, seconds, seed, mem_gib, out_dir, per_input = task
    if mem_gib > 0:
        cap = mem_gib * (1 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from tests.fuzz.harness import HARNESSES, run_one, seeds

    h = next(x for x in HARNESSES if x.name == name)
    pool = seeds()
    rng = random.Random(seed)
    stats = {"name": name, "inputs": 0, "result": 0, "clean-error": 0, "escape": 0,
             "hypothesis": 0, "raw": 0, "escapes": []}
    deadline = time.monotonic() + seconds

    def record(args: tuple[Any, ...], how: str) -> None:
        out = run_one(h.target, args, per_input)
        stats["inputs"] += 1
        stats[how] += 1
        stats[out.kind] += 1
        if out.kind == "escape" and len(stats["escapes"]) < 20:
            n = len(stats["escapes"])
            path = Path(out_dir) / f"{name}-{seed}-{n}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{out.detail}\n\ninput:\n{args!r}\n", encoding="utf-8")
            stats["escapes"].append(f"{out.detail.splitlines()[0]} ({path})")

    batch = 0
    while time.monotonic() < deadline:
        batch += 1

        @hseed(rng.randrange(1 << 30))
        @settings(max_examples=BATCH, database=None, deadline=None, derandomize=False,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(args=h.strategy)
        def _batch(args: tuple[Any, ...]) -> None:
            if time.monotonic() < deadline:
                record(args, "hypothesis")

        _batch()
        # the raw mutation loop: as long again as the hypothesis batch took, at most
        t_raw = min(deadline, time.monotonic() + 3.0)
        while time.monotonic() < t_raw:
            args = _raw_args(name, rng, pool)
            if args is None:
                break
            record(args, "raw")
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=8.0, help="wall-clock budget")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--harness", action="append", help="only these harnesses")
    ap.add_argument("--seed", type=int, default=None, help="base random seed")
    ap.add_argument("--memory-gib", type=int, default=4, help="address-space cap per worker")
    ap.add_argument("--per-input", type=float, default=20.0, help="seconds before a hang")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "ixtool-fuzz-escapes"),
                    help="where escaping inputs go (default: $TMPDIR/ixtool-fuzz-escapes)")
    args = ap.parse_args(argv)

    from tests.fuzz.harness import HARNESSES, available

    names = [h.name for h in HARNESSES if available(h)
             and (not args.harness or h.name in args.harness)]
    if not names:
        print("no harness selected", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    share = args.minutes * 60 * max(1, args.jobs) / len(names)
    tasks = [(n, share, seed + i, args.memory_gib, args.out, args.per_input)
             for i, n in enumerate(names)]
    print(f"fuzz_long: {len(names)} harnesses, {share:.0f} s each, {args.jobs} jobs, "
          f"seed {seed}", flush=True)
    t0 = time.monotonic()
    ctx = mp.get_context("spawn")
    with ctx.Pool(max(1, args.jobs), maxtasksperchild=1) as pool:
        results = pool.map(_worker, tasks, chunksize=1)
    total = sum(r["inputs"] for r in results)
    escapes = sum(r["escape"] for r in results)
    print(f"{'harness':28} {'inputs':>9} {'hypo':>8} {'raw':>8} {'result':>8} "
          f"{'clean-err':>9} {'escape':>6}")
    for r in results:
        print(f"{r['name']:28} {r['inputs']:>9,} {r['hypothesis']:>8,} {r['raw']:>8,} "
              f"{r['result']:>8,} {r['clean-error']:>9,} {r['escape']:>6}")
        for e in r["escapes"]:
            print(f"    ESCAPE {e}")
    print(f"{'total':28} {total:>9,}   escapes: {escapes}   "
          f"({time.monotonic() - t0:.0f} s wall)")
    return 1 if escapes else 0


if __name__ == "__main__":
    sys.exit(main())
