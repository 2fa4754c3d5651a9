"""The .pre-commit-hooks.yaml hooks, run by pre-commit itself in temporary repositories.

pre-commit builds a ``language: python`` hook environment with pip, which needs a
package index; to stay offline the test serves a copy of the manifest with
``language: system`` and puts the installed ``ixtool`` on PATH.  Everything else
(ids, entries, file patterns, pass_filenames) is the real manifest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import GIT_ENV, git

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
PROJECT_FILES = ("perf-changelog.yaml", "configs", "runners", "benchmarks/single_node",
                 "golden_al_distribution",
                 "benchmarks/benchmark_lib.sh")
HOOK_IDS = ["ixtool-changelog-validate", "ixtool-config-validate", "ixtool-policy-check"]


def pre_commit() -> str:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which(
        "pre-commit")
    if exe is None:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    return exe


def test_manifest_declares_the_three_hooks() -> None:
    hooks = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert [h["id"] for h in hooks] == HOOK_IDS
    assert all(h["language"] == "python" and h["pass_filenames"] is False for h in hooks)
    assert [h["entry"] for h in hooks] == [
        "ixtool changelog validate", "ixtool config validate",
        "ixtool policy check --base HEAD"]  # what the commit changes, not every recipe


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    hook_repo = tmp_path / "hooks"
    hook_repo.mkdir()
    git(hook_repo, "init", "-q", "-b", "main")
    text = MANIFEST.read_text(encoding="utf-8").replace("language: python", "language: system")
    (hook_repo / ".pre-commit-hooks.yaml").write_text(text, encoding="utf-8")
    git(hook_repo, "add", "-A")
    git(hook_repo, "commit", "-q", "-m", "hooks")
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    for rel in PROJECT_FILES:
        src, dst = ROOT / rel, project / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "project")
    env = {**GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "NO_COLOR": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return hook_repo, project, env


def try_repo(hook_repo: Path, project: Path, env: dict[str, str], *hook: str
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([pre_commit(), "try-repo", str(hook_repo), *hook, "--all-files",
                           "--color", "never"], cwd=project, env=env, capture_output=True,
                          text=True, check=False, timeout=300)


def test_hooks_pass_on_good_files_and_fail_on_a_bad_changelog(
        repos: tuple[Path, Path, dict[str, str]]) -> None:
    hook_repo, project, env = repos
    good = try_repo(hook_repo, project, env)
    assert good.returncode == 0, good.stdout + good.stderr
    for name in ("ixtool changelog validate", "ixtool config validate", "ixtool policy check"):
        assert any(name in ln and "Passed" in ln for ln in good.stdout.splitlines()), good.stdout

    cl = project / "perf-changelog.yaml"
    cl.write_bytes(cl.read_bytes().rstrip(b"\n") + b"\n\n- config-keys:\n\t- nope\n")
    git(project, "add", "-A")
    bad = try_repo(hook_repo, project, env, "ixtool-changelog-validate")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout and "CL103" in bad.stdout  # TAB character
