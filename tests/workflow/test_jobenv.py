"""Job environments derived from the real repository's workflows and sweep matrix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.sweep.generate import SweepRequest, generate_matrix
from inferencex_tools.sweep.load import merge_masters, parse_runners
from inferencex_tools.workflow import (
    BUCKETS,
    SECRET_PLACEHOLDER,
    LocalPaths,
    bucket_of,
    job_environment,
    load_workflows,
)

PATHS = LocalPaths(workspace="/ws", runner_root="/runner")


@pytest.fixture(scope="module")
def matrix(real_configs: dict[str, bytes]) -> list[tuple[str, dict[str, Any]]]:
    cfg = merge_masters([(p, b) for p, b in sorted(real_configs.items())
                         if p.startswith("configs/") and p.count("/") == 1
                         and p.endswith("-master.yaml")])
    run = parse_runners(real_configs["configs/runners.yaml"], "configs/runners.yaml")
    m = generate_matrix(cfg, run, SweepRequest(mode="full"))
    return list(zip(m.keys, m.rows, strict=True))


def test_every_bucket_has_a_dispatch(real_workflows: dict[str, bytes]) -> None:
    wf = load_workflows(real_workflows)
    assert wf.notes == []
    assert set(wf.dispatches) == set(BUCKETS)
    assert wf.dispatches["single_node.agentic"].job == "sweep-agentic"
    assert {d.workflow for d in wf.dispatches.values()} == {".github/workflows/run-sweep.yml"}
    # run-sweep.yml runs on pull_request: a PR's sweep uses the merge ref's workflows
    assert all(d.from_merge_ref for d in wf.dispatches.values())


@pytest.mark.parametrize(("on", "merge_ref"), [
    ("pull_request", True), ("[push, pull_request]", True),
    ("{pull_request: {branches: [main]}, workflow_dispatch: {}}", True),
    ("pull_request_target", False), ("workflow_dispatch", False), ("[push]", False)])
def test_a_dispatch_knows_whether_a_pr_runs_it_from_the_merge_ref(on: str,
                                                                  merge_ref: bool) -> None:
    tmpl = b"on:\n  workflow_call: {}\njobs:\n  b:\n    steps:\n      - run: |\n" \
           b"          bash ./runners/launch_${NODE%%_*}.sh\n"
    caller = (f"on: {on}\njobs:\n  go:\n    uses: ./.github/workflows/t.yml\n"
              "    strategy: {matrix: {config: \"${{ fromJson(needs.setup.outputs.cfg)"
              ".single_node['agentic'] }}\"}}\n").encode()
    wf = load_workflows({".github/workflows/t.yml": tmpl, ".github/workflows/c.yml": caller})
    assert wf.dispatches["single_node.agentic"].from_merge_ref is merge_ref


def test_agentic_single_node_job(real_workflows: dict[str, bytes],
                                 matrix: list[tuple[str, dict[str, Any]]]) -> None:
    wf = load_workflows(real_workflows)
    row = next(r for k, r in matrix if k == "minimaxm3-fp8-h200-vllm-agentic-mtp")
    je = job_environment(wf, row, node="h200-dgxc-slurm_3", paths=PATHS)
    assert je is not None and je.notes == []
    env = je.env
    # the variables the issue found missing are derived, with the workflow's own values
    assert env["RESULT_DIR"] == "/workspace/results"
    assert env["RANDOM_RANGE_RATIO"] == "0.8"
    assert env["HF_HUB_CACHE"] == "/mnt/hf_hub_cache/"
    assert env["RESULT_FILENAME"].startswith(f"{row['exp-name']}_fp8_vllm_tp8-pp1")
    assert env["RESULT_FILENAME"].endswith(f"_conc{row['conc']}_h200-dgxc-slurm_3")
    assert env["GPU_COUNT"] == "8" and env["SCENARIO_SUBDIR"] == "agentic/"
    assert env["IS_AGENTIC"] == "1" and env["EVAL_ONLY"] == "false"
    assert env["HF_TOKEN"] == SECRET_PLACEHOLDER
    assert env["GITHUB_WORKSPACE"] == "/ws" and env["GITHUB_STEP_SUMMARY"] == ""
    assert je.launcher == "runners/launch_h200-dgxc-slurm.sh"
    assert je.origin["RESULT_DIR"] == "benchmark-tmpl.yml env"
    assert je.origin["RUNNER_NAME"].startswith("benchmark-tmpl.yml step")
    ev = job_environment(wf, {**row, "eval-only": True, "run-eval": True},
                         node="h200-dgxc-slurm_3", paths=PATHS)
    assert ev is not None and ev.dispatch.endswith(":sweep-agentic-evals")
    assert ev.env["EVAL_ONLY"] == "true" and ev.env["RUN_EVAL"] == "true"


def test_multinode_settings_become_exports(real_workflows: dict[str, bytes],
                                           matrix: list[tuple[str, dict[str, Any]]]) -> None:
    wf = load_workflows(real_workflows)
    row = next(r for k, r in matrix if k == "dsv4-fp4-gb200-dynamo-vllm-mtp2")
    assert bucket_of(row).startswith("multi_node.")
    je = job_environment(wf, row, node="gb200-nv_0", paths=PATHS)
    assert je is not None and je.notes == []
    settings = dict(s.split("=", 1) for side in ("prefill", "decode")
                    for s in row[side].get("additional-settings", []))
    assert "CONFIG_FILE" in settings
    for k, v in settings.items():
        assert je.env[k] == v and je.origin[k] == "benchmark-multinode-tmpl.yml run: export"
    assert je.env["IS_MULTINODE"] == "true"
    assert je.env["CONC_LIST"] == " ".join(str(c) for c in row["conc"])
    assert je.launcher == "runners/launch_gb200-nv.sh"


def test_every_real_row_derives(real_workflows: dict[str, bytes],
                                matrix: list[tuple[str, dict[str, Any]]]) -> None:
    wf = load_workflows(real_workflows)
    for _, row in matrix:
        node = str(row["runner"]).split(":")[-1] + "_0"
        je = job_environment(wf, row, node=node, paths=PATHS)
        assert je is not None and je.notes == [], (row, je and je.notes)
        assert je.launcher == f"runners/launch_{node.split('_')[0]}.sh"


def test_minimal_workflows(tmp_path: Path) -> None:
    tmpl = b"""on:
  workflow_call:
    inputs:
      conc: {type: string, required: true}
      flag: {type: boolean, default: true}
      extra: {type: string, default: 'dflt'}
env:
  CONC: ${{ inputs.conc }}
  FLAG: ${{ inputs.flag && 'yes' || 'no' }}
  EXTRA: ${{ inputs.extra }}
  TOKEN: ${{ secrets.T }}
jobs:
  b:
    steps:
      - name: Launch
        env: {NODE: "${{ runner.name }}"}
        run: |
          export X=$CONC-$NODE
          bash ./runners/launch_${NODE%%_*}.sh
"""
    caller = b"""on: push
jobs:
  go:
    uses: ./.github/workflows/t.yml
    strategy: {matrix: {config: "${{ fromJson(needs.setup.outputs.cfg).single_node['agentic'] }}"}}
    with: {conc: "${{ matrix.config.conc }}", flag: false}
"""
    wf = load_workflows({".github/workflows/t.yml": tmpl, ".github/workflows/c.yml": caller})
    je = job_environment(wf, {"conc": 4, "scenario-type": "agentic-coding"}, node="gpu_1",
                         paths=PATHS)
    assert je is not None
    assert (je.env["CONC"], je.env["FLAG"], je.env["EXTRA"], je.env["X"]) == \
        ("4", "no", "dflt", "4-gpu_1")
    assert je.env["TOKEN"] == SECRET_PLACEHOLDER and je.launcher == "runners/launch_gpu.sh"
    assert job_environment(wf, {"conc": 4, "isl": 1024, "osl": 1024}, node="gpu_1",
                           paths=PATHS) is None


# A template that takes the backend's name as a string input, called by a job that
# passes the matrix value whole (the wiring before the matrix made it a mapping).
_BACKEND_TMPL = b"""on:
  workflow_call:
    inputs:
      conc: {type: string, required: true}
      kv-offload-backend: {type: string, required: false}
env:
  CONC: ${{ inputs.conc }}
  KV_OFFLOAD_BACKEND: ${{ inputs.kv-offload-backend }}
  WHOLE: ${{ fromJSON('{"a":1}') }}
  TEXT: be-${{ fromJSON('{"a":1}') }}
jobs:
  b:
    steps:
      - name: Launch
        run: bash ./runners/launch_gpu.sh
"""
_BACKEND_CALLER = b"""on: push
jobs:
  go:
    uses: ./.github/workflows/t.yml
    strategy: {matrix: {config: "${{ fromJson(needs.setup.outputs.cfg).single_node['agentic'] }}"}}
    with:
      conc: ${{ matrix.config.conc }}
      kv-offload-backend: ${{ matrix.config.kv-offload-backend }}
"""


def test_an_object_where_a_string_is_taken_refuses_the_job() -> None:
    """GitHub does not print an object into a string input or an env value: a lone
    ``${{ }}`` giving an object there makes the template invalid ("A mapping was not
    expected", actions/runner#2289) and the job never starts; inside a longer string the
    object reads "Object" (the expression language's string coercion)."""
    wf = load_workflows({".github/workflows/t.yml": _BACKEND_TMPL,
                         ".github/workflows/c.yml": _BACKEND_CALLER})
    row = {"conc": 4, "scenario-type": "agentic-coding", "kv-offloading": "dram",
           "kv-offload-backend": {"name": "hicache"}}
    je = job_environment(wf, row, node="gpu_1", paths=PATHS)
    assert je is not None
    assert "Object" not in (je.env["KV_OFFLOAD_BACKEND"], je.env.get("WHOLE"))
    assert je.env["TEXT"] == "be-Object" and je.env["CONC"] == "4"
    assert len(je.refused) == 2, je.refused
    assert je.refused[0].startswith(".github/workflows/c.yml:go with.kv-offload-backend: ")
    assert "a mapping was not expected" in je.refused[0]
    assert je.refused[1].startswith("t.yml env WHOLE: ")
    # a scalar (and a list's item) is taken as before: no refusal
    ok = job_environment(wf, {**row, "kv-offload-backend": "hicache"}, node="gpu_1",
                         paths=PATHS)
    assert ok is not None and ok.env["KV_OFFLOAD_BACKEND"] == "hicache"
    assert ok.refused == [je.refused[1]]


def test_a_refused_job_keeps_why() -> None:
    """The policy check's job of such a row carries the refusal (its rows are "not
    checked: the runner would not start its job", and the base's view leaves them to the
    head's): never a launcher run with KV_OFFLOAD_BACKEND=Object."""
    from inferencex_tools.policy.pipeline import make_job
    from inferencex_tools.policy.resolve import Row

    wf = load_workflows({".github/workflows/t.yml": _BACKEND_TMPL.replace(
        b"  WHOLE: ${{ fromJSON('{\"a\":1}') }}\n", b""), ".github/workflows/c.yml":
        _BACKEND_CALLER})
    matrix = {"conc": 4, "scenario-type": "agentic-coding", "kv-offloading": "dram",
              "kv-offload-backend": {"name": "hicache"}}
    job = make_job(wf, Row("configs/m.yaml", "k", 1, "agentic-coding", 0, 0, 4, False, {},
                           {}, matrix=matrix), "gpu", "gpu_1")
    assert len(job.refused) == 1 and "with.kv-offload-backend: a mapping was not expected" \
        in job.refused[0]
    assert "Object" not in job.env.values()
    ok = make_job(wf, Row("configs/m.yaml", "k", 1, "agentic-coding", 0, 0, 4, False, {},
                          {}, matrix={**matrix, "kv-offload-backend": "hicache"}),
                  "gpu", "gpu_1")
    assert ok.refused == [] and ok.env["KV_OFFLOAD_BACKEND"] == "hicache"
