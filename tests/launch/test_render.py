"""`ixtool launch render` on the seed config: every row traced through the real
launcher and recipe, server command checked per arm and concurrency."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.launch.render import RenderedJob, flag_values, json_flag
from inferencex_tools.launch.service import RowSource, render, select_rows
from tests.launch.conftest import SEED_KEY

ARMS = {1: (8, 1, "none", [1, 4, 8, 12, 16]),
        2: (8, 8, "none", [1, 4, 8, 12, 16]),
        3: (8, 8, "dram", [4, 8, 12, 16])}
SYNTHETIC = ("rejection_sample_method", "synthetic_acceptance_length")


@pytest.fixture(scope="module")
def rendered(repo_root: Path) -> list[RenderedJob]:
    result, jobs = render(repo_root, RowSource(config_key=SEED_KEY), None)
    assert result.ok, [f.message for f in result.errors]
    return jobs


@pytest.fixture(scope="module")
def rendered_eval(repo_root: Path) -> list[RenderedJob]:
    jobs: list[RenderedJob] = []
    for arm, conc in ((1, 16), (2, 1), (3, 12)):
        result, js = render(repo_root, RowSource(config_key=SEED_KEY, arm=arm, conc=[conc],
                                                 eval=True), None)
        assert result.ok, [f.message for f in result.errors]
        jobs.extend(js)
    return jobs


def _server(job: RenderedJob) -> list[str]:
    assert job.server is not None, f"{job.name}: no server captured"
    assert job.server.tool == "vllm" and job.server.argv[0] == "serve"
    return job.server.argv


def _one(argv: list[str], flag: str) -> str:
    vals = flag_values(argv, flag)
    assert len(vals) == 1, f"{flag}: {vals}"
    return vals[0]


def test_all_fourteen_rows_render(rendered: list[RenderedJob]) -> None:
    assert len(rendered) == 14
    got = [(j.arm, j.row["conc"]) for j in rendered]
    want = [(arm, c) for arm, (_, _, _, concs) in ARMS.items() for c in concs]
    assert got == want
    for j in rendered:
        assert j.launcher == "runners/launch_h200-dgxc-slurm.sh"
        assert j.script == "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
        assert j.node == "h200-dgxc-slurm_0"
        assert not [f for f in j.findings if f.severity.value == "error"]


def _check(job: RenderedJob, *, eval_only: bool) -> dict[str, Any]:
    tp, ep, kv, _ = ARMS[job.arm or 0]
    conc = job.row["conc"]
    argv = _server(job)
    assert argv[1] == "MiniMaxAI/MiniMax-M3-MXFP8"
    assert _one(argv, "--tensor-parallel-size") == str(tp)
    assert ("--enable-expert-parallel" in argv) is (ep == 8)
    assert _one(argv, "--max-num-seqs") == str(2 * conc)
    assert _one(argv, "--max-cudagraph-capture-size") == str(8 * conc)
    assert _one(argv, "--gpu-memory-utilization") == "0.90"
    spec = json_flag(argv, "--speculative-config")
    assert spec is not None
    assert spec["method"] == "eagle3"
    assert spec["model"] == "Inferact/MiniMax-M3-EAGLE3"
    assert spec["num_speculative_tokens"] == 3
    assert spec["attention_backend"] == "FLASH_ATTN"
    if eval_only:
        assert not [k for k in spec if k in SYNTHETIC or "synthetic" in k]
    else:
        assert spec["rejection_sample_method"] == "synthetic"
        assert spec["synthetic_acceptance_length"] == 2.83
    kvc = json_flag(argv, "--kv-transfer-config")
    if kv == "dram":
        assert kvc is not None and kvc["kv_connector"].startswith("Mooncake")
        assert job.server is not None
        assert job.server.env["MOONCAKE_CONFIG_PATH"].endswith("mooncake.json")
    else:
        assert kvc is None
        assert not any("ooncake" in a for a in argv)
    return spec


def test_server_command_per_arm_and_conc(rendered: list[RenderedJob]) -> None:
    for job in rendered:
        _check(job, eval_only=False)
        assert job.workflow_env["EVAL_ONLY"] == "false"


def test_eval_rows_have_no_synthetic_acceptance(rendered_eval: list[RenderedJob]) -> None:
    assert [(j.arm, j.row["conc"]) for j in rendered_eval] == [(1, 16), (2, 1), (3, 12)]
    for job in rendered_eval:
        _check(job, eval_only=True)
        assert job.workflow_env["EVAL_ONLY"] == "true"
        assert job.eval_only


def test_allocation_and_exports(rendered: list[RenderedJob]) -> None:
    for job in rendered:
        a = job.allocation
        assert a is not None
        assert (a.tool, a.nodes, a.gpus, a.partition) == ("srun", 1, 8, "h200")
        assert a.container_image == "vllm/vllm-openai:v0.27.1"
        assert a.container_mounts == ["$GITHUB_WORKSPACE:/workspace"]
        assert a.container_workdir == "/workspace"
        assert a.exclusive
        assert job.launcher_env["RESULT_DIR"] == f"/workspace/results/{job.name}"
        assert job.launcher_env["PORT"] == "8888"
        env = job.workflow_env
        assert (env["TP"], env["CONC"]) == ("8", str(job.row["conc"]))
        assert env["EP"] == str(ARMS[job.arm or 0][1])
        assert env["KV_OFFLOADING"] == ARMS[job.arm or 0][2]
        # the launcher states no time limit: reported, not guessed
        assert a.time == "120"  # DURATION 3600 s + 60 min set-up, in minutes
        assert [f.rule for f in job.findings] == []


def test_one_concurrency_in_several_arms_selects_each(repo_root: Path) -> None:
    rows = select_rows(repo_root, RowSource(config_key=SEED_KEY, conc=[4]))
    assert [(r.arm, r.row["conc"], r.row["ep"]) for r in rows] == [
        (1, 4, 1), (2, 4, 8), (3, 4, 8)]
    assert [r.row["kv-offloading"] for r in rows] == ["none", "none", "dram"]
    assert select_rows(repo_root, RowSource(config_key=SEED_KEY, arm=3, conc=[1])) == []


def test_row_json_renders_like_the_selection(repo_root: Path,
                                             rendered: list[RenderedJob]) -> None:
    row = rendered[7].row
    result, jobs = render(repo_root, RowSource(row_json=json.dumps(row)), None)
    assert result.ok and len(jobs) == 1
    assert jobs[0].server is not None and rendered[7].server is not None
    assert jobs[0].server.argv == rendered[7].server.argv
