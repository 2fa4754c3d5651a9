"""PO416: an AL that matches a curve differing only in draft sampling, when the launch
cannot show its sampling (ATOM has no draft-sampling flag), is a warning to confirm — not
PO406 curve mixing, which needs the launch's sampling to be known (vLLM's JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.policy.check import _mismatch
from inferencex_tools.policy.engines import SpecFacts
from inferencex_tools.policy.store import open_store

ROOT = Path(__file__).resolve().parents[2]
DRAFT = "Inferact/Kimi-K3-DSpark"


def _emitted(corpus: Path, facts: SpecFacts) -> list[tuple[str, str]]:
    store = open_store(ROOT / "golden_al_distribution/registry.yaml",
                       corpus / "golden_al_distribution", root=ROOT)
    entry = store.registry.match("kimik3", facts.method, facts.draft, facts.sample)
    assert entry is not None and entry.draft_sample_method == facts.sample
    curve = store.curve_for(entry)[0]
    assert curve is not None
    out: list[tuple[str, str]] = []

    def emit(rule: Any, message: str, needle: str | None, **_: Any) -> None:
        out.append((rule.id, message))

    assert facts.k is not None
    _mismatch(facts, facts.k, "thinking_on", "test", entry, curve, store, emit, None)
    return out


def _probabilistic_al(corpus: Path, k: int) -> float:
    store = open_store(ROOT / "golden_al_distribution/registry.yaml",
                       corpus / "golden_al_distribution", root=ROOT)
    sib = store.registry.match("kimik3", "dspark", DRAFT, "probabilistic")
    assert sib is not None
    curve = store.curve_for(sib)[0]
    assert curve is not None
    value = curve.value("thinking_on", k)
    assert value is not None
    return value


@pytest.mark.parametrize(("engine", "known", "rule"), [
    ("atom", False, "PO416"),  # no sampling flag: cannot tell the two curves apart
    ("vllm", True, "PO406"),  # the JSON says default sampling: a probabilistic AL is mixing
])
def test_sampling_sibling(corpus: Path, engine: str, known: bool, rule: str) -> None:
    al = _probabilistic_al(corpus, 6)
    facts = SpecFacts(engine=engine, server="x", has_spec=True, method="dspark", draft=DRAFT,
                      k=6, sample=None, sample_known=known, synthetic=True, al=al,
                      raw=f"x={al}")
    got = _emitted(corpus, facts)
    assert [r for r, _ in got] == [rule], got
    if rule == "PO416":
        assert "names no draft sampling method" in got[0][1]
