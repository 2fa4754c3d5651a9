"""``--base`` traces a row only when the change can reach its launch: a copy's
destination is written, not read, and a program that fails on a directory (``cp``
without ``-r``, ``cat``, ``source`` …) reads no file under one.

Found on real PR heads (issue 33/35): every PR that edited a master config traced the
same ten NVIDIA multi-node keys (17-20 CPU-s a gate, was 0.6-1.2 s).  Their launchers
run ``curl … | sh`` (any function may run: the selection falls back to the files the
launcher's text names) and hold ``cp "$GITHUB_WORKSPACE/…/srt-slurm-recipes/configs/
$SRTCTL_SETUP_SCRIPT" "configs/$SRTCTL_SETUP_SCRIPT"`` with the script name empty on
most paths: the destination ``configs`` and the source directory (a name that matches
the top-level ``configs/`` as a workspace-mounted path would) put every master config
in their closure.  Reading a directory's files (``cp -r``, ``ls``) still selects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.policy.service import CheckRequest, run_check
from tests.policy.conftest import clone, commit_all
from tests.policy.test_real_tree import SEED_KEY, SEED_SCRIPT

KEY, LAUNCHER = "dsv4-fp4-b200-dynamo-vllm-mtp", "runners/launch_b200-nscale-slurm.sh"
CFG = "configs/nvidia-master.yaml"
# the real launchers' pattern: a setup script copied only when one is set, and a
# pipe-fed shell (text no one can read: any function may run)
SETUP = ('IX_SETUP=""\ncurl -LsSf https://example.invalid/install.sh | sh\n'
         'if [[ -n "$IX_SETUP" ]]; then\n'
         '    cp "$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/configs/$IX_SETUP" '
         '"configs/$IX_SETUP"\nfi\n')


def _two_steps(real_tree: Path, tmp: Path, launcher_text: str) -> Path:
    """Main where the launcher of KEY holds ``launcher_text``; then a PR that changes
    SEED_KEY's recipe and config block (another launcher, another runner)."""
    repo = clone(real_tree, tmp / "repo")
    text = (repo / LAUNCHER).read_text(encoding="utf-8")
    first, rest = text.split("\n", 1)
    (repo / LAUNCHER).write_text(f"{first}\n{launcher_text}{rest}", encoding="utf-8")
    commit_all(repo, "reviewed: the launcher copies a setup script")
    cfg = (repo / CFG).read_text(encoding="utf-8")
    start = cfg.index(f"\n{SEED_KEY}:\n") + 1
    block = cfg[start:cfg.index("\n", cfg.index("  image: ", start))]
    (repo / CFG).write_text(cfg.replace(block, block + "-rebuilt", 1), encoding="utf-8")
    script = (repo / SEED_SCRIPT).read_text(encoding="utf-8")
    (repo / SEED_SCRIPT).write_text(script.replace("\n", "\nexport IX_SEEN=1\n", 1),
                                    encoding="utf-8")
    commit_all(repo, "the PR: one recipe and its config block")
    return repo


def test_a_config_change_does_not_trace_a_launcher_that_copies_a_named_file(
        real_tree: Path, tmp_path: Path) -> None:
    repo = _two_steps(real_tree, tmp_path, SETUP)
    res = run_check(CheckRequest(root=repo, base="HEAD~1"))
    traced = res.info["base"]["traced-keys"]
    assert set(traced) == {SEED_KEY}, traced


@pytest.mark.parametrize("reads", [
    'cp -r "$GITHUB_WORKSPACE/configs" /tmp/ix-configs\n',  # a recursive copy
    'cat "$GITHUB_WORKSPACE/configs/nvidia-master.yaml" > /dev/null\n',  # the file
])
def test_a_launcher_that_reads_the_changed_config_is_traced(
        real_tree: Path, tmp_path: Path, reads: str) -> None:
    repo = _two_steps(real_tree, tmp_path, SETUP + reads)
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[KEY, SEED_KEY]))
    traced = res.info["base"]["traced-keys"]
    assert set(traced) == {KEY, SEED_KEY}, traced
    assert any(CFG in r and LAUNCHER in r for r in traced[KEY]), traced[KEY]


def test_a_linked_worktree_s_git_file_is_no_change(tmp_path: Path) -> None:
    """In a linked worktree (``git worktree add``, the PR-heads bench, a developer's
    second checkout) ``.git`` is a file naming the git directory: git's, never the
    repository's (git refuses to track a ``.git``), so never a changed file — it had
    selected the rows of every launcher whose text names ``.git``."""
    from inferencex_tools.policy.base import changed_files
    from tests.conftest import TempRepo

    repo = TempRepo(tmp_path / "main")
    repo.write("a.txt", "a\n")
    base = repo.commit("base")
    repo.git("worktree", "add", "-q", "--detach", str(tmp_path / "linked"), base)
    (tmp_path / "linked" / "b.txt").write_text("b\n")
    assert (tmp_path / "linked" / ".git").is_file()
    assert changed_files(tmp_path / "linked", base).files == {"b.txt"}


def test_explain_says_why_each_key_is_traced(real_tree: Path, tmp_path: Path) -> None:
    """``policy check --base … --explain``: the changed files, and per traced key the
    changed file and the launch file that reaches it (text format)."""
    from typer.testing import CliRunner

    from inferencex_tools.cli.main import app

    repo = _two_steps(real_tree, tmp_path, SETUP + 'cat "$GITHUB_WORKSPACE/configs/'
                      'nvidia-master.yaml" > /dev/null\n')
    res = CliRunner().invoke(app, ["policy", "check", "--root", str(repo), "--base", "HEAD~1",
                                   "--config-keys", KEY, "--explain"])
    assert res.exit_code in (0, 1), res.output
    out = res.output
    assert f"  changed {CFG}\n" in out and f"  changed {SEED_SCRIPT}\n" in out, out
    assert f"  traced {KEY}:\n" in out, out
    assert f"\n    {CFG} changed ({LAUNCHER} depends on it)\n" in out, out
