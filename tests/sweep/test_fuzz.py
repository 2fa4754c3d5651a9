"""Mutated master configs never crash the generator: rows or one clear IxtoolError."""

from __future__ import annotations

import copy
import os
import random
from typing import Any

import pytest

from inferencex_tools.errors import IxtoolError
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.sweep.generate import SweepRequest, generate
from inferencex_tools.sweep.load import Configs, parse_runners
from inferencex_tools.sweep.service import validate_for_generation
from inferencex_tools.sweep.validate import MasterFile, ValidateInput, validate
from tests.conftest import ROOT

CASES = ROOT / "tests" / "cases" / "sweep"
RUNNERS = parse_runners((CASES / "runners.yaml").read_bytes(), "runners.yaml")
SEEDS = ["ok-single-node", "ok-multinode", "ok-agentic-dram"]
VALUES: list[Any] = ["8", "x", 4.0, 2.5, True, False, None, 0, -3, [], {}, [1, "2"],
                     {"name": "n"}, "image:x", 10**6]
REQUESTS = [SweepRequest(), SweepRequest(no_evals=True), SweepRequest(all_evals=True),
            SweepRequest(evals_only=True, min_conc=8, max_conc=32, max_tp=4, max_ep=2),
            SweepRequest(mode="test", config_keys=["*"], conc=[4, 8]),
            SweepRequest(runner_node_filter="_0", seq_lens=["8k1k"])]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


@pytest.mark.parametrize("seed", SEEDS)
def test_mutations_fail_cleanly(seed: str) -> None:
    base = load_safe((CASES / "config" / f"{seed}.yaml").read_bytes())
    paths = _paths(base)
    rng = random.Random(seed)
    for _ in range(int(os.environ.get("IXTOOL_FUZZ_N", "60"))):
        doc = copy.deepcopy(base)
        for path in rng.sample(paths, k=min(2, len(paths))):
            try:
                _set(doc, path, copy.deepcopy(rng.choice(VALUES)))
            except (KeyError, IndexError, TypeError):
                continue
        configs = Configs(data=doc, origin=dict.fromkeys(doc, "fuzz.yaml"))
        for req in REQUESTS:
            try:
                validate_for_generation(configs)
                generate(configs, RUNNERS, copy.deepcopy(req))
            except IxtoolError:
                pass
        # config validate never crashes either
        import yaml

        raw = yaml.safe_dump(doc).encode()
        validate(ValidateInput(masters=[MasterFile("fuzz.yaml", raw)]))
