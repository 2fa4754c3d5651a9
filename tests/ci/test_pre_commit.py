"""The .pre-commit-hooks.yaml hooks, run by pre-commit itself in temporary repositories.

pre-commit builds a ``language: python`` hook environment with pip, which needs a
package index; to stay offline the test serves a copy of the manifest with
``language: system`` and puts the installed ``ixtool`` on PATH.  Everything else
(ids, entries, file patterns, pass_filenames) is the real manifest.
"""

from __future__ import annotations

import os
import re
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
    # the file names tell `ixtool hook` a commit from --all-files (one run: serial)
    assert all(h["language"] == "python" and h["pass_filenames"] is True
               and h["require_serial"] is True for h in hooks)
    assert [h["entry"] for h in hooks] == [
        "ixtool hook changelog", "ixtool hook config", "ixtool hook policy"]


@pytest.mark.parametrize(("files", "staged", "facts", "kind", "base"), [
    (["configs/a.yaml"], {"configs/a.yaml", "x"}, {}, "commit", "HEAD"),
    (["configs/a.yaml", "configs/b.yaml"], {"configs/a.yaml"}, {}, "all", None),
    ([], set(), {}, "all", None),
    (["configs/a.yaml"], set(), {"head_unborn": True}, "all", None),
    (["configs/a.yaml"], {"configs/a.yaml"}, {"everything": True}, "all", None),
    (["a"], {"a"}, {"from_ref": "f" * 40, "to_ref": "e" * 40, "to_is_head": True},
     "range", "f" * 40),
    (["a"], {"a"}, {"from_ref": "f" * 40, "to_ref": "e" * 40}, "all", None),
])
def test_hook_scope(files: list[str], staged: set[str], facts: dict[str, object],
                    kind: str, base: str | None) -> None:
    from inferencex_tools.ci.precommit import hook_scope

    scope = hook_scope(files, staged=staged, head_unborn=bool(facts.pop("head_unborn", False)),
                       **facts)  # type: ignore[arg-type]
    assert (scope.kind, scope.base) == (kind, base), scope


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


def try_repo(hook_repo: Path, project: Path, env: dict[str, str], *hook: str,
             all_files: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([pre_commit(), "try-repo", str(hook_repo), *hook,
                           *(["--all-files"] if all_files else []), "--verbose",
                           "--color", "never"], cwd=project, env=env, capture_output=True,
                          text=True, check=False, timeout=300)


def status(proc: subprocess.CompletedProcess[str], name: str) -> str:
    """Passed / Failed of one hook in pre-commit's report."""
    m = re.search(rf"^ixtool {name}\.+(Passed|Failed)$", proc.stdout, re.M)
    assert m, proc.stdout + proc.stderr
    return m.group(1)


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


SIBLING = "benchmarks/single_node/agentic/minimaxm3_fp8_h200.sh"
MTP = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"


def test_a_commit_is_judged_on_what_it_changes_all_files_on_everything(
        repos: tuple[Path, Path, dict[str, str]]) -> None:
    """A recipe whose forced AL is off its curve is already committed.  A commit that
    changes another file passes the policy hook (the finding is not the commit's);
    `--all-files` runs the full check and fails on it (it used to pass: --base HEAD)."""
    hook_repo, project, env = repos
    mtp = project / MTP
    text = mtp.read_text()
    assert text.count("GOLDEN_AL=2.83") == 1
    mtp.write_text(text.replace("GOLDEN_AL=2.83", "GOLDEN_AL=2.50"))
    git(project, "commit", "-qam", "a recipe off its curve")
    with (project / SIBLING).open("a") as fh:
        fh.write("export IX_TOUCHED=1\n")
    git(project, "add", "-A")

    commit = try_repo(hook_repo, project, env, "ixtool-policy-check", all_files=False)
    assert status(commit, "policy check") == "Passed", commit.stdout
    assert "what the commit changes against HEAD" in commit.stdout

    every = try_repo(hook_repo, project, env, "ixtool-policy-check")
    assert status(every, "policy check") == "Failed", every.stdout
    assert "every file" in every.stdout and re.search(r"error \[PO\d+\]", every.stdout)
    assert "ixtool policy check --write-baseline" in every.stdout  # how to adopt


def test_the_config_hook_needs_no_baseline_for_a_commit(
        repos: tuple[Path, Path, dict[str, str]]) -> None:
    """Findings already in the configs never fail a commit that does not add them;
    `--all-files` reports them with the command that records them, after which it
    passes."""
    hook_repo, project, env = repos
    master = project / "configs" / "nvidia-master.yaml"
    text = master.read_text()
    master.write_text(text.replace("runner: cluster:h200-dgxc", "runner: cluster:h200-nope",
                                   1))
    git(project, "commit", "-qam", "a runner label runners.yaml does not list")
    master.write_text(master.read_text() + "\n# a note\n")
    git(project, "add", "-A")

    commit = try_repo(hook_repo, project, env, "ixtool-config-validate", all_files=False)
    assert status(commit, "config validate") == "Passed", commit.stdout
    every = try_repo(hook_repo, project, env, "ixtool-config-validate")
    assert status(every, "config validate") == "Failed", every.stdout
    assert "SW401" in every.stdout and "ixtool config validate --write-baseline" in every.stdout

    p = subprocess.run(["ixtool", "config", "validate", "--write-baseline"], cwd=project,
                       env=env, capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    git(project, "add", "-A")
    git(project, "commit", "-qm", "ixtool baseline")
    again = try_repo(hook_repo, project, env, "ixtool-config-validate")
    assert status(again, "config validate") == "Passed", again.stdout
