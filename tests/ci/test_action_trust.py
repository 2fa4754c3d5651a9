"""The PR's code never runs as the gate (issue 27, item 1): ``action.yml`` run as GitHub
runs it (tests/ci/action_harness.py) over a PR checkout that tries to put its own code
where ixtool's should be.

Every variant commits files into the PR (the working directory of the action) that a
Python started with the checkout on ``sys.path`` would import: a top-level
``inferencex_tools`` package or module, a ``typer``/``ruamel.yaml`` package, a stdlib
module of the same name, ``sitecustomize``/``usercustomize``, a ``.pth`` file, and the
same with ``PYTHONPATH=.`` in the job's environment.  The payload records that it ran
and writes what an attacker wants into ``$GITHUB_OUTPUT`` (``gate=pass``, ``sweep=true``,
a shard on a made-up self-hosted label).  The gate's outputs must be exactly those of the
same PR without these files, and the payload must never run.

Also: a virtualenv planted in the PR's cache scope is never restored in a PR run, and
the files the action writes for the caller (SARIF, stdout) never go into the checkout.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.ci.action_harness import Runner
from tests.ci.test_action import ROOT, _key, _warm_cache
from tests.conftest import TempRepo

ENTRY = """- config-keys:
    - dsr1-fp8-h200-sglang
  description:
    - "{text}"
  pr-link: {link}
"""

PAYLOAD = """\
import os, pathlib
pathlib.Path({mark!r}).write_text("the PR's code ran")
_out = os.environ.get("GITHUB_OUTPUT")
if _out:
    with open(_out, "a") as _fh:
        _fh.write('exit-code=0\\ngate=pass\\nsweep=true\\nerrors=0\\n'
                  'shard-1=[{{"id":"x/0","runner":"attacker-box","name":"x"}}]\\n')
os._exit(0)
"""

# name → (files the PR adds, extra job environment)
VARIANTS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "package": ({"inferencex_tools/__init__.py": "", "inferencex_tools/__main__.py": "@"}, {}),
    "package-init-only": ({"inferencex_tools/__init__.py": "@"}, {}),
    "module": ({"inferencex_tools.py": "@"}, {}),
    "typer": ({"typer/__init__.py": "@"}, {}),
    "ruamel.yaml": ({"ruamel/yaml/__init__.py": "@"}, {}),
    "stdlib json": ({"json.py": "@"}, {}),
    "stdlib platform": ({"platform.py": "@"}, {}),
    "sitecustomize": ({"sitecustomize.py": "@"}, {}),
    "usercustomize": ({"usercustomize.py": "@"}, {}),
    "pth": ({"ixtool-evil.pth": "import evil_ixtool\n", "evil_ixtool.py": "@"}, {}),
    "PYTHONPATH=. sitecustomize": ({"sitecustomize.py": "@"}, {"PYTHONPATH": "."}),
    "PYTHONPATH=. package": ({"inferencex_tools/__init__.py": "@"}, {"PYTHONPATH": "."}),
    "PYTHONSTARTUP": ({"startup.py": "@"}, {"PYTHONSTARTUP": "startup.py",
                                           "PYTHONINSPECT": "1"}),
}


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    store = tmp_path / "cache"
    store.mkdir()
    _warm_cache(store)
    ws = tmp_path / "ws"
    ws.mkdir()
    return Runner(workspace=ws, temp=tmp_path / "runner-temp", cache_store=store,
                  action_path=ROOT, base_env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                              "GIT_CONFIG_NOSYSTEM": "1"})


def _pr(path: Path, extra: dict[str, str]) -> tuple[str, str]:
    """A PR checkout whose gate fails (a placeholder pr-link), plus ``extra`` files."""
    repo = TempRepo(path)
    repo.write("perf-changelog.yaml", ENTRY.format(
        text="First.", link="https://github.com/SemiAnalysisAI/InferenceX/pull/1"))
    base = repo.commit("base")
    with (path / "perf-changelog.yaml").open("a") as fh:
        fh.write("\n" + ENTRY.format(text="Second.", link="TBD"))
    for rel, text in extra.items():
        repo.write(rel, text)
    head = repo.commit("Re-run DSR1 on H200")
    return base, head


def _gate(runner: Runner, base: str, head: str) -> dict[str, str]:
    run = runner.run_action({
        "command": "ci gate", "strict": "false",
        "args": f"--base {base} --head {head} --label sweep-enabled --no-policy "
                f"--priority none --matrix-out {runner.temp}/m.json"})
    assert run.failed_step is None, run.log
    return run.outputs


def _comparable(outputs: dict[str, str]) -> dict[str, str]:
    """The outputs that do not name the commits (which differ by the added files)."""
    commits = {"diff-base", "diff-head", "decision", "stdout-file", "sarif-file", "ixtool"}
    return {k: v for k, v in outputs.items() if k not in commits}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_pr_code_never_runs_as_the_gate(tmp_path: Path, runner: Runner,
                                        variant: str) -> None:
    files, env = VARIANTS[variant]
    mark = tmp_path / "pwned"
    payload = PAYLOAD.format(mark=str(mark))
    clean_ws = tmp_path / "clean"
    clean = Runner(workspace=clean_ws, temp=tmp_path / "clean-temp",
                   cache_store=runner.cache_store, action_path=ROOT,
                   base_env=dict(runner.base_env))
    want = _comparable(_gate(clean, *_pr(clean_ws, {})))
    assert (want["gate"], want["sweep"], want["shard-1"]) == ("fail", "false", "[]"), want

    base, head = _pr(runner.workspace, {k: payload if v == "@" else v
                                        for k, v in files.items()})
    runner.base_env.update(env)
    got = _comparable(_gate(runner, base, head))
    assert not mark.exists(), f"{variant}: the PR's code ran"
    assert got == want, variant
    assert "attacker-box" not in json.dumps(got)


def test_every_python_in_the_action_runs_isolated() -> None:
    """Static: each interpreter the action starts gets -I, and nothing starts a bare
    ``python``/``python3`` from PATH (held-out steps are covered by the rule)."""
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    scripts = "\n".join(s.get("run", "") for s in action["runs"]["steps"])
    # (the launcher's printf argument "$VENV/bin/python" > … is a path, not a call)
    flags = [f for f in re.findall(r'(?:"\$PYTHON"|"\$VENV/bin/python"|"%s")\s+(\S+)',
                                   scripts) if f != ">"]
    assert len(flags) >= 6, flags
    assert set(flags) == {"-I"}, flags
    assert not re.search(r"(?m)(^|[\s;|&(])python3?(\s|$)", scripts)


@pytest.mark.parametrize("event", [  # each ~7-12 s (a cold venv, then pip fails offline)
    "pull_request", pytest.param("pull_request_target", marks=pytest.mark.slow),
    pytest.param("merge_group", marks=pytest.mark.slow)])
def test_a_planted_cache_entry_is_not_restored_in_pr_runs(tmp_path: Path, runner: Runner,
                                                          event: str) -> None:
    """A PR's own workflow can save a cache entry under the action's key in the PR's
    scope; a PR run of the action must not restore it (the venv's python would be the
    PR's program)."""
    key, _ = _key()
    slot = runner.cache_store / re.sub(r"[^\w.-]", "_", key)
    import shutil

    shutil.rmtree(slot)
    (slot / "bin").mkdir(parents=True)
    mark = tmp_path / "pwned"
    fake = slot / "bin" / "python"
    fake.write_text(f"#!/bin/sh\necho planted > '{mark}'\nexit 0\n")
    fake.chmod(0o755)
    (slot / ".ixtool-install").write_text(key + "\n")
    # no network for the cold install: pip fails fast, which is all this test needs
    runner.base_env.update(GITHUB_EVENT_NAME=event, PIP_NO_INDEX="1")
    run = runner.run_action({"command": "rules", "args": "--format json"})
    assert not mark.exists(), "the planted virtualenv ran"
    assert run.step_outputs["prepare"]["cache"] == "false"
    assert run.outputs["cache-hit"] == "false"
    assert "no virtualenv cache in a " + event in run.log


def test_cache_is_used_outside_pr_runs(runner: Runner) -> None:
    runner.base_env.update(GITHUB_EVENT_NAME="push")
    run = runner.run_action({"command": "rules", "args": "--format json"})
    assert run.failed_step is None, run.log
    assert run.outputs["cache-hit"] == "true"


def test_sarif_symlink_in_the_checkout_writes_nothing_outside(tmp_path: Path,
                                                              runner: Runner) -> None:
    """Issue 27 item 5: a PR commits ``ixtool.sarif`` as a link to a file outside the
    workspace; the action's SARIF goes to its own directory under $RUNNER_TEMP."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    repo = TempRepo(runner.workspace)
    repo.write("perf-changelog.yaml", ENTRY.format(text="x", link="TBD") + "  bogus: 1\n")
    os.symlink(outside, runner.workspace / "ixtool.sarif")
    os.symlink(outside, runner.workspace / "stdout.txt")
    repo.commit("PR")
    run = runner.run_action({"command": "changelog validate", "sarif": "ixtool.sarif",
                             "strict": "false"})
    assert run.failed_step is None, run.log
    assert outside.read_text() == "precious\n"
    sarif = Path(run.outputs["sarif-file"])
    assert sarif.is_absolute() and runner.temp in sarif.parents
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert not sarif.is_symlink()
    plain = runner.run_action({"command": "rules", "args": "--format json"})
    out = Path(plain.outputs["stdout-file"])
    assert runner.temp in out.parents and json.loads(out.read_text())
    assert outside.read_text() == "precious\n"


@pytest.mark.parametrize("name", ["../outside.sarif", "/tmp/x.sarif", "a/b.sarif", ".hidden",
                                  "x;touch pwned", ""])
def test_sarif_input_is_a_plain_file_name(runner: Runner, name: str) -> None:
    (runner.workspace / "perf-changelog.yaml").write_text("[]\n")
    run = runner.run_action({"command": "changelog validate", "sarif": name,
                             "strict": "false"})
    if name == "":
        assert run.failed_step is None and run.outputs["sarif-file"] == ""
        return
    assert run.failed_step == "run" and run.rc == 2
    assert "must be a file name" in run.log
    assert not (runner.workspace / "pwned").exists()


def _caching_after_shell(job: dict[str, object]) -> list[str]:
    """Uses of the ixtool action that cache the virtualenv in a job where shell steps run
    after it (the cache is saved at the end of the job, after them)."""
    steps = job.get("steps") or []
    assert isinstance(steps, list)
    bad = []
    for i, step in enumerate(steps):
        uses = str(step.get("uses", ""))
        is_action = uses.startswith("./") or "/ixtool@" in uses
        cache = str((step.get("with") or {}).get("cache", "true")).lower()
        if is_action and cache != "false" and any("run" in s for s in steps[i + 1:]):
            bad.append(str(step.get("name") or uses))
    return bad


def test_no_cache_is_saved_after_pr_code_ran_in_the_job() -> None:
    """The action's cache post step saves the virtualenv when the job ends: in a job that
    runs anything after the action (sweep-shard.yml benchmarks the PR's recipe with the
    launcher on a self-hosted machine), what is saved may be what that code left, and
    every later run restoring the key would run it.  Such jobs pass cache: "false"."""
    import yaml

    found = 0
    for path in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        for name, job in (yaml.safe_load(path.read_text())["jobs"] or {}).items():
            assert not _caching_after_shell(job), f"{path.name}: {name}"
            found += bool(job.get("steps"))
    assert found >= 4
    bad = {"steps": [{"uses": "./", "with": {"command": "ci row"}}, {"run": "bash x.sh"}]}
    assert _caching_after_shell(bad) == ["./"]
    ok = {"steps": [{"uses": "./", "with": {"command": "ci row", "cache": "false"}},
                    {"run": "bash x.sh"}]}
    assert _caching_after_shell(ok) == []


@pytest.mark.parametrize("job", ["pr-gate gate", "sweep plan"])
@pytest.mark.parametrize("variant", ["package", "typer", "PYTHONPATH=. sitecustomize"])
def test_pr_code_never_runs_in_the_workflows_layout(tmp_path: Path, runner: Runner, job: str,
                                                    variant: str) -> None:
    """The layout of pr-gate.yml's gate job and sweep.yml's plan job: the PR checked out
    into pr/ (the action's working directory), ci gate with those jobs' arguments."""
    files, env = VARIANTS[variant]
    mark = tmp_path / "pwned"
    payload = PAYLOAD.format(mark=str(mark))

    def outputs(ws: Path, temp: Path, extra: dict[str, str]) -> dict[str, str]:
        r = Runner(workspace=ws, temp=temp, cache_store=runner.cache_store, action_path=ROOT,
                   base_env={**runner.base_env, **(env if extra else {})})
        ws.mkdir()
        base, head = _pr(ws / "pr", extra)
        args = {"pr-gate gate": f"--root . --base {base} --head {head} --label sweep-enabled "
                                f"--matrix-out {temp}/sweep-matrix.json",
                "sweep plan": f"--root . --base {base} --head {head} --pr 7 --label "
                              f"sweep-enabled --no-policy --matrix-out {temp}/m.json"}[job]
        run = r.run_action({"command": "ci gate", "args": args, "working-directory": "pr",
                            "strict": "false"})
        assert run.failed_step is None, run.log
        return _comparable(run.outputs)

    want = outputs(tmp_path / "clean", tmp_path / "clean-temp", {})
    got = outputs(tmp_path / "attacked", tmp_path / "attacked-temp",
                  {k: payload if v == "@" else v for k, v in files.items()})
    assert not mark.exists(), f"{job}, {variant}: the PR's code ran"
    # (the policy stage of pr-gate.yml looks at the added .py files: its findings may
    # differ in this repository without master configs; the decisions may not)
    deciding = ("gate", "sweep", "jobs", "shard-count", "shard-1", "canary-row")
    assert {k: got[k] for k in deciding} == {k: want[k] for k in deciding}
    assert got["gate"] == "fail" and "attacker-box" not in json.dumps(got)
