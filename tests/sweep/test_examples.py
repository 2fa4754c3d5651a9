"""The worked examples of SWEEP.md §9 (outputs produced by the reference)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inferencex_tools.sweep.generate import SweepRequest, generate
from inferencex_tools.sweep.load import merge_masters, parse_runners
from tests.conftest import ROOT

EX = ROOT / "tests" / "cases" / "sweep" / "examples"
RUNNERS = parse_runners((EX / "runners.yaml").read_bytes(), "runners.yaml")


def _gen(name: str, **kw: Any) -> list[dict[str, Any]]:
    configs = merge_masters([(name, (EX / f"{name}.yaml").read_bytes())])
    return generate(configs, RUNNERS, SweepRequest(**kw))


def _conc(rows: list[dict[str, Any]], tp: int) -> list[Any]:
    return [r["conc"] for r in rows if r["tp"] == tp and r["isl"] == 8192]


def test_example_a_default() -> None:
    rows = _gen("a")
    assert [(r["tp"], r["ep"], r["dp-attn"], r["conc"], r["max-model-len"], r["run-eval"])
            for r in rows] == [
        (4, 1, False, 4, 9472, False), (4, 1, False, 8, 9472, False),
        (4, 1, False, 16, 9472, False), (4, 1, False, 32, 9472, True),
        (4, 1, False, 48, 9472, True), (8, 8, True, 64, 9472, True),
        (8, 8, True, 8, 9472, False), (8, 8, True, 32, 9472, False),
        (8, 1, False, 1, 2304, False)]
    assert [r["exp-name"] for r in rows][-2:] == ["m1_8k1k", "m1_1k1k"]
    assert list(rows[0]) == ["image", "model", "model-prefix", "precision", "framework",
                             "runner", "isl", "osl", "tp", "pp", "dcp-size", "pcp-size", "conc",
                             "max-model-len", "ep", "dp-attn", "spec-decoding", "exp-name",
                             "disagg", "run-eval"]


@pytest.mark.parametrize(("kw", "tp4", "tp8", "n_1k"), [
    ({"min_conc": 5, "no_evals": True}, [5, 10, 20, 40, 48], [64, 8, 32], 0),
    ({"max_conc": 20}, [4, 8, 16, 20], [8], 1),
    ({"step_size": 3}, [4, 12, 36, 48], [64, 8, 32], 1),
    ({"min_conc": 0}, [], [], 0),
])
def test_example_a_variants(kw: dict[str, Any], tp4: list[int], tp8: list[int],
                            n_1k: int) -> None:
    rows = _gen("a", **kw)
    assert _conc(rows, 4) == tp4 and _conc(rows, 8) == tp8
    assert sum(1 for r in rows if r["isl"] == 1024) == n_1k


def test_example_a_eval_modes() -> None:
    assert [r["ep"] for r in _gen("a", max_ep=4) if r["tp"] == 8 and r["isl"] == 8192] == [4] * 3
    ev = _gen("a", evals_only=True)
    assert [(r["tp"], r["conc"], r["eval-only"]) for r in ev] == [
        (4, 32, True), (4, 48, True), (8, 64, True)]
    allev = _gen("a", all_evals=True)
    assert len(allev) == 8 and all(r["isl"] == 8192 and r["eval-only"] for r in allev)


C_ROW0 = ('{"image":"nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.6.0","model":"nvidia/DeepSeek-'
          'R1-0528-FP4","model-prefix":"dsr1","precision":"fp4","framework":"dynamo-trt","runner":'
          '"gb200","isl":8192,"osl":1024,"spec-decoding":"mtp","prefill":{"num-worker":1,"tp":4,'
          '"ep":4,"dp-attn":true,"additional-settings":["CONFIG_FILE=recipes/trtllm/dsr1/8k1k/p1.'
          'yaml"],"pp":1,"dcp-size":1,"pcp-size":1},"decode":{"num-worker":2,"tp":8,"ep":8,"dp-'
          'attn":true,"pp":1,"dcp-size":1,"pcp-size":1},"conc":[8,64,256],"max-model-len":9472,'
          '"exp-name":"dsr1_8k1k","disagg":true,"run-eval":true,"kv-p2p-transfer":"nixl",'
          '"eval-conc":256}')


def test_example_c() -> None:
    rows = _gen("c")
    assert json.dumps(rows[0], separators=(",", ":")) == C_ROW0
    assert rows[1]["conc"] == [4, 8, 12] and rows[1]["run-eval"] is False
    assert rows[1]["decode"]["pp"] == 2 and "eval-conc" not in rows[1]
    allev = _gen("c", all_evals=True)
    assert len(allev) == 2
    assert all(r["eval-all-concs"] and r["eval-only"] and "eval-conc" not in r for r in allev)
    assert all(r["run-eval"] is False and "eval-conc" not in r for r in _gen("c", no_evals=True))


def test_example_d() -> None:
    rows = _gen("d")
    assert [(r["conc"], r["total-cpu-dram-gb"], r["exp-name"], r["run-eval"]) for r in rows] == [
        ([8], 225, "glm5_p2x2_d1x8ep8dpa_conc8_kvdram-hicache", False),
        ([32], 225, "glm5_p2x2_d1x8ep8dpa_conc32_kvdram-hicache", False)]
    ev = _gen("d", evals_only=True)
    assert [(r["conc"], r["eval-conc"], r["eval-only"]) for r in ev] == [([32], 32, True)]
    allev = _gen("d", all_evals=True)
    assert [(r["conc"], r["eval-conc"], r["exp-name"]) for r in allev] == [
        ([8, 32], 32, "glm5_p2x2_d1x8ep8dpa_conc8_kvdram-hicache")]
