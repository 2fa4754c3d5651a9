"""A PR cannot change its own verdict (issue 27, item 2): in a PR context the settings,
the baseline and the golden curves that judge the change are its base's.

The PR of the issue: a recipe pinning AL 3.60 where the golden value is 2.83 (PO403,
the gate fails).  Each variant adds to the same PR what an author would add to bend the
verdict — ``disable = ["PO"]`` in ``.ixtool.toml``, a ``[tool.ixtool]`` table, severity
``off``, a per-path ignore, a baseline that lists the finding (at the default path or
where its own settings point), the golden curve edited to 3.60, files named
``inferencex_tools*`` — and the gate's outputs (gate, sweep, errors, shards, jobs) must be
exactly the clean PR's, through ``--base`` and through a ``pull_request`` event.  The
change is named (CI601, PO109).  Locally, without a base, the working tree's settings
still apply.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, TempRepo
from tests.policy.test_check import CONFIG, KEY, SEED, seed_repo

CURVE = "golden_al_distribution/minimaxm3_eagle3.yaml"
DECOY_SCRIPT = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_vllm.sh"
EVENT = ROOT / "tests" / "cases" / "ci" / "events" / "pull_request.synchronize.json"
RUNNERS = """labels:
  cluster:h200-dgxc:
    - h200-dgxc-slurm_0
hardware:
  cluster:h200-dgxc:
    available-cpu-dram-mib: 1_471_356
    gpus-per-node: 8
"""
ENTRY = """- config-keys:
    - {key}
  description:
    - "{text}"
  pr-link: {link}
"""


def _curve_at_360(repo: Path) -> str:
    text = (repo / CURVE).read_text()
    assert "    3: 2.83\n" in text
    return text.replace("    3: 2.83\n", "    3: 3.60\n", 1)


# name → files the PR adds or changes ("@curve": the curve with K=3 at 3.60; "@PO403":
# a baseline listing the PR's finding)
VARIANTS: dict[str, dict[str, str]] = {
    "settings flip (.ixtool.toml disable PO)": {".ixtool.toml": 'disable = ["PO"]\n'},
    "[tool.ixtool] in pyproject.toml": {
        "pyproject.toml": '[project]\nname = "x"\n\n[tool.ixtool]\ndisable = ["PO403"]\n'},
    "severity off": {".ixtool.toml": '[severity]\nPO403 = "off"\n'},
    "per-path ignore": {".ixtool.toml": '[per-path-ignores]\n"benchmarks/" = ["PO"]\n'},
    "baseline swallows the finding": {".ixtool-baseline.json": "@PO403"},
    "settings point at a baseline": {".ixtool.toml": 'baseline = "known/findings.json"\n',
                                     "known/findings.json": "@PO403"},
    "edited golden curve": {CURVE: "@curve"},
    "curve, settings and baseline together": {CURVE: "@curve",
                                              ".ixtool.toml": 'disable = ["PO", "CI"]\n',
                                              ".ixtool-baseline.json": "@PO403"},
    "layout settings point at a decoy": {
        ".ixtool.toml": 'master-configs = ["decoy/*-master.yaml"]\n',
        "decoy/nvidia-master.yaml": "@decoy", "decoy/runners.yaml": RUNNERS,
        DECOY_SCRIPT: "@seed"},
    "a workflow points at a decoy": {
        ".github/workflows/bench.yml": "on: workflow_dispatch\njobs:\n  a:\n    runs-on: x\n"
        "    steps:\n      - run: python utils/x.py --config-files decoy/nvidia-master.yaml "
        "--runner-config decoy/runners.yaml\n",
        "decoy/nvidia-master.yaml": "@decoy", "decoy/runners.yaml": RUNNERS,
        DECOY_SCRIPT: "@seed"},
    "inferencex_tools* files": {"inferencex_tools/__init__.py": "raise SystemExit(0)\n",
                                "inferencex_tools/__main__.py": "raise SystemExit(0)\n",
                                "inferencex_tools.py": "raise SystemExit(0)\n",
                                "inferencex_tools_settings.toml": 'disable = ["PO"]\n'},
}
DECIDING = ("gate", "sweep", "errors", "jobs", "shard-count", "shard-1", "canary-row",
            "changelog-gate", "policy-check", "sweep-mode")


def _pr(path: Path, corpus: Path, extra: dict[str, str], identity: str = ""
        ) -> tuple[str, str]:
    """(base, head): the base repository, and the PR pinning AL 3.60 plus ``extra``
    (``identity``: the PO403 finding's, for a baseline that lists it)."""
    path.mkdir(parents=True)
    repo = TempRepo(path)
    seed_repo(path)
    shutil.copytree(corpus / "golden_al_distribution", path / "golden_al_distribution")
    shutil.copyfile(ROOT / "golden_al_distribution" / "registry.yaml",
                    path / "golden_al_distribution" / "registry.yaml")
    repo.write("configs/runners.yaml", RUNNERS)
    repo.write("perf-changelog.yaml", ENTRY.format(
        key=KEY, text="First.", link="https://github.com/SemiAnalysisAI/InferenceX/pull/1"))
    base = repo.commit("base")
    script = path / SEED
    script.write_text(script.read_text().replace("GOLDEN_AL=2.83", "GOLDEN_AL=3.60"))
    with (path / "perf-changelog.yaml").open("a") as fh:
        fh.write("\n" + ENTRY.format(key=KEY, text="Pin AL 3.60.", link="XXX"))
    for rel, text in extra.items():
        if text == "@curve":
            text = _curve_at_360(path)
        elif text == "@decoy":  # the same key, not spec-decoding: no policy row to judge
            text = CONFIG.replace("spec-decoding: mtp", "spec-decoding: none")
        elif text == "@seed":  # the recipe as the base has it, under the decoy's name
            text = (ROOT / SEED).read_text()
        elif text == "@PO403":
            assert identity
            doc = {"version": 1, "tool": "ixtool", "findings": [
                {"command": "ci gate", "rule": "PO403", "file": SEED, "identity": identity}]}
            text = json.dumps(doc)
        repo.write(rel, text)
    return base, repo.commit("Pin AL 3.60")


def _identity(doc: dict[str, Any]) -> str:
    """The PO403 finding's identity, as a baseline written from the PR's own run holds it."""
    from inferencex_tools.report.adopt import identity
    from inferencex_tools.report.findings import Finding, Severity

    f = next(f for f in doc["findings"] if f["rule"] == "PO403")
    return identity(Finding(rule="PO403", severity=Severity.ERROR, file=f["file"],
                            line=f["line"], column=f.get("column"), message=f["message"],
                            data=f.get("data") or {}))


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "IXTOOL_", "PYTHON"))}
    out = tmp / "github_output"
    out.write_text("")
    env["GITHUB_OUTPUT"] = str(out)
    return env


def _gate(path: Path, mode: str, base: str, head: str, extra: tuple[str, ...] = ()
          ) -> tuple[int, dict[str, str], dict[str, Any]]:
    """``ixtool ci gate`` as the action starts it (isolated interpreter, cwd the PR;
    ``extra``: more options)."""
    tmp = path.parent / f"gate-{mode}"
    tmp.mkdir(exist_ok=True)
    env = _env(tmp)
    args = ["ci", "gate", "--priority", "none", "--format", "json", *extra]
    if mode == "base":
        args += ["--base", base, "--head", head, "--pr", "7", "--label", "sweep-enabled"]
    else:
        event = tmp / "event.json"
        event.write_text(EVENT.read_text().replace("__BASE_SHA__", base)
                         .replace("__HEAD_SHA__", head))
        env.update(GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event),
                   GITHUB_REPOSITORY="SemiAnalysisAI/InferenceX")
    proc = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *args], cwd=path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    from inferencex_tools.io.actions import parse_outputs

    return (proc.returncode, parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text()),
            json.loads(proc.stdout))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory, corpus: Path
          ) -> dict[str, tuple[int, dict[str, str], dict[str, Any]]]:
    """The clean PR's gate in both modes: it fails on PO403 alone."""
    path = tmp_path_factory.mktemp("clean") / "repo"
    base, head = _pr(path, corpus, {})
    out = {mode: _gate(path, mode, base, head) for mode in ("base", "event")}
    for rc, outputs, doc in out.values():
        assert rc == 1 and outputs["gate"] == "fail" and outputs["sweep"] == "false", doc
        assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == ["PO403"]
    return out


@pytest.mark.parametrize("mode", ["base", "event"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_pr_cannot_change_its_own_verdict(
        tmp_path: Path, corpus: Path, clean: dict[str, Any], variant: str, mode: str) -> None:
    path = tmp_path / "repo"
    base, head = _pr(path, corpus, VARIANTS[variant], _identity(clean["base"][2]))
    rc, outputs, doc = _gate(path, mode, base, head)
    want_rc, want, want_doc = clean[mode]
    assert rc == want_rc, (variant, doc["findings"])
    assert {k: outputs[k] for k in DECIDING} == {k: want[k] for k in DECIDING}, variant
    errors = [(f["rule"], f["file"]) for f in doc["findings"] if f["severity"] == "error"]
    assert errors == [(f["rule"], f["file"]) for f in want_doc["findings"]
                      if f["severity"] == "error"]


@pytest.mark.parametrize("variant,named", [
    ("settings flip (.ixtool.toml disable PO)", {("CI601", ".ixtool.toml")}),
    ("[tool.ixtool] in pyproject.toml", {("CI601", "pyproject.toml")}),
    ("baseline swallows the finding", {("CI601", ".ixtool-baseline.json")}),
    ("settings point at a baseline", {("CI601", ".ixtool.toml"),
                                      ("CI601", "known/findings.json")}),
    ("edited golden curve", {("PO109", CURVE)}),
    ("curve, settings and baseline together", {("PO109", CURVE), ("CI601", ".ixtool.toml"),
                                               ("CI601", ".ixtool-baseline.json")}),
])
def test_the_change_is_named(tmp_path: Path, corpus: Path, clean: dict[str, Any],
                             variant: str, named: set[tuple[str, str]]) -> None:
    """Maintainers see what the PR would change (a warning: it takes effect after merge),
    and the PR's settings cannot switch that finding off either."""
    path = tmp_path / "repo"
    base, head = _pr(path, corpus, VARIANTS[variant], _identity(clean["base"][2]))
    _, _, doc = _gate(path, "event", base, head)
    got = {(f["rule"], f["file"]) for f in doc["findings"] if f["rule"] in ("CI601", "PO109")}
    assert got == named, doc["findings"]
    assert all(f["severity"] == "warning" for f in doc["findings"]
               if f["rule"] in ("CI601", "PO109"))
    if ("CI601", ".ixtool.toml") in named:
        msg = next(f["message"] for f in doc["findings"] if f["file"] == ".ixtool.toml")
        assert base[:12] in msg and "takes effect after merge" in msg
        if "disable" in VARIANTS[variant][".ixtool.toml"]:
            assert "disable adds PO" in msg


def test_base_settings_apply_to_the_pr(tmp_path: Path, corpus: Path) -> None:
    """The maintainers' settings (committed on the base) do apply in the PR context."""
    path = tmp_path / "repo"
    base, head = _pr(path, corpus, {})
    repo = _at(path)
    repo.git("checkout", "-q", base)
    repo.git("checkout", "-q", "-b", "main2")
    repo.write(".ixtool.toml", 'disable = ["PO403"]\n')
    base2 = repo.commit("maintainers disable PO403")
    repo.git("checkout", "-q", head)
    repo.git("merge", "-q", "--no-edit", base2)
    head2 = repo.git("rev-parse", "HEAD").strip()
    for mode in ("base", "event"):
        rc, outputs, doc = _gate(path, mode, base2, head2)
        assert rc == 0 and outputs["gate"] == "pass", doc["findings"]
        assert not [f for f in doc["findings"] if f["rule"] == "CI601"]


def test_local_runs_keep_the_working_tree_settings(tmp_path: Path, corpus: Path) -> None:
    """Without a base (no PR context) the working tree's settings apply as before."""
    path = tmp_path / "repo"
    _pr(path, corpus, {".ixtool.toml": 'disable = ["CL"]\n'})
    (path / "perf-changelog.yaml").write_text("- not: an entry\n")
    env = _env(tmp_path)
    proc = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", "changelog",
                           "validate", "--no-git", "--format", "json"], cwd=path, env=env,
                          capture_output=True, text=True, timeout=120)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and not doc["findings"], doc
    assert "ignored by" in doc["info"].get("adoption", "")


def test_an_unreadable_base_applies_no_settings(tmp_path: Path, corpus: Path) -> None:
    """A PR event whose base is not in the clone: the checkout's settings are not applied
    either (CI602), the verdict is the one without settings."""
    path = tmp_path / "repo"
    _, head = _pr(path, corpus, {".ixtool.toml": 'disable = ["PO"]\n'})
    tmp = tmp_path / "ev"
    tmp.mkdir()
    env = _env(tmp)
    event = tmp / "event.json"
    event.write_text(EVENT.read_text().replace("__BASE_SHA__", "f" * 40)
                     .replace("__HEAD_SHA__", head))
    env.update(GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event))
    proc = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", "config",
                           "validate", "--format", "json"], cwd=path, env=env,
                          capture_output=True, text=True, timeout=120)
    doc = json.loads(proc.stdout)
    ci602 = [f for f in doc["findings"] if f["rule"] == "CI602"]
    assert ci602 and ci602[0]["file"] == ".ixtool.toml", doc
    assert "not applied" in ci602[0]["message"]


@pytest.mark.parametrize("command", [
    ["review", "--base", "trunk", "--format", "json"],
    ["policy", "check", "--base", "trunk", "--format", "json"],
    ["config", "validate", "--base", "trunk", "--format", "json"],
    ["changelog", "validate", "--base", "trunk", "--format", "json"],
])
def test_every_pr_context_reads_the_base(tmp_path: Path, corpus: Path, command: list[str]
                                         ) -> None:
    """review, policy check --base, config validate --base, changelog validate --base:
    a PR that disables every rule family in its own settings changes none of them."""
    disable = '[tool.ixtool]\ndisable = ["PO", "CL", "SW", "CI", "LA"]\n'
    outs = []
    for extra in ({}, {"pyproject.toml": disable, CURVE: "@curve"}):
        path = tmp_path / f"repo{len(outs)}"
        base, _ = _pr(path, corpus, extra)
        _at(path).git("branch", "trunk", base)
        proc = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *command],
                              cwd=path, env=_env(tmp_path), capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode in (0, 1), proc.stderr
        doc = json.loads(proc.stdout)
        found = doc.get("findings") or doc.get("gate", {}).get("findings", [])
        outs.append((proc.returncode, sorted(f["rule"] for f in found
                                             if f["severity"] == "error")))
    assert outs[0] == outs[1], command
    if command[0] in ("review", "policy"):
        assert outs[0][0] == 1 and "PO403" in outs[0][1]


def _at(path: Path) -> TempRepo:
    repo = TempRepo.__new__(TempRepo)
    repo.path = path
    return repo
