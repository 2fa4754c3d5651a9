"""pytest plugin (``-p tests.parallel`` in pyproject's addopts): a whole-suite run — no
test paths, ids or ``-k`` given, e.g. ``pytest`` or ``pytest -m slow`` — is spread over the
machine's cores with pytest-xdist (``-n auto --maxprocesses 4 --dist loadscope``).

The suite is CPU-bound and serial (its wall time equals its CPU time on a quiet machine),
so two workers on a 2-core machine almost halve it.  ``loadscope`` keeps each module on
one worker, so module-scoped fixtures are built once; session fixtures (the extracted
real tree, the history clone) are built once per worker, hence at most 4 workers.

Longest first: a worker takes a new scope (module, or class) only when its current one is
almost done, so a long scope started last is the run's tail while the other workers idle.
The scopes marked ``costly(CPU_SECONDS)`` (a fixture that replays real history for many
minutes; the figure is a measured estimate of the scope's CPU) are handed out first, the
costliest first, then the rest by number of tests, as xdist's own reorder does
(``--no-loadscope-reorder``: the order is this plugin's).

Targeted runs (``pytest tests/merge``, ``-k``), ``-n``/``-p no:xdist``/``--pdb``/``-s``
given explicitly, and ``--collect-only`` stay as asked; without pytest-xdist installed
the suite runs serially as before.
"""

from __future__ import annotations

import os

import pytest

WHOLE_SUITE_PARALLEL = ["-n", "auto", "--maxprocesses", "4", "--dist", "loadscope",
                        "--no-loadscope-reorder"]


def wants_parallel(config: pytest.Config) -> bool:
    ns = config.known_args_namespace
    if os.environ.get("PYTEST_XDIST_WORKER") or not config.pluginmanager.hasplugin("xdist"):
        return False
    return (getattr(ns, "numprocesses", None) is None
            and not ns.file_or_dir and not ns.keyword
            and not (ns.usepdb or ns.collectonly or ns.capture == "no"))


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    if wants_parallel(early_config):
        args[:] = [*WHOLE_SUITE_PARALLEL, *args]


def _scope(item: pytest.Item) -> str:
    """xdist's loadscope unit: the class of a method, else the module."""
    return item.nodeid.rsplit("::", 1)[0] if item.cls is not None else item.nodeid.split("::")[0]


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: the counts are of what runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a parallel run's workers (whose collections the scheduler hands out in order):
    the costly scopes first (costliest first), then the scopes with more tests, else as
    collected."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    count: dict[str, int] = {}
    cost: dict[str, float] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        scope = _scope(item)
        count[scope] = count.get(scope, 0) + 1
        first.setdefault(scope, i)
        mark = item.get_closest_marker("costly")
        if mark is not None:
            cost[scope] = max(cost.get(scope, 0.0), float(mark.args[0]))
    items.sort(key=lambda it: (-cost.get(_scope(it), 0.0), -count[_scope(it)],
                               first[_scope(it)]))
