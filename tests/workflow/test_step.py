"""The job step a launcher starts, from the recorded srun / docker call."""

from __future__ import annotations

from inferencex_tools.workflow.step import step_of

ENV = {"A": "1", "B": "2", "GITHUB_WORKSPACE": "/ws", "HF_HUB_CACHE": "/mnt/hf"}


def test_srun_pyxis_step() -> None:
    argv = ["srun", "--jobid=42", "--container-image=/sq/x.sqsh",
            "--container-mounts=/ws:/workspace/,/cache:/mnt/hf", "--container-workdir=/workspace/",
            "--no-container-entrypoint", "--export=ALL,PORT=8888", "bash",
            "benchmarks/single_node/x.sh"]
    s = step_of("srun", argv, ENV)
    assert s is not None and s.container and s.script == "benchmarks/single_node/x.sh"
    assert s.workdir == "/workspace" and ("/ws", "/workspace") in s.mounts
    assert s.env == {**ENV, "PORT": "8888"}


def test_srun_export_lists() -> None:
    argv = ["srun", "--export=NONE,PORT=1", "bash", "x.sh"]
    s = step_of("srun", argv, {**ENV, "SLURM_JOB_ID": "7"})
    assert s is not None and s.env == {"SLURM_JOB_ID": "7", "PORT": "1"}
    s2 = step_of("srun", ["srun", "--export", "A", "bash", "x.sh"], ENV)
    assert s2 is not None and s2.env == {"A": "1"} and not s2.container


def test_srun_without_a_script_is_not_a_step() -> None:
    assert step_of("srun", ["srun", "--jobid=1", "bash", "-c", "enroot import x"], ENV) is None


def test_docker_run_passes_only_named_variables() -> None:
    argv = ["docker", "run", "--rm", "--network=host", "-v", "/ws:/workspace/", "-w",
            "/workspace/", "-e", "A", "-e", "PORT=9", "-e", "MISSING", "--entrypoint=/bin/bash",
            "img:1", "benchmarks/x_mtp.sh"]
    s = step_of("docker", argv, ENV)
    assert s is not None and s.env == {"A": "1", "PORT": "9"}
    assert s.command == ["/bin/bash", "benchmarks/x_mtp.sh"] and s.workdir == "/workspace"
    assert s.script == "benchmarks/x_mtp.sh" and ("/ws", "/workspace") in s.mounts
