"""The rows ``policy check`` traces are the sweep generator's jobs (issue 33, D1).

The policy stage used to build its own eval rows — ``EVAL_ONLY=true`` at the top
concurrency of every agentic spec-decoding search-space entry, multi-node included —
while the generator marks evals its own way (one single-node agentic row per model,
runner, framework and precision; multi-node rows only with a concurrency ≥ 16; the
fixed-seq-len 8k1k points the eval sweep runs).  A recipe then "reached an eval" on a
row no job runs (PO402), and the eval jobs the sweep does run for fixed-seq-len
entries were never traced.  Now every traced row is one of the generator's jobs —
throughput rows from the ``--no-evals`` matrix, eval rows from the ``--evals-only``
matrix of each key alone (what the changelog sweep asks the generator for an entry
that names the key) — and every job kind of a spec-decoding entry is traced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.policy.rows import policy_rows
from inferencex_tools.sweep.generate import SweepRequest, generate_matrix
from inferencex_tools.sweep.load import (
    Configs,
    Runners,
    load_masters,
    load_runners,
    merge_masters,
)

_NOT_ENTRY = ("conc", "exp-name", "run-eval", "eval-only", "eval-conc", "eval-all-concs",
              "runner")


def _text(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _entry(row: dict[str, Any]) -> str:
    return _text({k: v for k, v in row.items() if k not in _NOT_ENTRY})


def _jobs(configs: Configs, runners: Runners, *, all_evals: bool
          ) -> dict[tuple[str, str, bool], list[dict[str, Any]]]:
    """The generator's jobs by (key, search-space entry, eval?): the throughput matrix
    of all keys, and each key's eval matrix on its own."""
    out: dict[tuple[str, str, bool], list[dict[str, Any]]] = {}
    m = generate_matrix(configs, runners, SweepRequest(mode="full", no_evals=True))
    for key, row in zip(m.keys, m.rows, strict=True):
        out.setdefault((key, _entry(row), False), []).append(row)
    for key in configs.data:
        part = Configs(data={key: configs.data[key]}, origin={key: configs.origin[key]},
                       sources=configs.sources)
        e = generate_matrix(part, runners, SweepRequest(mode="full", evals_only=True,
                                                        all_evals=all_evals))
        for k, row in zip(e.keys, e.rows, strict=True):
            out.setdefault((k, _entry(row), True), []).append(row)
    return out


@pytest.mark.parametrize("all_evals", [False, True], ids=["evals", "all-evals"])
def test_every_traced_row_is_a_job_and_every_job_kind_is_traced(corpus: Path,
                                                                all_evals: bool) -> None:
    cdir = corpus / "configs"
    configs = load_masters([cdir / "amd-master.yaml", cdir / "nvidia-master.yaml"])
    runners = load_runners(cdir / "runners.yaml")
    jobs = _jobs(configs, runners, all_evals=all_evals)
    rs = policy_rows(configs, runners, globs=None, all_evals=all_evals)
    assert not rs.refused
    traced: set[tuple[str, str, bool]] = set()
    strays = []
    for r in rs.rows:
        group = (r.key, _entry(r.matrix), r.eval_only)
        if _text(r.matrix) not in {_text(j) for j in jobs.get(group, [])}:
            strays.append(r.label())
        traced.add(group)
    assert not strays, f"{len(strays)} traced rows no job runs, e.g. {strays[:5]}"
    spec = {g for g, rows in jobs.items()
            if g[0] in rs.spec_keys and rows[0].get("spec-decoding", "none") != "none"}
    missing = sorted(spec - traced)
    assert not missing, f"{len(missing)} job kinds of spec-decoding entries not traced, " \
        f"e.g. {[(k, 'eval' if e else 'throughput') for k, _, e in missing[:5]]}"


MULTINODE_AGENTIC = """\
mn-agentic-mtp:
  image: lmsysorg/sglang:v0.5.16
  model: deepseek-ai/DeepSeek-V4-Pro
  model-prefix: dsv4
  runner: cluster:gb300-nv
  precision: fp4
  framework: dynamo-sglang
  multinode: true
  disagg: false
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        conc-list: [2, 4, 8]
        prefill: {num-worker: 1, tp: 4, ep: 1, dp-attn: false}
        decode: {num-worker: 0, tp: 4, ep: 1, dp-attn: false}
      - spec-decoding: mtp
        conc-list: [32]
        prefill: {num-worker: 1, tp: 8, ep: 8, dp-attn: true}
        decode: {num-worker: 1, tp: 8, ep: 8, dp-attn: true}
"""


def test_a_multinode_agentic_entry_below_the_eval_concurrency_has_no_eval_row() -> None:
    """The generator marks a multi-node agentic entry for evals only when one of its
    concurrencies is at least 16 (SWEEP.md §4.1): the entry at 2/4/8 gets no eval job,
    the entry at 32 gets one (before: an eval row for both)."""
    configs = merge_masters([("configs/nvidia-master.yaml", MULTINODE_AGENTIC.encode())])
    runners = Runners(labels={"cluster:gb300-nv": ["gb300-nv_0"]}, hardware={
        "cluster:gb300-nv": {"gpus-per-node": 4}})
    rs = policy_rows(configs, runners, globs=None, all_evals=False)
    evals = [r.label() for r in rs.rows if r.eval_only]
    throughput = [r.label() for r in rs.rows if not r.eval_only]
    assert len(throughput) == 2, throughput
    assert len(evals) == 1 and "conc=32" in evals[0], evals
