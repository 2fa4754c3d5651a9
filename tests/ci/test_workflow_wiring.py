"""pr-gate.yml's shell glue, executed: the gate and setup steps run in order in a real
temporary repository, their ``${{ steps.*/needs.* }}`` expressions resolved from the
``$GITHUB_OUTPUT`` that the previous steps (``ixtool ci plan`` …) actually wrote.

Only the expression forms the workflow uses are resolved (outputs of steps/needs,
``github.*`` from the event); ``uses:`` steps (checkout, setup-python, artifacts) are
replaced by the prepared clone and the installed ixtool.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
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
    base = temp_repo.commit("base")
    with (temp_repo.path / "perf-changelog.yaml").open("a", encoding="utf-8") as fh:
        fh.write(NEW_ENTRY)
    head = temp_repo.commit("Re-run MiniMax-M3")
    return temp_repo, base, head


@pytest.mark.slow
def test_gate_and_setup_jobs_run_end_to_end(clone: tuple[TempRepo, str, str],
                                            tmp_path: Path) -> None:
    repo, base, head = clone
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "pr-gate.yml").read_text("utf-8"))
    event = json.loads((ROOT / "tests" / "cases" / "ci" / "events" /
                        "pull_request.synchronize.json").read_text("utf-8")
                       .replace("__BASE_SHA__", base).replace("__HEAD_SHA__", head))
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    summary = tmp_path / "summary.md"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= {"GITHUB_EVENT_PATH": str(event_path), "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(tmp_path),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    comments = [{"id": 1, "created_at": "2026-01-01T00:00:00Z", "author_association": "MEMBER",
                 "body": "thanks", "user": {"login": "m"}}]
    ctx: dict[str, Any] = {"github": {"event": event},
                           "needs": {"reuse-comments": {"outputs": {
                               "comments": json.dumps(comments)}}}}
    gate = dict(wf["jobs"]["gate"])  # the installed ixtool stands in for `pip install .`
    gate["steps"] = [s for s in gate["steps"] if "Install" not in s.get("name", "")]
    gate_out, rcs = run_job(gate, ctx, repo.path, env, tmp_path)
    assert rcs == [0, 0, 0, 0]  # plan, changelog validate, config validate, policy check
    assert gate_out["sweep"] == "true" and gate_out["sweep-flags"] == "--trim-conc"
    assert gate_out["diff-head"] == head and gate_out["canary"] == "false"
    text = summary.read_text(encoding="utf-8")
    assert "`ixtool ci plan`" in text and "changelog validate" in text

    ctx = {"github": {"event": event},
           "needs": {"gate": {"outputs": gate_out, "result": "success"}}}
    setup = dict(wf["jobs"]["setup"])
    setup["steps"] = [s for s in setup["steps"] if "Install" not in s.get("name", "")]
    setup_out, _ = run_job(setup, ctx, repo.path, env, tmp_path)
    shard = json.loads(setup_out["shard-1"])
    assert shard and all(h["runner"] for h in shard) and setup_out["canary"] == "[]"
    assert int(setup_out["jobs"]) == len(shard)
    assert (repo.path / "sweep-matrix.json").is_file()
