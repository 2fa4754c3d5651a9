"""pytest plugin (``-p tests.parallel`` in pyproject's addopts): a whole-suite run — no
test paths, ids or ``-k`` given, e.g. ``pytest`` or ``pytest -m slow`` — is spread over the
machine's cores with pytest-xdist (``-n auto --maxprocesses 4 --dist loadscope``).

The suite is CPU-bound and serial (its wall time equals its CPU time on a quiet machine),
so two workers on a 2-core machine almost halve it.  ``loadscope`` keeps each module on
one worker, so module-scoped fixtures are built once; session fixtures (the extracted
real tree, the history clone) are built once per worker, hence at most 4 workers.

Targeted runs (``pytest tests/merge``, ``-k``), ``-n``/``-p no:xdist``/``--pdb``/``-s``
given explicitly, and ``--collect-only`` stay as asked; without pytest-xdist installed
the suite runs serially as before.
"""

from __future__ import annotations

import os

import pytest

WHOLE_SUITE_PARALLEL = ["-n", "auto", "--maxprocesses", "4", "--dist", "loadscope"]


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
