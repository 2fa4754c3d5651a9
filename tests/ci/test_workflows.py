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
        writes = {k for k, v in perms.items() if v == "write"}
        assert writes <= {"actions"}, f"{name}: {perms}"
        if writes:  # the only write: dispatching sweep.yml, with no checkout at all
            assert not any("actions/checkout" in str(st.get("uses", ""))
                           for st in job.get("steps") or []), name


# ------------------------------------------------------ privileged jobs run trusted code

HOSTED = re.compile(r"(ubuntu|windows|macos)-[\w.-]+")
UNTRUSTED_REFS = ("pull_request.head", "merge_group.head", "inputs.sha", "inputs.ref",
                  "refs/pull/", "diff-head")
EXEC_FROM = re.compile(r"(?:^|[\s;&|(])(?:bash|sh|python3?|source|\.|exec)\s+[\"']?"
                       r"(?:\$GITHUB_WORKSPACE/|\./)?pr/|(?:^|\s)\.?/?pr/\S+\.(?:sh|py)\b|"
                       r"pip[\w.]*\s+install[^\n]*\s[\"']?\.?/?pr\b|uses:\s*\./pr\b")


def _on(doc: dict[Any, Any]) -> dict[str, Any]:
    on = doc[True] if True in doc else doc["on"]
    return on if isinstance(on, dict) else {k: None for k in on}


def _privileged(job: dict[str, Any]) -> bool:
    runs_on = str(job.get("runs-on", ""))
    perms = job.get("permissions") or {}
    return (bool(runs_on) and not HOSTED.fullmatch(runs_on)) or "write" in perms.values() \
        or "environment" in job


def _jobs_with_steps() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in WORKFLOWS:
        for name, job in load(path)["jobs"].items():
            if "steps" in job:
                out.append((path.name, name, job))
    return out


@pytest.mark.parametrize("wf,name,job", _jobs_with_steps(), ids=lambda x: x
                         if isinstance(x, str) else "")
def test_privileged_jobs_execute_no_pr_code(wf: str, name: str, job: dict[str, Any]) -> None:
    """A job on a self-hosted runner, with a write permission or an environment never
    executes code from the PR head: PR revisions are checked out only into a data
    directory (`path:`), never executed, installed or used as an action from there."""
    check_privileged(wf, name, job)


_CO = "actions/checkout@" + "0" * 40
BAD_JOBS = [
    {"runs-on": "${{ matrix.runner }}", "environment": "e", "steps": [
        {"uses": _CO, "with": {"ref": "${{ inputs.sha }}"}}, {"run": "bash run.sh"}]},
    {"runs-on": "${{ matrix.runner }}", "environment": "e", "steps": [
        {"uses": _CO, "with": {"ref": "${{ inputs.sha }}", "path": "pr"}},
        {"run": "bash pr/runners/launch_x.sh"}]},
    {"runs-on": "${{ matrix.runner }}", "environment": "e", "steps": [
        {"uses": _CO, "with": {"ref": "refs/pull/1/head", "path": "pr"}},
        {"run": "python -m pip install ./pr"}]},
    {"runs-on": "${{ matrix.runner }}", "environment": "e", "steps": [
        {"uses": _CO, "with": {"ref": "refs/pull/1/head", "path": "pr"}}, {"uses": "./pr"}]},
    {"runs-on": "${{ matrix.runner }}", "steps": [{"uses": _CO}, {"run": "true"}]},
    {"runs-on": "ubuntu-latest", "permissions": {"contents": "write"}, "steps": [
        {"uses": _CO, "with": {"ref": "${{ github.event.pull_request.head.sha }}"}}]},
]


@pytest.mark.parametrize("job", BAD_JOBS)
def test_the_privileged_check_catches_pr_code(job: dict[str, Any]) -> None:
    with pytest.raises(AssertionError):
        check_privileged("x.yml", "bad", job)


def check_privileged(wf: str, name: str, job: dict[str, Any]) -> None:
    if not _privileged(job):
        return
    steps = job["steps"]
    data_dirs: set[str] = set()
    trusted_dirs: set[str] = set()
    for st in steps:
        if "actions/checkout" not in str(st.get("uses", "")):
            continue
        ref = str((st.get("with") or {}).get("ref", ""))
        where = str((st.get("with") or {}).get("path", "."))
        if any(u in ref for u in UNTRUSTED_REFS):
            assert where != ".", f"{wf}:{name}: PR revision checked out as the workspace"
            data_dirs.add(where)
        else:
            assert not ref, f"{wf}:{name}: privileged checkout of {ref!r} (use the default)"
            trusted_dirs.add(where)
    for st in steps:
        uses = str(st.get("uses", ""))
        if uses.startswith("./"):
            target = uses[2:].split("/")[0] or "."
            assert target in trusted_dirs, f"{wf}:{name}: action from untrusted {uses}"
        text = str(st.get("run", ""))
        for d in data_dirs:
            rx = re.compile(EXEC_FROM.pattern.replace("pr", re.escape(d)))
            assert not rx.search(text), f"{wf}:{name}: executes {d}/ in {st.get('name')}"
    if not HOSTED.fullmatch(str(job.get("runs-on", ""))):
        assert job.get("environment"), f"{wf}:{name}: self-hosted job without approval env"


def test_self_hosted_jobs_only_in_default_branch_workflows() -> None:
    """Self-hosted jobs live in sweep-shard.yml, called only by sweep.yml, which only a
    workflow_dispatch on the default branch starts (checked at run time too)."""
    for path in WORKFLOWS:
        doc = load(path)
        on = _on(doc)
        hosted = [n for n, j in doc["jobs"].items() if "runs-on" in j
                  and not HOSTED.fullmatch(str(j["runs-on"]))]
        if hosted:
            assert set(on) == {"workflow_call"}, f"{path.name}: self-hosted jobs on {set(on)}"
        callers = [p for p in WORKFLOWS if f"./.github/workflows/{path.name}" in p.read_text()]
        for c in callers:
            if hosted:
                assert set(_on(load(c))) == {"workflow_dispatch"}, c.name
    sweep = load(ROOT / ".github" / "workflows" / "sweep.yml")
    first = sweep["jobs"]["plan"]["steps"][0]["run"]
    assert 'refs/heads/$DEFAULT_BRANCH' in first
    assert "pull_request_target" not in "".join(p.read_text() for p in WORKFLOWS)


def test_runner_labels_come_from_the_trusted_gate() -> None:
    """runs-on of the row jobs is a handle from `ci gate` run with the trusted action
    (its labels allow-listed by the default branch's runners.yaml), never from PR code."""
    shard = load(ROOT / ".github" / "workflows" / "sweep-shard.yml")
    assert shard["jobs"]["row"]["runs-on"] == "${{ matrix.runner }}"
    assert shard["jobs"]["row"]["strategy"]["matrix"]["include"] == \
        "${{ fromJSON(inputs.shard) }}"
    sweep = load(ROOT / ".github" / "workflows" / "sweep.yml")
    plan = sweep["jobs"]["plan"]
    gate = next(s for s in plan["steps"] if s.get("id") == "gate")
    assert gate["uses"].startswith("./trusted") and gate["with"]["command"] == "ci gate"
    assert "--no-policy" in gate["with"]["args"]
    trusted = next(s for s in plan["steps"] if (s.get("with") or {}).get("path") == "trusted")
    assert "ref" not in trusted["with"]
    for n, job in sweep["jobs"].items():
        if n.startswith("sweep-") or n == "canary":
            assert "needs.plan.outputs." in str(job["with"]["shard"])


def test_pr_gate_runs_trusted_tooling_over_pr_data() -> None:
    doc = load(ROOT / ".github" / "workflows" / "pr-gate.yml")
    on = _on(doc)
    assert on["pull_request"]["types"] == [
        "opened", "synchronize", "reopened", "labeled", "unlabeled", "ready_for_review"]
    assert "perf-changelog.yaml" in on["pull_request"]["paths"]
    assert "docs/**" not in on["pull_request"]["paths"]
    assert "merge_group" in on
    group = doc["concurrency"]["group"]
    labels = json.loads(re.search(r"fromJSON\('(\[.*?\])'\)", group).group(1))  # type: ignore[union-attr]
    assert labels == list(RELEVANT), "the workflow's relevant labels drifted from the code"
    assert "github.run_id" in group and doc["concurrency"]["cancel-in-progress"] is True
    gate = doc["jobs"]["gate"]
    checkouts = {s["with"]["path"]: s["with"]["ref"] for s in gate["steps"]
                 if "actions/checkout" in str(s.get("uses", ""))}
    assert "base" in checkouts["trusted"] and "head" in checkouts["pr"]
    step = next(s for s in gate["steps"] if s.get("id") == "gate")
    assert step["uses"].startswith("./trusted") and step["with"]["command"] == "ci gate"
    assert step["with"]["working-directory"] == "pr"
    assert all(HOSTED.fullmatch(str(j["runs-on"])) for j in doc["jobs"].values()), \
        "pr-gate.yml has only GitHub-hosted jobs"
    dispatch = doc["jobs"]["dispatch"]
    assert "head.repo.full_name == github.repository" in dispatch["if"]
    assert "gh workflow run sweep.yml" in dispatch["steps"][0]["run"]


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
    # the words arrive literally: '$(touch' is not a label (labels explain refuses it, 2)
    assert rc == 2 and "exit-code=2" in outputs
    assert "CI103" not in stdout  # `*` stayed a literal word, no file names crept in
    rc, stdout, _ = run_action_step(tmp_path, "labels explain", "skip-queue")
    assert "CI103" in stdout  # …while the same label given literally is reported
