"""io/slurm.py against stand-in client commands on PATH (the real cluster test is
tests/launch/test_slurm.py, which needs slurm-wlm and munge): the order squeue → sacct
(accounting, then the job-completion log) → scontrol, and UNKNOWN for the rest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferencex_tools.errors import InputError
from inferencex_tools.io import slurm

# job 1 is live (squeue), 2 is in accounting (sacct), 3 only in the completion log
# (sacct -c), 4 is still held by the controller (scontrol), 5 is unknown everywhere.
TOOLS = {
    "squeue": 'case "$*" in *1*) echo "1|RUNNING|None";; esac\n',
    "sacct": 'if [ "$1" = "-c" ]; then echo "3|FAILED|1:0"; else echo "2|COMPLETED by 0|0:0"; fi\n',
    "scontrol": 'if [ "$4" = 4 ]; then echo "JobId=4 JobState=PENDING Reason=Priority '
                'ExitCode=0:0"; else exit 1; fi\n',
    "sbatch": 'if [ "$2" = refuse.sh ]; then echo "sbatch: error: no partition" >&2; exit 1; '
              'fi; echo "42;cluster"\n',
}


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in TOOLS.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir


def test_query_asks_each_source_in_turn(fake_slurm: Path) -> None:
    got = slurm.query(["1", "2", "3", "4", "5"])
    assert {j: (s.state, s.source) for j, s in got.items()} == {
        "1": ("RUNNING", "squeue"), "2": ("COMPLETED", "sacct"), "3": ("FAILED", "sacct -c"),
        "4": ("PENDING", "scontrol"), "5": ("UNKNOWN", "")}
    assert got["4"].reason == "Priority" and got["3"].exit_code == "1:0"
    assert slurm.query([]) == {}


def test_sbatch_returns_the_job_id_or_the_refusal(fake_slurm: Path) -> None:
    assert slurm.sbatch(Path("job.sh")) == ("42", "")
    job_id, msg = slurm.sbatch(Path("refuse.sh"))
    assert job_id is None and "no partition" in msg


def test_missing_command_is_an_input_error(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not slurm.available("sbatch")
    with pytest.raises(InputError, match="command not found"):
        slurm.sbatch(Path("job.sh"))
