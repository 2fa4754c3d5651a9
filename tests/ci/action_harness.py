"""Run ``action.yml`` the way the GitHub runner runs a composite action.

* ``run:`` steps execute with ``bash --noprofile --norc -eo pipefail {0}`` (GitHub's
  ``shell: bash``), in the step's ``working-directory`` below the workspace, with the
  step's ``env:`` (expressions evaluated), a fresh ``$GITHUB_OUTPUT`` file per step,
  and the job's ``$GITHUB_ENV`` / ``$GITHUB_PATH`` / ``$GITHUB_STEP_SUMMARY`` files;
  lines appended to ``$GITHUB_ENV`` reach the following steps, as on the runner.
* Composite actions get their inputs only through ``${{ inputs.* }}`` expressions
  (the runner sets no ``INPUT_*`` variables for them), so none are set here: an
  action that relied on them would fail in this harness as it would on GitHub.
* ``uses:`` steps are stand-ins with the same outputs: ``actions/setup-python`` gives
  ``python-path`` (this interpreter), ``actions/cache`` restores/saves ``path`` from
  a directory per ``key`` (``cache-hit``).
* ``if:`` conditions and the action's ``outputs.*.value`` are evaluated with the
  expression subset the action uses (contexts, ``||``, ``&&``, ``==``, ``!=``,
  string literals); the caller sees exactly the mapped outputs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def parse_file_command(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` / ``$GITHUB_ENV`` content, strictly (``k=v`` and heredocs)."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i]
        eq, hd = line.find("="), line.find("<<")
        if hd != -1 and (eq == -1 or hd < eq):
            name, delim = line[:hd], line[hd + 2:]
            try:
                j = lines.index(delim, i + 1)
            except ValueError:
                raise AssertionError(f"heredoc {name!r} is not closed") from None
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        if eq <= 0:
            raise AssertionError(f"not a file-command line: {line!r}")
        out[line[:eq]] = line[eq + 1:]
        i += 1
    return out


def _tokens(src: str) -> list[str]:
    return re.findall(r"'(?:[^']|'')*'|\|\||&&|==|!=|[A-Za-z_][\w.-]*|\(|\)", src)


def evaluate(src: str, ctx: dict[str, Any]) -> Any:
    """Evaluate one expression of the subset (left to right, && binds tighter than ||)."""
    toks = _tokens(src)
    pos = 0

    def atom() -> Any:
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t.startswith("'"):
            return t[1:-1].replace("''", "'")
        if t == "(":
            v = orexpr()
            pos += 1
            return v
        if t in ("true", "false"):
            return t == "true"
        node: Any = ctx
        for part in t.split("."):
            node = node.get(part, "") if isinstance(node, dict) else ""
        return node

    def cmp() -> Any:
        nonlocal pos
        left = atom()
        while pos < len(toks) and toks[pos] in ("==", "!="):
            op = toks[pos]
            pos += 1
            right = atom()
            eq = str(left).lower() == str(right).lower()
            left = eq if op == "==" else not eq
        return left

    def andexpr() -> Any:
        nonlocal pos
        left = cmp()
        while pos < len(toks) and toks[pos] == "&&":
            pos += 1
            right = cmp()
            left = right if left else left
        return left

    def orexpr() -> Any:
        nonlocal pos
        left = andexpr()
        while pos < len(toks) and toks[pos] == "||":
            pos += 1
            right = andexpr()
            left = left if left else right
        return left

    return orexpr()


def interpolate(value: Any, ctx: dict[str, Any]) -> str:
    text = str(value)
    return EXPR.sub(lambda m: _str(evaluate(m.group(1), ctx)), text)


def _str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else str(v)


@dataclass
class ActionRun:
    outputs: dict[str, str]
    step_outputs: dict[str, dict[str, str]]
    summary: str
    log: str
    failed_step: str | None
    rc: int
    env_file: dict[str, str] = field(default_factory=dict)


@dataclass
class Runner:
    """One job's runner state: workspace, temp, cache store, file-command files."""

    workspace: Path
    temp: Path
    cache_store: Path
    action_path: Path
    python: str = sys.executable
    base_env: dict[str, str] = field(default_factory=dict)

    def run_action(self, inputs: dict[str, str], *, run_id: str = "4242") -> ActionRun:
        action = yaml.safe_load((self.action_path / "action.yml").read_text())
        spec_inputs = action.get("inputs") or {}
        unknown = set(inputs) - set(spec_inputs)
        assert not unknown, f"inputs not declared in action.yml: {unknown}"
        resolved = {k: str(inputs.get(k, (v or {}).get("default", "")))
                    for k, v in spec_inputs.items()}
        for k, v in spec_inputs.items():
            assert not (v or {}).get("required") or inputs.get(k), f"input {k} is required"
        self.temp.mkdir(parents=True, exist_ok=True)
        summary = self.temp / "step_summary.md"
        env_file = self.temp / "github_env"
        path_file = self.temp / "github_path"
        for f in (summary, env_file, path_file):
            f.write_text("")
        steps_ctx: dict[str, Any] = {}
        ctx: dict[str, Any] = {
            "inputs": resolved, "steps": steps_ctx,
            "github": {"action_path": str(self.action_path), "workspace": str(self.workspace),
                       "run_id": run_id},
            "runner": {"temp": str(self.temp), "os": "Linux", "arch": "X64"},
        }
        log: list[str] = []
        failed: str | None = None
        rc = 0
        post: list[tuple[str, Path]] = []
        job_env: dict[str, str] = {}
        for i, step in enumerate(action["runs"]["steps"]):
            sid = step.get("id", f"__{i}")
            cond = step.get("if")
            if failed is not None or (cond is not None and not evaluate(
                    EXPR.sub(lambda m: m.group(1), str(cond)), ctx)):
                steps_ctx[sid] = {"outputs": {}, "outcome": "skipped"}
                continue
            with_ = {k: interpolate(v, ctx) for k, v in (step.get("with") or {}).items()}
            if "uses" in step:
                outs = self._uses(step["uses"], with_, post)
                steps_ctx[sid] = {"outputs": outs, "outcome": "success"}
                continue
            step_env = {k: interpolate(v, ctx) for k, v in (step.get("env") or {}).items()}
            outputs_file = self.temp / f"output_{i}"
            outputs_file.write_text("")
            env = {
                **self.base_env, **job_env,
                "GITHUB_OUTPUT": str(outputs_file), "GITHUB_ENV": str(env_file),
                "GITHUB_PATH": str(path_file), "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_WORKSPACE": str(self.workspace), "GITHUB_ACTIONS": "true",
                "GITHUB_RUN_ID": run_id, "RUNNER_TEMP": str(self.temp),
                "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", "CI": "true", **step_env,
            }
            extra_path = [p for p in path_file.read_text().splitlines() if p]
            env["PATH"] = os.pathsep.join([*reversed(extra_path), env.get("PATH", "")])
            wd = self.workspace / interpolate(step.get("working-directory", "."), ctx)
            script = self.temp / f"step_{i}.sh"
            script.write_text(step["run"])
            assert step.get("shell") == "bash", f"step {sid}: composite run steps need shell"
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail",
                                   str(script)], cwd=wd, env=env, capture_output=True,
                                  text=True, check=False)
            log.append(f"## {step.get('name', sid)}\n{proc.stdout}{proc.stderr}")
            outs = parse_file_command(outputs_file.read_text())
            steps_ctx[sid] = {"outputs": outs,
                              "outcome": "success" if proc.returncode == 0 else "failure"}
            job_env = {**job_env, **parse_file_command(env_file.read_text())}
            if proc.returncode != 0:
                failed, rc = sid, proc.returncode
        for src, dest in post:  # actions/cache post step: save on success, on a miss
            if failed is None and src.exists() and not dest.exists():
                shutil.copytree(src, dest, symlinks=True)
        outputs = {k: _str(evaluate(EXPR.sub(lambda m: m.group(1), str(v["value"])), ctx))
                   for k, v in (action.get("outputs") or {}).items()}
        return ActionRun(outputs=outputs,
                         step_outputs={k: v["outputs"] for k, v in steps_ctx.items()},
                         summary=summary.read_text(), log="\n".join(log),
                         failed_step=failed, rc=rc,
                         env_file=parse_file_command(env_file.read_text()))

    def _uses(self, uses: str, with_: dict[str, str], post: list[tuple[str, Path]]
              ) -> dict[str, str]:
        name = uses.split("@", 1)[0]
        assert re.fullmatch(r"[^@]+@[0-9a-f]{40}", uses), f"{uses}: not pinned by SHA"
        if name == "actions/setup-python":
            return {"python-path": self.python,
                    "python-version": ".".join(map(str, sys.version_info[:3]))}
        if name == "actions/cache":
            path = Path(with_["path"])
            slot = self.cache_store / re.sub(r"[^\w.-]", "_", with_["key"])
            hit = slot.exists()
            if hit and not path.exists():
                shutil.copytree(slot, path, symlinks=True)
            post.append((path, slot))
            return {"cache-hit": "true" if hit else "false"}
        raise AssertionError(f"no stand-in for {uses}")
