"""Adoption controls (report/adopt.py, applied in cli.common.emit): repository settings
(per-rule severity, disable, per-path ignores), baselines, and ``config validate --base``
reporting only the findings a branch introduces — in real temporary git repositories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.report.adopt import identity
from inferencex_tools.report.findings import Finding, Severity
from tests.conftest import TempRepo, extract_real_tree

KEY = '''{key}:
  image: vllm/vllm-openai:v0.27.1
  model: org/m
  model-prefix: {prefix}
  runner: {runner}
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - {{ tp: 8, conc-list: [1, 2] }}
'''

RUNNERS = "labels:\n  h200: [h200-cw_00]\n  b200: [b200-zz_0]\n"


def _repo(temp_repo: TempRepo) -> TempRepo:
    """Two master configs: a script-less key (SW403) in each, an unknown runner label
    (SW401 warning) in one, and a node family without launcher (SW406)."""
    temp_repo.write("configs/a-master.yaml",
                    KEY.format(key="m1-fp8-h200-vllm", prefix="m1", runner="h200")
                    + KEY.format(key="m2-fp8-h200-vllm", prefix="m2", runner="h200-nolabel"))
    temp_repo.write("configs/b-master.yaml",
                    KEY.format(key="m3-fp8-h200-vllm", prefix="m3", runner="h200"))
    temp_repo.write("configs/runners.yaml", RUNNERS)
    temp_repo.write("runners/launch_h200-cw.sh", "#!/bin/bash\n")
    temp_repo.write("benchmarks/single_node/fixed_seq_len/m2_fp8_h200_vllm.sh", "#!/bin/bash\n")
    temp_repo.commit("configs")
    return temp_repo


def _run(cwd: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([sys.executable, "-m", "inferencex_tools", "config", "validate",
                           "--format", "json", *args], cwd=cwd, capture_output=True,
                          text=True)
    out = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc.returncode, out, proc.stderr


def _rules(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((f["rule"], f["severity"], f["file"]) for f in out.get("findings", []))


def test_without_settings_everything_is_reported(temp_repo: TempRepo) -> None:
    repo = _repo(temp_repo)
    rc, out, _ = _run(repo.path)
    assert rc == 1
    assert _rules(out) == [
        ("SW401", "warning", "configs/a-master.yaml"),
        ("SW403", "error", "configs/a-master.yaml"),
        ("SW403", "error", "configs/b-master.yaml"),
        ("SW406", "warning", "configs/runners.yaml")]


@pytest.mark.parametrize(("where", "text", "want", "rc"), [
    # per-rule disable (pyproject.toml), by id and by prefix
    ("pyproject.toml", '[tool.ixtool]\ndisable = ["SW406"]\n',
     [("SW401", "warning", "configs/a-master.yaml"), ("SW403", "error", "configs/a-master.yaml"),
      ("SW403", "error", "configs/b-master.yaml")], 1),
    ("pyproject.toml", '[project]\nname = "x"\n[tool.ixtool]\ndisable = ["SW4"]\n', [], 0),
    # severity change and "off" (.ixtool.toml, top-level keys)
    (".ixtool.toml", '[severity]\nSW403 = "warning"\nSW406 = "off"\n',
     [("SW401", "warning", "configs/a-master.yaml"),
      ("SW403", "warning", "configs/a-master.yaml"),
      ("SW403", "warning", "configs/b-master.yaml")], 0),
    (".ixtool.toml", '[severity]\nSW401 = "error"\nSW403 = "note"\nSW406 = "note"\n',
     [("SW401", "error", "configs/a-master.yaml"), ("SW403", "note", "configs/a-master.yaml"),
      ("SW403", "note", "configs/b-master.yaml"), ("SW406", "note", "configs/runners.yaml")], 1),
    # per-path ignores: one file, a folder, every rule
    (".ixtool.toml", '[per-path-ignores]\n"configs/b-*.yaml" = ["SW403"]\n',
     [("SW401", "warning", "configs/a-master.yaml"), ("SW403", "error", "configs/a-master.yaml"),
      ("SW406", "warning", "configs/runners.yaml")], 1),
    (".ixtool.toml", '[per-path-ignores]\n"configs/" = ["*"]\n', [], 0),
])
def test_settings(temp_repo: TempRepo, where: str, text: str,
                  want: list[tuple[str, str, str]], rc: int) -> None:
    repo = _repo(temp_repo)
    repo.write(where, text)
    got_rc, out, err = _run(repo.path)
    assert (got_rc, _rules(out)) == (rc, want), err
    # the same from a subdirectory: settings and paths are the repository's
    got_rc, out, _ = _run(repo.path / "configs")
    assert (got_rc, _rules(out)) == (rc, [(r, s, f.removeprefix("configs/"))
                                          for r, s, f in want])


@pytest.mark.parametrize("text", [
    '[tool.ixtool]\ndisable = ["nope"]\n',
    '[tool.ixtool]\nseverity = { SW403 = "fatal" }\n',
    '[tool.ixtool]\nunknown = 1\n',
    '[tool.ixtool\n',
])
def test_bad_settings_are_a_clear_input_error(temp_repo: TempRepo, text: str) -> None:
    repo = _repo(temp_repo)
    repo.write("pyproject.toml", text)
    rc, _, err = _run(repo.path)
    assert rc == 2
    assert "pyproject.toml" in err and "Traceback" not in err


def test_baseline_round_trip(temp_repo: TempRepo) -> None:
    repo = _repo(temp_repo)
    rc, out, err = _run(repo.path, "--write-baseline")
    assert (rc, out["findings"]) == (0, []), err
    doc = json.loads((repo.path / ".ixtool-baseline.json").read_text())
    assert len(doc["findings"]) == 4 and all(e["command"] == "config validate"
                                             for e in doc["findings"])
    # clean run: everything is known
    rc, out, _ = _run(repo.path)
    assert (rc, out["findings"]) == (0, [])
    # lines move (a key inserted above) and a new problem appears: only that is reported
    text = (repo.path / "configs/b-master.yaml").read_text()
    repo.write("configs/b-master.yaml",
               KEY.format(key="m4-fp8-h200-vllm", prefix="m4", runner="h200") + text)
    rc, out, _ = _run(repo.path)
    assert rc == 1
    assert [(f["rule"], f["message"].split(":")[0]) for f in out["findings"]] == [
        ("SW403", "m4-fp8-h200-vllm")]
    # an explicit baseline file elsewhere, written and read with --baseline
    other = repo.path / "known.json"
    assert _run(repo.path, "--write-baseline", "--baseline", str(other))[0] == 0
    assert _run(repo.path, "--baseline", str(other))[1]["findings"] == []
    other.write_text("{}")
    rc, _, err = _run(repo.path, "--baseline", str(other))
    assert rc == 2 and "not a baseline file" in err


def test_settings_baseline_path(temp_repo: TempRepo) -> None:
    repo = _repo(temp_repo)
    repo.write(".ixtool.toml", 'baseline = "ci/known-findings.json"\n')
    assert _run(repo.path, "--write-baseline")[0] == 0
    assert (repo.path / "ci/known-findings.json").is_file()
    assert _run(repo.path)[1]["findings"] == []


def test_base_reports_only_the_branch_findings(temp_repo: TempRepo) -> None:
    repo = _repo(temp_repo)
    rc, out, _ = _run(repo.path, "--base", "HEAD")
    assert (rc, out["findings"]) == (0, [])
    repo.git("checkout", "-q", "-b", "feature")
    text = (repo.path / "configs/a-master.yaml").read_text()
    repo.write("configs/a-master.yaml",
               KEY.format(key="m5-fp8-h200-vllm", prefix="m5", runner="h200") + text)
    repo.commit("new key without a benchmark script")
    rc, out, _ = _run(repo.path, "--base", "main")
    assert rc == 1
    assert [(f["rule"], f["line"], f["message"].split(":")[0]) for f in out["findings"]] == [
        ("SW403", 14, "m5-fp8-h200-vllm")]


def test_identity_ignores_line_and_column_numbers() -> None:
    a = Finding("SW403", Severity.ERROR, "f", 3, 1, "k: x at line 12, see launch.sh:40")
    b = Finding("SW403", Severity.ERROR, "f", 9, 1, "k: x at line 99, see launch.sh:41")
    assert identity(a) == identity(b)
    c = Finding("SW403", Severity.ERROR, "f", 9, 1, "k2: x at line 99")
    assert identity(a) != identity(c)


def test_changelog_validate_uses_the_settings_too(temp_repo: TempRepo) -> None:
    temp_repo.write("perf-changelog.yaml", "- config-keys: [a]\n  description: [x]\n"
                    "  pr-link: https://github.com/o/r/pull/1   \n")
    temp_repo.commit()
    run = [sys.executable, "-m", "inferencex_tools", "changelog", "validate", "--no-git",
           "--history", "--format", "json"]
    first = json.loads(subprocess.run(run, cwd=temp_repo.path, capture_output=True,
                                      text=True).stdout)["findings"]
    assert first
    rules = sorted({f["rule"] for f in first})
    temp_repo.write(".ixtool.toml", f"disable = {json.dumps(rules)}\n")
    again = json.loads(subprocess.run(run, cwd=temp_repo.path, capture_output=True,
                                      text=True).stdout)["findings"]
    assert again == []


@pytest.mark.slow
def test_real_tree_base_and_branch(tmp_path: Path) -> None:
    root = extract_real_tree(tmp_path)
    rc, out, err = _run(root, "--base", "HEAD")
    assert (rc, out["findings"]) == (0, []), err
    subprocess.run(["git", "checkout", "-q", "-b", "feature"], cwd=root, check=True)
    master = root / "configs/nvidia-master.yaml"
    text = master.read_text()
    master.write_text(text + "\n" + KEY.format(key="zz9-fp8-h200-vllm", prefix="zz9",
                                               runner="h200"))
    rc, out, err = _run(root, "--base", "main")
    assert rc == 1, err
    assert [(f["rule"], f["message"].split(":")[0]) for f in out["findings"]] == [
        ("SW403", "zz9-fp8-h200-vllm")]


@pytest.mark.slow
def test_real_tree_base_head_reports_none(real_tree: Path) -> None:
    rc, out, err = _run(real_tree, "--base", "HEAD")
    assert (rc, out["findings"]) == (0, []), err
