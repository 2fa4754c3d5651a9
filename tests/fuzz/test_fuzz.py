"""Short-budget fuzzing (CI): every harness of ``harness.py`` with a fixed example count.

Deterministic (``derandomize=True``, no example database) so CI is reproducible.
Each harness runs twice over: ``test_fuzz_<name>_smoke`` (1/8 of the budget, in the
default ``pytest``) and ``test_fuzz_<name>`` (the whole budget, ``slow``: CI's second
step).  Scale the budgets with ``IXTOOL_FUZZ_SCALE`` (e.g. 10 locally); the long run is
``benchmarks/fuzz_long.py --minutes N``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.harness import HARNESSES, Harness, available, check

SCALE = float(os.environ.get("IXTOOL_FUZZ_SCALE", "1"))

# examples per harness (~4,100 in all), sized so the slow tests take 40–60 s on 2 cores
BUDGET = {
    "yaml_safe": 600,
    "yaml_rt": 500,
    "changelog_parse": 600,
    "changelog_standalone": 500,
    "changelog_change": 400,
    "changelog_fix": 300,
    "changelog_canonicalize": 200,
    "changelog_resolve": 200,
    "cli_changelog_validate": 160,
    "sweep_generate": 200,
    "config_validate": 120,
    "ci_plan": 300,
    "cli_ci_plan": 60,
}


SMOKE = 8  # the smoke tests run 1/SMOKE of the budget


def _make(h: Harness, *, smoke: bool) -> Callable[..., None]:
    n = max(1, int(BUDGET.get(h.name, 100) * SCALE / (SMOKE if smoke else 1)))

    @pytest.mark.skipif(not available(h), reason=f"{h.needs} not available yet")
    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(args=h.strategy)
    def test(args: tuple[Any, ...]) -> None:
        check(h.target, *args)

    test.__name__ = f"test_fuzz_{h.name}" + ("_smoke" if smoke else "")
    test.__doc__ = f"{h.name}: every input ends in a result or a clean IxtoolError."
    return test if smoke else pytest.mark.slow(test)


for _h in HARNESSES:
    globals()[f"test_fuzz_{_h.name}"] = _make(_h, smoke=False)
    globals()[f"test_fuzz_{_h.name}_smoke"] = _make(_h, smoke=True)


def test_seed_corpus_replays_clean() -> None:
    """Every seed (committed + shared fragments) through every single-input target."""
    from tests.fuzz.harness import (
        REPO,
        seeds,
        t_changelog_change,
        t_changelog_fix,
        t_changelog_parse,
        t_changelog_standalone,
        t_yaml_rt,
        t_yaml_safe,
    )

    pool = seeds()
    assert len(pool) >= 40
    opts = {"pr": 12, "master_keys": ["a"], "repo": REPO}
    for data in pool:
        check(t_yaml_safe, data)
        check(t_yaml_rt, data)
        check(t_changelog_parse, data)
        check(t_changelog_standalone, data, opts)
        check(t_changelog_change, (pool[0], pool[0] + b"\n" + data), opts)
        check(t_changelog_fix, (data, data + b"\n" + pool[0]), opts)


def test_escape_is_detected() -> None:
    """The property check itself can fail: a non-ixtool exception is an escape."""
    from tests.fuzz.harness import Escape, run_one

    def boom(_: bytes) -> None:
        raise KeyError("x")

    assert run_one(boom, (b"",)).kind == "escape"
    with pytest.raises(Escape):
        check(boom, b"")
