"""Where a repository keeps its master configs and runners.yaml (io.layout), and the
root every command finds from any subdirectory (issue 25)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.io.layout import Layout, LayoutSettings, choose, layout_at, layout_of

FILES = {
    "configs/a-master.yaml", "configs/runners.yaml",
    ".github/configs/b-master.yaml", ".github/configs/runners.yaml",
    "etc/ci/c-master.yaml", "etc/ci/d-master.yaml", "etc/ci/machines.yaml",
}


def _choose(files: set[str], workflows: dict[str, str],
            settings: LayoutSettings | None = None) -> Layout:
    def listing(folder: str) -> list[str]:
        return sorted(f for f in files if f.rpartition("/")[0] == folder)

    return choose(listing, files.__contains__, workflows, settings)


@pytest.mark.parametrize("name,files,workflows,settings,want", [
    ("configs/ by default", FILES, {}, None,
     (("configs/a-master.yaml",), "configs/runners.yaml", "default")),
    ("only .github/configs/", {f for f in FILES if not f.startswith("configs/")}, {}, None,
     ((".github/configs/b-master.yaml",), ".github/configs/runners.yaml", "default")),
    ("where the workflows point", FILES,
     {".github/workflows/s.yml": "run: gen.py full-sweep --config-files "
      ".github/configs/b-master.yaml --runner-config .github/configs/runners.yaml\n"}, None,
     ((".github/configs/b-master.yaml",), ".github/configs/runners.yaml", "workflows")),
    ("a workflow input default", FILES,
     {".github/workflows/p.yml": "inputs:\n  f:\n    default: 'etc/ci/c-master.yaml'\n"},
     None, (("etc/ci/c-master.yaml", "etc/ci/d-master.yaml"), "etc/ci/runners.yaml",
            "workflows")),
    ("the workflows' runner config", FILES,
     {".github/workflows/s.yml": "x --config-files etc/ci/c-master.yaml "
      "--runner-config=etc/ci/machines.yaml"}, None,
     (("etc/ci/c-master.yaml", "etc/ci/d-master.yaml"), "etc/ci/machines.yaml",
      "workflows")),
    ("a pointer to nothing, then the default", FILES,
     {".github/workflows/s.yml": "--config-files gone/x-master.yaml ../../e-master.yaml"},
     None, (("configs/a-master.yaml",), "configs/runners.yaml", "default")),
    ("an expression is not a path", FILES,
     {".github/workflows/s.yml": "--config-files ${{ inputs.dir }}/b-master.yaml"}, None,
     (("configs/a-master.yaml",), "configs/runners.yaml", "default")),
    ("the settings win", FILES,
     {".github/workflows/s.yml": "--config-files .github/configs/b-master.yaml"},
     LayoutSettings(("etc/ci/*-master.yaml",), "etc/ci/machines.yaml"),
     (("etc/ci/c-master.yaml", "etc/ci/d-master.yaml"), "etc/ci/machines.yaml",
      "settings")),
    ("settings: one file", FILES, {}, LayoutSettings(("etc/ci/d-master.yaml",)),
     (("etc/ci/d-master.yaml",), "etc/ci/runners.yaml", "settings")),
])
def test_choose(name: str, files: set[str], workflows: dict[str, str],
                settings: LayoutSettings | None, want: tuple[object, ...]) -> None:
    got = _choose(files, workflows, settings)
    assert (got.masters, got.runners, got.source) == want, name


def test_the_real_history_before_and_after_the_move(full_history: Path) -> None:
    """InferenceX kept its configs under .github/configs/ until #1992 (2026-07-02): each
    revision's own workflows say where."""
    from inferencex_tools.io.gitcat import GitReader
    from tests.conftest import git

    move = git(full_history, "log", "--first-parent", "--format=%H", "--grep=(#1992)",
               "main-upto-0715").split()[0]
    reader = GitReader(full_history)
    try:
        before, after = layout_at(reader, f"{move}~1"), layout_at(reader, move)
    finally:
        reader.close()
    assert before.masters == (".github/configs/amd-master.yaml",
                              ".github/configs/nvidia-master.yaml")
    assert before.runners == ".github/configs/runners.yaml" and before.source == "workflows"
    assert after.masters == ("configs/amd-master.yaml", "configs/nvidia-master.yaml")
    assert after.runners == "configs/runners.yaml"


def _old_layout(real_tree: Path, dest: Path) -> Path:
    """The real tree as the repository was before 2026-07-02: configs under
    .github/configs/, its workflows pointing there."""
    from tests.conftest import clone_real_tree, git

    root = clone_real_tree(real_tree, dest)
    git(root, "mv", "configs", ".github/configs")
    for wf in sorted((root / ".github" / "workflows").iterdir()):
        text = wf.read_text(encoding="utf-8")
        new = text.replace(" configs/", " .github/configs/").replace(
            "'configs/", "'.github/configs/")
        if new != text:
            wf.write_text(new, encoding="utf-8")
    git(root, "commit", "-q", "-am", "configs under .github/configs")
    return root


def _ixtool(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inferencex_tools", *args], cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=600)


KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"


@pytest.mark.slow
def test_every_command_from_a_subdirectory_of_an_old_layout(real_tree: Path,
                                                            tmp_path: Path) -> None:
    """On the tree with the pre-2026-07-02 layout, from benchmarks/: every command finds
    the root and the master configs (policy check used to say "no master configs under
    configs", and its hint led to a false PO201)."""
    root = _old_layout(real_tree, tmp_path / "old")
    assert layout_of(root).config_dir == ".github/configs"
    sub = root / "benchmarks" / "single_node"
    r = _ixtool(sub, "policy", "check", "--config-keys", KEY, "--format", "json")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert {row["config-key"] for row in doc["info"]["rows"]} == {KEY}
    assert {row["verdict"] for row in doc["info"]["rows"]} == {"ok"}
    assert doc["info"]["job-environment"] == "workflows"
    r = _ixtool(sub, "sweep", "test-config", "--config-keys", KEY)
    assert r.returncode == 0 and json.loads(r.stdout), r.stderr
    r = _ixtool(sub, "config", "validate", "--format", "json")
    assert r.returncode in (0, 1) and ".github/configs/" in r.stdout, r.stderr
    r = _ixtool(sub, "ci", "gate", "--base", "HEAD~1", "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    stages = json.loads(r.stdout)["info"]["stages"]
    assert "error" not in stages.values(), stages
    r = _ixtool(sub, "launch", "render", "--config-key", KEY, "--conc", "4",
                "--format", "json")
    assert r.returncode in (0, 1) and "no master configs" not in r.stderr, r.stderr


def test_no_master_configs_names_the_options(tmp_path: Path) -> None:
    """A repository without master configs: exit 2, the hint names the options that fix
    it (the --configs option and the setting), from a subdirectory too."""
    from tests.conftest import git

    git(tmp_path, "init", "-q")
    (tmp_path / "sub").mkdir()
    r = _ixtool(tmp_path / "sub", "policy", "check")
    assert r.returncode == 2
    assert "no master configs in" in r.stderr and str(tmp_path) in r.stderr
    assert "--configs FILE" in r.stderr and "master-configs" in r.stderr


def test_settings_name_the_layout(tmp_path: Path) -> None:
    """``[tool.ixtool] master-configs`` / ``runners-config`` name the files for every
    command (here the sweep and the policy check's layout)."""
    from tests.conftest import git

    git(tmp_path, "init", "-q")
    (tmp_path / "ci").mkdir()
    case = Path(__file__).parents[1] / "cases" / "sweep" / "config" / "ok-agentic-dram.yaml"
    (tmp_path / "ci" / "x-master.yaml").write_bytes(case.read_bytes())
    (tmp_path / "ci" / "machines.yaml").write_text(
        "labels:\n  h200-dgxc: [h200-dgxc_0]\nhardware:\n  cluster:h200-dgxc: "
        "{available-cpu-dram-mib: 2000000, gpus-per-node: 8}\n", encoding="utf-8")
    (tmp_path / ".ixtool.toml").write_text(
        'master-configs = ["ci/*-master.yaml"]\nrunners-config = "ci/machines.yaml"\n',
        encoding="utf-8")
    lay = layout_of(tmp_path)
    assert lay.masters == ("ci/x-master.yaml",) and lay.runners == "ci/machines.yaml"
    r = _ixtool(tmp_path, "sweep", "full")
    assert r.returncode == 0 and json.loads(r.stdout), r.stderr
