"""The workflows and the composite action: actionlint, zizmor and structural rules.

actionlint and zizmor come with the test extras; a test skips only when its
binary is missing.  The structural checks need nothing but PyYAML.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from inferencex_tools.ci.labels import RELEVANT

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTION = ROOT / "action.yml"


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return found


def load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_actionlint_clean() -> None:
    p = subprocess.run([tool("actionlint"), "-no-color", *map(str, WORKFLOWS)], cwd=ROOT,
                       capture_output=True, text=True, check=False, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_zizmor_clean() -> None:
    p = subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--persona", "pedantic",
                        "--format", "plain", str(ROOT / ".github" / "workflows"), str(ACTION)],
                       cwd=ROOT, capture_output=True, text=True, check=False, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def steps_of(doc: dict[Any, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for job in (doc.get("jobs") or {}).values():
        out += job.get("steps") or []
    runs = doc.get("runs")
    if isinstance(runs, dict):
        out += runs.get("steps") or []
    return out


@pytest.mark.parametrize("path", [*WORKFLOWS, ACTION], ids=lambda p: p.name)
def test_no_expressions_in_shell_and_no_secrets(path: Path) -> None:
    doc = load(path)
    for step in steps_of(doc):
        if "run" in step:
            assert "${{" not in step["run"], f"{path.name}: {step.get('name')}: use env:"
        uses = step.get("uses")
        if uses and not uses.startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", uses), f"unpinned {uses}"
    assert "secrets." not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_permissions_minimal(path: Path) -> None:
    doc = load(path)
    assert doc.get("permissions") == {}, "top-level permissions must be {}"
    for name, job in doc["jobs"].items():
        perms = job.get("permissions")
        assert isinstance(perms, dict), f"{name}: set job permissions explicitly"
        assert all(v in ("read", "none") for v in perms.values()), f"{name}: {perms}"


def test_pr_gate_triggers_and_concurrency_match_the_policy() -> None:
    doc = load(ROOT / ".github" / "workflows" / "pr-gate.yml")
    on = doc[True] if True in doc else doc["on"]  # YAML 1.1 reads `on` as true
    assert on["pull_request"]["types"] == [
        "opened", "synchronize", "reopened", "labeled", "unlabeled", "ready_for_review"]
    assert "merge_group" in on
    group = doc["concurrency"]["group"]
    labels = json.loads(re.search(r"fromJSON\('(\[.*?\])'\)", group).group(1))  # type: ignore[union-attr]
    assert labels == list(RELEVANT), "the workflow's relevant labels drifted from the code"
    assert "github.run_id" in group and doc["concurrency"]["cancel-in-progress"] is True
    jobs = doc["jobs"]
    sweeps = [n for n in jobs if n.startswith("sweep-")]
    assert len(sweeps) == 4
    for n in sweeps:
        cond = jobs[n]["if"]
        assert f"needs.setup.outputs.shard-{n[6:]} != '[]'" in cond
        assert "needs.canary.result == 'success'" in cond and jobs[n]["needs"][-1] == "canary"
    assert jobs["canary"]["with"]["shard"] == "${{ needs.setup.outputs.canary }}"
    shard = load(ROOT / ".github" / "workflows" / "sweep-shard.yml")
    assert shard["jobs"]["row"]["runs-on"] == "${{ matrix.runner }}"
    text = (ROOT / ".github" / "workflows" / "pr-gate.yml").read_text(encoding="utf-8")
    for cmd in ("ixtool ci plan", "ixtool changelog validate", "ixtool config validate",
                "ixtool policy check", "ixtool sweep from-changelog", "ixtool ci shards"):
        assert cmd in text


def test_action_inputs() -> None:
    doc = load(ACTION)
    assert set(doc["inputs"]) == {"command", "args", "python-version", "working-directory",
                                  "strict", "sarif", "version", "cache"}
    assert doc["runs"]["using"] == "composite"
    text = ACTION.read_text(encoding="utf-8")
    assert "github.action_path" in text and "--format github" in text


def run_action_step(tmp_path: Path, command: str, args: str) -> tuple[int, str, str]:
    """Execute the action's 'Run ixtool' step script as the runner would (bash -e)."""
    doc = load(ACTION)
    (step,) = [s for s in doc["runs"]["steps"] if s.get("id") == "run"]
    script = tmp_path / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    out = tmp_path / "github_output"
    out.write_text("", encoding="utf-8")
    ixtool = shutil.which("ixtool", path=str(Path(sys.executable).parent))
    assert ixtool is not None
    env = {"PATH": "/usr/bin:/bin", "IXTOOL": ixtool, "IXTOOL_COMMAND": command,
           "IXTOOL_ARGS": args, "GITHUB_OUTPUT": str(out), "HOME": str(tmp_path),
           "IXTOOL_STRICT": "true", "IXTOOL_SARIF": "", "RUNNER_TEMP": str(tmp_path),
           "GITHUB_RUN_ID": "1"}
    p = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(script)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
                       timeout=60)
    return p.returncode, p.stdout, out.read_text(encoding="utf-8")


def test_action_step_runs_the_command_with_annotations(tmp_path: Path) -> None:
    rc, stdout, outputs = run_action_step(tmp_path, "labels explain",
                                          "sweep-enabled full-sweep-enabled")
    assert rc == 1 and "exit-code=1" in outputs
    assert "::error file=labels,title=CI101::" in stdout


def test_action_inputs_are_not_shell_evaluated(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    (tmp_path / "skip-queue").write_text("", encoding="utf-8")  # what `*` would glob to
    rc, stdout, outputs = run_action_step(tmp_path, "labels explain",
                                          f"$(touch {marker}) `touch {marker}` *")
    assert not marker.exists()
    assert rc == 0 and "exit-code=0" in outputs
    assert "CI103" not in stdout  # `*` stayed a literal word, no file names crept in
    rc, stdout, _ = run_action_step(tmp_path, "labels explain", "skip-queue")
    assert "CI103" in stdout  # …while the same label given literally is reported
