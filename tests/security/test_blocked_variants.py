"""Held-out variants of issue 27 that the controls already block: kept as regressions.

* settings/curves (#27.2): the PR brings its own curve file and points the registry at
  it, or renames the draft and registers it with its own curve — judged by the base's
  registry and curves;
* hidden launches (#27.3/#27.6): a recipe that starts vLLM by another way than the
  plain command (PATH reset, ``command -p``, ``python -m …api_server``, ``bash -c``,
  ``exec -a``, a second launch) is seen or fails closed;
* workflow commands (#27.4): PR text with newlines and ``::`` (a config key, a changelog
  key and description, a file name) never starts a line of ``--format github`` output
  on stdout or stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci.test_gate_trust import CURVE, ENTRY, _env, _gate, _pr
from tests.conftest import ROOT
from tests.policy.test_check import CONFIG, KEY, SEED, check, seed_repo

REGISTRY = "golden_al_distribution/registry.yaml"
RECIPE = (ROOT / SEED).read_text()


def _curve_360(corpus: Path) -> str:
    return (corpus / CURVE).read_text().replace("    3: 2.83\n", "    3: 3.60\n", 1)


def _registry(old: str, new: str) -> str:
    text = (ROOT / REGISTRY).read_text()
    assert old in text
    return text.replace(old, new, 1)


V2 = "Inferact/MiniMax-M3-EAGLE3-v2"
SETTINGS = {
    "registry points the row at the PR's own curve": (
        {REGISTRY: _registry("    curve: minimaxm3_eagle3.yaml\n",
                             "    curve: minimaxm3_eagle3_v2.yaml\n"),
         "golden_al_distribution/minimaxm3_eagle3_v2.yaml": "@curve"}, "PO403"),
    "draft renamed, registered with the PR's own curve": (
        {SEED: RECIPE.replace("GOLDEN_AL=2.83", "GOLDEN_AL=3.60")
         .replace("Inferact/MiniMax-M3-EAGLE3", V2),
         REGISTRY: _registry("entries:\n", "entries:\n  - id: mm3-v2\n    model-prefix: "
                             f"minimaxm3\n    method: eagle3\n    draft: {V2}\n    curve: "
                             "minimaxm3_eagle3_v2.yaml\n    model-key: minimax-m3\n"),
         "golden_al_distribution/minimaxm3_eagle3_v2.yaml": "@curve"}, "PO405"),
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_pr_s_curves_do_not_judge_it(tmp_path: Path, corpus: Path, name: str) -> None:
    files, rule = SETTINGS[name]
    files = {k: _curve_360(corpus) if v == "@curve" else v for k, v in files.items()}
    path = tmp_path / "repo"
    base, head = _pr(path, corpus, files)
    rc, outputs, doc = _gate(path, "event", base, head)
    assert rc == 1 and outputs["gate"] == "fail", doc["findings"]
    assert rule in {f["rule"] for f in doc["findings"] if f["severity"] == "error"}


LAUNCH = '"${SERVER_CMD[@]}" > "$SERVER_LOG" 2>&1 &\n'
AT_360 = '"${SERVER_CMD[@]/2.83/3.60}"'
HIDDEN = {
    "PATH reset": ("PATH=/usr/local/bin:/usr/bin:/bin " + AT_360, "PO302"),
    "command -p": ("command -p " + AT_360, "PO302"),
    "python -m api_server": ('python3 -m vllm.entrypoints.openai.api_server --model "$MODEL" '
                             '--port "$PORT" --speculative-config '
                             '"${SPEC_CONFIG/2.83/3.60}"', "PO403"),
    "bash -c": ('bash -c "$(printf "%q " ' + AT_360 + ')"', "PO403"),
    "exec -a": ("(exec -a vllm " + AT_360 + ")", "PO403"),
    "a second launch": (LAUNCH.rstrip(" &\n") + " &\nsleep 1; " + AT_360 + " --port 8889",
                        "PO403"),
}


@pytest.mark.parametrize("name", list(HIDDEN))
def test_a_hidden_launch_is_seen_or_fails(tmp_path: Path, corpus: Path, name: str) -> None:
    launch, rule = HIDDEN[name]
    res = check(seed_repo(tmp_path, (LAUNCH, launch + ' > "$SERVER_LOG" 2>&1 &\n')), corpus)
    assert res.exit_code() == 1 and rule in {f.rule for f in res.errors}, \
        [(f.rule, f.message[:80]) for f in res.findings]


def test_pr_text_never_starts_a_workflow_command(tmp_path: Path, corpus: Path) -> None:
    evil = "x\n::warning title=FORGED::forged\n::add-mask::error\r::stop-commands::t"
    path = tmp_path / "repo"
    base, _ = _pr(path, corpus, {})
    cfg = path / "configs" / "nvidia-master.yaml"
    cfg.write_text(cfg.read_text() + "\n" + CONFIG.replace(KEY + ":", json.dumps(evil) + ":"))
    with (path / "perf-changelog.yaml").open("a") as fh:
        fh.write("\n" + ENTRY.format(key=json.dumps(evil), text="d\\n::warning::d", link="XXX"))
    (path / "benchmarks" / "a\n::warning::file.sh").write_text("echo\n")
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "x"], check=True)
    for args in (["ci", "gate", "--priority", "none", "--base", base, "--pr", "7", "--label",
                  "sweep-enabled"], ["policy", "check", "--base", base],
                 ["config", "validate", "--base", base], ["changelog", "validate", "--base",
                                                          base]):
        p = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *args, "--format",
                            "github"], cwd=path, env=_env(tmp_path), capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 1, (args, p.stderr)
        lines = (p.stdout + "\n" + p.stderr).replace("\r", "\n").split("\n")
        stray = [ln for ln in lines if ln.startswith("::") and not
                 ln.startswith(("::error file=", "::warning file=", "::notice file="))]
        assert stray == [], (args, stray)
