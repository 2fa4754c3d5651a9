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
from tests.policy.test_real_tree import SEED_KEY, SEED_SCRIPT, TMPL, library_runs_tool

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


# ---------------------------------------------------------------- what a job observes

ENTRY = "- { tp: 8, spec-decoding: mtp, kv-offloading: none, conc-list: [1, 2, 4, 6, 8, 10] }"
ROUTED = ENTRY[:-2] + ', router: { name: vllm-router, version: "0.1.14" } }'


def _main_then_pr(real_tree: Path, tmp: Path, main: dict[str, tuple[str, str]],
                  pr: dict[str, tuple[str, str]]) -> Path:
    repo = clone(real_tree, tmp / "repo")
    for step, edits in (("main", main), ("the PR", pr)):
        if not edits:
            continue
        for rel, (old, new) in edits.items():
            p = repo / rel
            text = p.read_text(encoding="utf-8")
            assert old in text, (rel, old)
            p.write_text(text.replace(old, new, 1), encoding="utf-8")
        commit_all(repo, step)
    return repo


@pytest.mark.parametrize("reads", [False, True])
def test_a_config_field_no_script_observes_traces_nothing(
        real_tree: Path, tmp_path: Path, reads: bool) -> None:
    """Real PR #2096 added ``router:``/``kv-p2p-transfer:`` to 40 config blocks: the
    workflows pass them on as ROUTER_METADATA/KV_P2P_TRANSFER, which no launcher or
    script reads, and every row of those blocks was traced (104 keys, 112 CPU-s).  A
    job of a changed block whose base job is the same launch (same launcher, script,
    judged fields, and an environment that differs only in what neither observes) is
    not traced; once the seed script reads the variable, its rows are."""
    main = {SEED_SCRIPT: ("\n", '\necho "router: ${ROUTER_METADATA:-none}"\n')} if reads \
        else {}
    repo = _main_then_pr(real_tree, tmp_path, main, {CFG: (ENTRY, ROUTED)})
    res = run_check(CheckRequest(root=repo, base="HEAD~1"))
    traced = res.info["base"]["traced-keys"]
    if reads:
        assert set(traced) == {SEED_KEY}, traced
        assert traced[SEED_KEY] == [f"config block of {SEED_KEY} changed"], traced
        assert res.info["traces"] > 0
    else:
        assert traced == {} and res.info["traces"] == 0, traced


def _workflow_variable(repo: Path, line: str) -> None:
    """Commit "the PR": the single-node template's environment gains ``line``."""
    tmpl = repo / TMPL
    text = tmpl.read_text(encoding="utf-8")
    old = "  RANDOM_RANGE_RATIO: 0.8\n"
    assert old in text
    tmpl.write_text(text.replace(old, f"{old}  {line}\n", 1), encoding="utf-8")
    commit_all(repo, "the PR: a workflow variable")


@pytest.mark.parametrize("where,traced", [("run_benchmark_serving", False),
                                          ("check_env_vars", True)])
def test_a_workflow_variable_only_a_python_file_no_job_runs_reads(
        real_tree: Path, tmp_path: Path, where: str, traced: bool) -> None:
    """A workflow gains a variable that only a Python file reads, and the library names
    that file in a function: the seed rows are traced (their environment changed in a
    name they observe) when the function is one the seed script calls; not when it is a
    helper no seed row runs (``run_benchmark_serving``: the seed's agentic helpers run
    ``$REPLAY_CMD``, built at run time but starting with the aiperf path, which calls
    no function)."""
    repo = clone(real_tree, tmp_path / "repo")
    library_runs_tool(repo, where, "ix_tag.py",
                      'import os\nprint(os.environ.get("IX_TAG_ONLY", ""))\n')
    commit_all(repo, "main: the library names a helper script")
    _workflow_variable(repo, "IX_TAG_ONLY: x")
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[SEED_KEY]))
    keys = res.info["base"]["traced-keys"]
    assert (set(keys) == {SEED_KEY}) is traced, keys
    if traced:
        assert any("IX_TAG_ONLY" in r for r in keys[SEED_KEY]), keys


def test_a_workflow_variable_a_template_the_script_reads_names(
        real_tree: Path, tmp_path: Path) -> None:
    """The seed script expands a template with ``envsubst``: the variable is named in a
    data file, not in shell text.  A workflow that gives the variable a value changes
    what the script renders: its rows are traced."""
    repo = clone(real_tree, tmp_path / "repo")
    tmpl_file = repo / Path(SEED_SCRIPT).parent / "ix_tmpl.yaml"
    tmpl_file.write_text("synthetic-acceptance: ${IX_TMPL_VAR}\n", encoding="utf-8")
    script = repo / SEED_SCRIPT
    text = script.read_text(encoding="utf-8")
    script.write_text(text.replace("\n", '\nenvsubst < "$(dirname "$0")/ix_tmpl.yaml" '
                                   "> /dev/null || true\n", 1), encoding="utf-8")
    commit_all(repo, "main: the script renders a template")
    _workflow_variable(repo, "IX_TMPL_VAR: '3.6'")
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[SEED_KEY]))
    keys = res.info["base"]["traced-keys"]
    assert set(keys) == {SEED_KEY}, keys
    assert any("IX_TMPL_VAR" in r for r in keys[SEED_KEY]), keys
