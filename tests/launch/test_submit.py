"""`ixtool launch submit --dry-run` (the sbatch scripts), the CLI surface and usage errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencex_tools.cli.main import app
from inferencex_tools.launch.service import RowSource, SubmitRequest, plan_jobs
from tests.launch.conftest import SEED_KEY

IX = [sys.executable, "-m", "inferencex_tools"]


def test_dry_run_scripts_for_the_seed_rows(repo_root: Path, tmp_path: Path) -> None:
    req = SubmitRequest(src=RowSource(config_key=SEED_KEY), out_dir=tmp_path / "jobs",
                        partition="gpu-h200", time="04:00:00", check=False,
                        extra_env={"HF_TOKEN_FILE": "/etc/hf token"})
    result, jobs = plan_jobs(repo_root, req)
    assert len(jobs) == 14
    outputs = set()
    for j in jobs:
        row, text = j.row, j.text
        directives = re.findall(r"^#SBATCH (\S+)$", text, re.M)
        assert f"--job-name={row['exp-name']}" in directives
        assert "--gres=gpu:8" in directives and "--nodes=1" in directives
        assert "--partition=gpu-h200" in directives and "--time=04:00:00" in directives
        out = next(d for d in directives if d.startswith("--output="))
        assert out.endswith(".%j.out") and row["exp-name"] in out
        outputs.add(out)
        for var, val in (("TP", row["tp"]), ("EP", row["ep"]), ("CONC", row["conc"]),
                         ("KV_OFFLOADING", row["kv-offloading"]), ("EVAL_ONLY", "false"),
                         ("SLURM_PARTITION", "gpu-h200")):
            assert f"\nexport {var}={val}\n" in text, var
        assert "\nexport HF_TOKEN_FILE='/etc/hf token'\n" in text
        assert text.rstrip().endswith("exec bash runners/launch_h200-dgxc-slurm.sh")
        syntax = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True,
                                check=False)
        assert syntax.returncode == 0, syntax.stderr
    assert len(outputs) == 14  # one output file per row, even where exp-names collide
    clashes = [f for f in result.findings if f.rule == "LA108"]
    assert len(clashes) == 5  # arms 1 and 2 share exp-names at conc 1, 4, 8, 12, 16
    assert result.ok


def test_cli_dry_run_prints_scripts_and_submits_nothing(repo_root: Path,
                                                      tmp_path: Path) -> None:
    r = CliRunner().invoke(app, [
        "launch", "submit", "--root", str(repo_root), "--config-key", SEED_KEY, "--arm", "3",
        "--conc", "16", "--eval", "--no-check", "--out-dir", str(tmp_path / "jobs")])
    assert r.exit_code == 0, r.output
    assert r.output.count("#!/bin/bash") == 1
    assert "export EVAL_ONLY=true" in r.output
    assert "#SBATCH --job-name=minimaxm3_tp8_conc16_kvdram-mooncake_spec-mtp" in r.output
    assert not (tmp_path / "jobs").exists()  # a dry run writes nothing


def test_cli_render_json(repo_root: Path) -> None:
    r = CliRunner().invoke(app, [
        "launch", "render", "--root", str(repo_root), "--config-key", SEED_KEY, "--arm", "2",
        "--conc", "12", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    (job,) = doc["info"]["jobs"]
    assert job["exp-name"] == "minimaxm3_tp8_conc12_kvnone_spec-mtp" and job["arm"] == 2
    assert job["allocation"]["gpus"] == 8
    assert "--enable-expert-parallel" in job["server"]["argv"]
    assert job["server"]["command"].startswith("vllm serve MiniMaxAI/MiniMax-M3-MXFP8 ")
    assert doc["findings"] == []


@pytest.mark.parametrize("args, message", [
    ([], "give exactly one of --row, --matrix or --config-key"),
    (["--config-key", SEED_KEY, "--row", "{}"], "give exactly one of"),
    (["--config-key", SEED_KEY, "--arm", "4"], "has 3 arms"),
    (["--config-key", "no-such-key"], "not found in the master configs"),
    (["--row", "{not json"], "not valid JSON"),
    (["--arm", "1", "--row", "{}"], "--arm needs --config-key"),
])
def test_render_usage_errors(repo_root: Path, args: list[str], message: str) -> None:
    r = subprocess.run([*IX, "launch", "render", "--root", str(repo_root), *args],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


def test_submit_rejects_other_schedulers(repo_root: Path) -> None:
    r = subprocess.run([*IX, "launch", "submit", "--root", str(repo_root), "--config-key",
                        SEED_KEY, "--scheduler", "pbs"], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 2 and "only slurm" in r.stderr


def test_status_rejects_a_bad_state_file(tmp_path: Path) -> None:
    bad = tmp_path / "state.json"
    bad.write_text(json.dumps({"version": 1, "scheduler": "slurm", "created": "x",
                               "jobs": [{"index": 1, "job-id": "abc"}]}))
    r = subprocess.run([*IX, "launch", "status", "--state", str(bad)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2
    assert "invalid launch state" in r.stderr


def test_matrix_file_from_the_sweep(repo_root: Path, tmp_path: Path) -> None:
    """A matrix printed by `ixtool sweep test-config --evals-only` is planned as eval jobs."""
    gen = subprocess.run(
        [*IX, "sweep", "test-config", "--config-keys", SEED_KEY, "--config-files",
         str(repo_root / "configs" / "nvidia-master.yaml"), "--runner-config",
         str(repo_root / "configs" / "runners.yaml"), "--evals-only"],
        capture_output=True, text=True, check=False)
    assert gen.returncode == 0, gen.stderr
    matrix = tmp_path / "matrix.json"
    matrix.write_text(gen.stdout)
    req = SubmitRequest(src=RowSource(matrix=matrix), out_dir=tmp_path / "jobs", check=False)
    result, jobs = plan_jobs(repo_root, req)
    assert result.ok and len(jobs) == len(json.loads(gen.stdout)) >= 1
    for j in jobs:
        assert j.sel.eval_only and "\nexport EVAL_ONLY=true\n" in j.text


def test_checked_plan_takes_what_the_launcher_requests(repo_root: Path, tmp_path: Path) -> None:
    """With --check the rows are rendered first; the launcher's own partition and
    --exclusive become directives, options given on the command line win."""
    src = RowSource(config_key=SEED_KEY, arm=1, conc=[1])
    result, (job,) = plan_jobs(repo_root, SubmitRequest(src=src, out_dir=tmp_path / "j"))
    directives = re.findall(r"^#SBATCH (\S+)$", job.text, re.M)
    assert "--partition=h200" in directives and "--exclusive" in directives
    assert "--time=120" in directives  # the launcher's own time limit
    assert [f.rule for f in result.findings] == []
    _, (job,) = plan_jobs(repo_root, SubmitRequest(src=src, out_dir=tmp_path / "j",
                                                   partition="batch"))
    assert "#SBATCH --partition=batch\n" in job.text
    assert "\nexport SLURM_PARTITION=batch\n" in job.text


@pytest.mark.parametrize("row, rule", [
    # (a multi-node row is rendered up to its submission: tests/test_cli_promises.py)
    ({"exp-name": "x_tp8_conc1_kvnone", "model": "m", "image": "i", "precision": "fp8",
      "framework": "vllm", "runner": "cluster:nowhere", "tp": 8, "conc": 1}, "LA103"),
    ({"exp-name": "x_tp8_conc1_kvnone", "runner": "cluster:h200-dgxc", "conc": 1,
      "scenario-type": "agentic-coding", "precision": "fp8", "framework": "vllm",
      "spec-decoding": "mtp"}, "LA102"),
])
def test_rows_that_cannot_be_rendered(repo_root: Path, row: dict[str, object],
                                      rule: str) -> None:
    from inferencex_tools.launch.service import render

    result, jobs = render(repo_root, RowSource(row_json=json.dumps(row)), None)
    assert [f.rule for f in result.findings] == [rule], [f.message for f in result.findings]
    assert jobs[0].server is None and jobs[0].allocation is None


def test_sbatch_refusing_every_job_is_a_finding(repo_root: Path, tmp_path: Path) -> None:
    """An sbatch that refuses every job (here: a client with no cluster to talk to) gives
    the refusals as findings (exit 1) and a state file that records no job, which
    `--wait` and `launch status` read back; never 'state.json: no such file' (exit 2)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sbatch"
    fake.write_text("#!/bin/sh\necho 'sbatch: fatal: Could not establish a configuration "
                    "source' >&2\nexit 1\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    out = tmp_path / "jobs"
    sub = subprocess.run(
        [*IX, "launch", "submit", "--root", str(repo_root), "--config-key", SEED_KEY,
         "--arm", "3", "--conc", "16", "--no-check", "--out-dir", str(out), "--submit",
         "--wait", "--interval", "0.1", "--timeout", "5"],
        env=env, capture_output=True, text=True, check=False)
    assert sub.returncode == 1, sub.stdout + sub.stderr
    assert "[LA401]" in sub.stdout and "configuration source" in sub.stdout
    assert json.loads((out / "state.json").read_text())["jobs"] == []
    stat = subprocess.run([*IX, "launch", "status", "--state", str(out / "state.json")],
                          env=env, capture_output=True, text=True, check=False)
    assert stat.returncode == 0, stat.stdout + stat.stderr
