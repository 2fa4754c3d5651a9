"""pr-gate.yml's shell glue, executed: the gate and setup steps run in order in a real
temporary repository, their ``${{ steps.*/needs.* }}`` expressions resolved from the
``$GITHUB_OUTPUT`` that the previous steps (``ixtool ci plan`` …) actually wrote.

Only the expression forms the workflow uses are resolved (outputs of steps/needs,
``github.*`` from the event); ``uses:`` steps (checkout, setup-python, artifacts) are
replaced by the prepared clone and the installed ixtool.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ci.test_plan import parse_github_output
from tests.conftest import TempRepo

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ("perf-changelog.yaml", "configs", "runners", "benchmarks/single_node",
          "benchmarks/benchmark_lib.sh", "golden_al_distribution")
NEW_ENTRY = """
- config-keys:
    - minimaxm3-fp8-h200-vllm-agentic-mtp
  scenario-type:
    - agentic-coding
  description:
    - "Re-run the MiniMax-M3 H200 recipe."
  pr-link: XXX
"""
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}", re.S)


def resolve(text: str, ctx: dict[str, Any]) -> str:
    def one(m: re.Match[str]) -> str:
        expr = m.group(1)
        if " == " in expr:  # `<ref> == 'x'`
            ref, lit = expr.split(" == ")
            return "true" if lookup(ref.strip(), ctx) == lit.strip().strip("'") else "false"
        return lookup(expr, ctx)
    return EXPR.sub(one, text)


def lookup(ref: str, ctx: dict[str, Any]) -> str:
    if "||" in ref:
        for part in ref.split("||"):
            v = lookup(part.strip(), ctx)
            if v:
                return v
        return ""
    cur: Any = ctx
    for key in ref.split("."):
        cur = cur.get(key, "") if isinstance(cur, dict) else ""
    return cur if isinstance(cur, str) else ("" if cur == "" else json.dumps(cur))


def cond_true(cond: str | None, ctx: dict[str, Any]) -> bool:
    if cond is None:
        return True
    body = EXPR.sub(lambda m: m.group(1), cond).replace("!cancelled() &&", "").strip()
    parts = [p.strip() for p in body.split("&&")]
    return all(resolve("${{ " + p + " }}", ctx) == "true" for p in parts)


def run_job(job: dict[str, Any], ctx: dict[str, Any], cwd: Path, env: dict[str, str],
            outdir: Path) -> tuple[dict[str, str], list[int]]:
    """Run a job's `run:` steps; returns the step outputs of id'd steps and exit codes."""
    rcs: list[int] = []
    ctx.setdefault("steps", {})
    for i, step in enumerate(job["steps"]):
        if "run" not in step or not cond_true(step.get("if"), ctx):
            continue
        out = outdir / f"out-{id(job)}-{i}"
        out.write_text("", encoding="utf-8")
        step_env = {**env, "GITHUB_OUTPUT": str(out)}
        step_env.update({k: resolve(str(v), ctx) for k, v in (step.get("env") or {}).items()})
        script = outdir / f"step-{i}.sh"
        script.write_text(step["run"], encoding="utf-8")
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                           cwd=cwd, env=step_env, capture_output=True, text=True,
                           check=False, timeout=300)
        rcs.append(p.returncode)
        if "id" in step:
            ctx["steps"][step["id"]] = {"outputs": parse_github_output(
                out.read_text(encoding="utf-8"))}
        if p.returncode != 0 and step.get("id") not in ("plan",):
            raise AssertionError(f"step {step.get('name')} failed:\n{p.stdout}\n{p.stderr}")
    return {k: resolve(str(v), ctx) for k, v in (job.get("outputs") or {}).items()}, rcs


@pytest.fixture
def clone(temp_repo: TempRepo) -> tuple[TempRepo, str, str]:
    for rel in RECIPE:
        src, dst = ROOT / rel, temp_repo.path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    from tests.conftest import CORPUS

    policy = CORPUS / "configs" / "ci-priority.yaml"  # the real queue policy, at the base
    if policy.is_file():
        shutil.copy2(policy, temp_repo.path / "configs" / "ci-priority.yaml")
    base = temp_repo.commit("base")
    with (temp_repo.path / "perf-changelog.yaml").open("a", encoding="utf-8") as fh:
        fh.write(NEW_ENTRY)
    head = temp_repo.commit("Re-run MiniMax-M3")
    return temp_repo, base, head


@pytest.mark.slow
def test_gate_job_runs_end_to_end(clone: tuple[TempRepo, str, str], tmp_path: Path) -> None:
    """pr-gate.yml's gate job: the trusted action (this checkout) runs `ci gate` over the
    PR clone as GitHub would run it (tests/ci/action_harness.py); its outputs feed the
    job's outputs and the sweep-matrix artifact."""
    from tests.ci.action_harness import Runner, interpolate
    from tests.ci.test_action import _installed_earlier_in_the_job, _warm_cache

    repo, base, head = clone
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "pr-gate.yml").read_text("utf-8"))
    event = json.loads((ROOT / "tests" / "cases" / "ci" / "events" /
                        "pull_request.synchronize.json").read_text("utf-8")
                       .replace("__BASE_SHA__", base).replace("__HEAD_SHA__", head))
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.move(str(repo.path), ws / "pr")  # the PR head checkout (path: pr)
    store = tmp_path / "cache"
    store.mkdir()
    _warm_cache(store)
    runner = Runner(workspace=ws, temp=tmp_path / "temp", cache_store=store, action_path=ROOT,
                    base_env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                              "GITHUB_EVENT_PATH": str(event_path),
                              "GITHUB_EVENT_NAME": "pull_request",
                              "GITHUB_REPOSITORY": "SemiAnalysisAI/InferenceX"})
    runner.temp.mkdir()
    _installed_earlier_in_the_job(runner)  # a pull_request run restores no cache
    (runner.temp / "comments.json").write_text("[]")
    step = next(st for st in wf["jobs"]["gate"]["steps"] if st.get("id") == "gate")
    ctx = {"runner": {"temp": str(runner.temp)}}
    inputs = {k: interpolate(v, ctx) for k, v in step["with"].items()}
    run = runner.run_action(inputs)
    assert run.failed_step is None, run.log
    assert run.outputs["sweep"] == "true" and run.outputs["sweep-flags"] == "--trim-conc"
    assert run.outputs["diff-head"] == head and run.outputs["canary"] == "false"
    shard = json.loads(run.outputs["shard-1"])
    assert shard and all(h["runner"] for h in shard)
    assert int(run.outputs["jobs"]) == len(shard)
    matrix = json.loads((runner.temp / "sweep-matrix.json").read_text())
    rows = [r for v in matrix["single_node"].values() for r in v]
    assert rows
    if (ws / "pr" / "configs" / "ci-priority.yaml").is_file():
        assert all("priority" in r and "queue-token" in r for r in rows)
    sarif = Path(run.outputs["sarif-file"])  # under $RUNNER_TEMP, never in the checkout
    assert sarif.name == "ixtool.sarif" and runner.temp in sarif.parents
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert not (ws / "pr" / "ixtool.sarif").exists()
    job_outputs = {k: interpolate(v, {"steps": {"gate": {"outputs": run.outputs}}})
                   for k, v in wf["jobs"]["gate"]["outputs"].items()}
    assert job_outputs["sweep"] == "true" and job_outputs["pr-number"] == str(
        event["pull_request"]["number"])
