"""Launchers that stage the checkout on the node (``tar`` + ``sbcast`` + ``srun bash -c``
extracting it, the container mounting the staged copy) and launchers that run the job
step with ``docker run`` on the node itself (no Slurm) render like srun container steps:
the script runs in the container's view and its server command is extracted."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.launch.service import RowSource, render
from inferencex_tools.sandbox import trace_script
from tests.launch.conftest import SEED_KEY, copy_repo

LAUNCHER = "runners/launch_h200-dgxc-slurm.sh"
STEP = 'exec srun "${SRUN_ARGS[@]}" bash "$SCRIPT"'

# the checkout staged on the node: the container mounts the copy, not $GITHUB_WORKSPACE
STAGED = r'''
JOB_ID=$(salloc "${ALLOC_ARGS[@]}" --no-shell 2>&1 \
    | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
[[ -n $JOB_ID ]] || { echo "no allocation" >&2; exit 1; }
REMOTE=/tmp/ixstage-$JOB_ID
cleanup() {
    local rc=$?
    srun --jobid="$JOB_ID" bash -c "rm -rf '$REMOTE' '$REMOTE.tar.gz'" || true
    scancel "$JOB_ID" || true
    exit "$rc"
}
trap cleanup EXIT
TAR=$(mktemp /tmp/ixstage-XXXXXX.tar.gz)
tar -C "$WORKSPACE" --exclude=.git -czf "$TAR" .
sbcast --jobid="$JOB_ID" --force "$TAR" "$REMOTE.tar.gz"
srun --jobid="$JOB_ID" bash -c "
    set -euo pipefail
    rm -rf '$REMOTE'
    mkdir -p '$REMOTE'
    tar -C '$REMOTE' -xzf '$REMOTE.tar.gz'
"
srun --jobid="$JOB_ID" --container-image="$IMAGE" --container-mounts="$REMOTE:/workspace/" \
    --container-workdir=/workspace/ --export=ALL bash "$SCRIPT"
srun --jobid="$JOB_ID" bash -c "cd '$REMOTE' && tar -czf - --files-from /dev/null" \
    | tar -C "$WORKSPACE" -xzf -
'''

# the job step is a container on the node itself, with an explicit list of variables
DOCKER = r'''
ENVS=()
for v in $(compgen -e); do
    case $v in PATH|HOME|PWD|OLDPWD|SHLVL|_|@DROP@) ;; *) ENVS+=(--env "$v") ;; esac
done
docker rm -f "bmk-$EXP_NAME" >/dev/null 2>&1 || true
docker run --rm --name "bmk-$EXP_NAME" --gpus="$GPU_COUNT" --ipc=host \
    --volume "$WORKSPACE:/workspace/" --workdir=/workspace/ "${ENVS[@]}" \
    --entrypoint=/bin/bash "$IMAGE" "$SCRIPT"
'''


def _repo(tmp_path: Path, step: str) -> Path:
    root = copy_repo(tmp_path / "repo")
    p = root / LAUNCHER
    text = p.read_text()
    assert text.count(STEP) == 1
    p.write_text(text.replace(STEP, step))
    return root


def _render(root: Path) -> tuple[list[str], object]:
    result, jobs = render(root, RowSource(config_key=SEED_KEY, arm=1, conc=[4]), None)
    assert len(jobs) == 1
    return sorted(f"{f.rule}: {f.message}" for f in result.findings), jobs[0]


def test_checkout_staged_with_sbcast_and_srun(tmp_path: Path) -> None:
    findings, job = _render(_repo(tmp_path, STAGED))
    assert findings == []
    d = job.to_dict()  # type: ignore[attr-defined]
    assert d["server"] and d["server"]["command"].startswith("vllm serve MiniMaxAI/")
    assert "--tensor-parallel-size 8" in d["server"]["command"]
    a = d["allocation"]
    assert (a["tool"], a["gpus"], a["container-image"]) == ("salloc", 8, "vllm/vllm-openai:v0.27.1")
    assert a["container-mounts"][0].endswith(":/workspace/")
    # the script ran in the container's view: its paths are the job's
    assert d["launcher-env"]["RESULT_DIR"].startswith("/workspace/results/")


def test_docker_run_job_step(tmp_path: Path) -> None:
    findings, job = _render(_repo(tmp_path, DOCKER.replace("@DROP@", "IX_NONE")))
    assert findings == []
    d = job.to_dict()  # type: ignore[attr-defined]
    assert d["server"] and "--tensor-parallel-size 8" in d["server"]["command"]
    a = d["allocation"]
    assert (a["tool"], a["gpus"], a["container-image"], a["container-workdir"]) == (
        "docker", 8, "vllm/vllm-openai:v0.27.1", "/workspace")
    assert a["job-name"] == f"bmk-{job.name}"  # type: ignore[attr-defined]
    assert d["step"][:2] == ["docker", "run"]


@pytest.mark.parametrize(("drop", "want"), [
    ("CONC", ["LA307"]),  # the script reads it: dropped from the step's --env list
    ("EXP_NAME", []),  # the script never reads it: leaving it out is the launcher's choice
])
def test_docker_env_list(tmp_path: Path, drop: str, want: list[str]) -> None:
    findings, _ = _render(_repo(tmp_path, DOCKER.replace("@DROP@", drop)))
    assert sorted({f.split(":")[0] for f in findings if f.startswith("LA30")}) == want, findings
    if want:
        assert any(f"{drop}=" in f and "unset" in f for f in findings)


@pytest.mark.parametrize(("value", "want"), [
    ("8", 8), ("count=4", 4), ('"device=0,1,2"', 3), ("device=3", 1), ("all", None), (None, None),
])
def test_docker_gpus(value: str | None, want: int | None) -> None:
    from inferencex_tools.launch.render import docker_gpus

    assert docker_gpus(value) == want


def test_exit_trap_of_a_failing_launcher_runs(tmp_path: Path) -> None:
    """``set -e`` ending the launcher runs its EXIT trap as bash does (a cleanup function
    with ``local`` works, the exit code is kept)."""
    (tmp_path / "l.sh").write_text(
        "set -euo pipefail\n"
        "cleanup() {\n    local rc=$?\n    scancel 4242 || true\n    exit \"$rc\"\n}\n"
        "trap cleanup EXIT\nfalse\n")
    tr = trace_script(tmp_path, "l.sh", {})
    assert "can only be used in a function" not in tr.stderr_tail, tr.stderr_tail
    assert tr.returncode == 1
    assert [r.tool for r in tr.records] == ["scancel"]


def test_sbcast_copies_and_staging_srun_runs(tmp_path: Path) -> None:
    (tmp_path / "l.sh").write_text(
        "set -euo pipefail\n"
        "echo hello > /tmp/src.txt\n"
        "sbcast --jobid=7 -f /tmp/src.txt /tmp/dst.txt\n"
        "srun --jobid 7 -N 1 bash -c 'cat /tmp/dst.txt > staged.txt'\n"
        "srun --jobid=7 --container-image=x bash -c 'echo no > container.txt'\n"
        "srun --jobid=7 bash -c 'exec 9>/raid/none/x.lock'\n"  # the node's own file: tolerated
        "cat staged.txt\n"
        "[[ ! -e container.txt ]]\n")
    tr = trace_script(tmp_path, "l.sh", {})
    assert tr.returncode == 0, tr.stderr_tail
    assert tr.stdout_tail.strip() == "hello"
    assert [r.tool for r in tr.records] == ["sbcast", "srun", "srun", "srun"]
