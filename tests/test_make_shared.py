"""scripts/make_shared.py rebuilds ../shared from a clone of InferenceX (issue 26 item 15):
checked against the corpus this machine has.  The full-history bundle stands in for a
clone (it ends at 9aeaa75d8, before the tree's 843c6254f): the data files' history the
script derives from it must be the very commits of the real history bundle."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import BUNDLE, GIT_ENV, SHARED, git

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "make_shared.py"
FULL_BUNDLE = SHARED / "corpus" / "inferencex-full-history-9aeaa75d8.bundle"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_shared", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_shared"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_readme_says_how_to_get_shared() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python scripts/make_shared.py --from" in readme
    assert "git clone https://github.com/SemiAnalysisAI/InferenceX" in readme
    p = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True,
                       text=True, check=True)
    assert "--from" in p.stdout and "--oracle-invocations" in p.stdout


def test_data_file_selection_is_the_corpus(corpus: Path, history_repo: Path) -> None:
    """The files the script takes at a commit are exactly the corpus's data files and
    the history bundle's trees (at its tip, 843c6254f)."""
    make_shared = _script()
    tip = git(history_repo, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert tip and all(make_shared.is_data(p) for p in tip)
    on_disk = sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*")
                     if p.is_file())
    assert on_disk == sorted(tip)


@pytest.mark.slow
def test_rebuilds_the_history_bundle_commit_for_commit(tmp_path: Path) -> None:
    if not FULL_BUNDLE.is_file() or not BUNDLE.is_file():
        pytest.skip("the corpus bundles are not here")
    clone = tmp_path / "InferenceX"
    subprocess.run(["git", "clone", "-q", "-b", "main-upto-0715", str(FULL_BUNDLE),
                    str(clone)], env=GIT_ENV, check=True)
    out = tmp_path / "shared"
    p = subprocess.run([sys.executable, str(SCRIPT), "--from", str(clone), "--to", str(out),
                        "--commit", "9aeaa75d8", "--full-tip", "9aeaa75d8"],
                       capture_output=True, text=True, env=GIT_ENV)
    assert p.returncode == 0, p.stderr
    corpus = out / "corpus"
    mine = tmp_path / "mine"
    subprocess.run(["git", "clone", "-q", str(corpus / "inferencex-history.bundle"),
                    str(mine)], env=GIT_ENV, check=True)
    real = tmp_path / "real"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(real)], env=GIT_ENV, check=True)
    tip = git(mine, "rev-parse", "HEAD").strip()
    # the same commit ids: same selection, trees, messages, dates and identity
    assert git(real, "rev-list", tip).split() == git(mine, "rev-list", "HEAD").split()
    assert len(git(mine, "rev-list", "HEAD").split()) == 665
    full = git(clone, "rev-parse", "HEAD").strip()
    heads = subprocess.run(["git", "bundle", "list-heads",
                            str(corpus / "inferencex-full-history-9aeaa75d8.bundle")],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert f"{full} refs/heads/main-upto-0715" in heads
    with tarfile.open(corpus / "inferencex-tree-9aeaa75d8.tar.xz") as tar:
        names = tar.getnames()
    assert {n.split("/")[1] for n in names if n.count("/") >= 1} >= {
        "benchmarks", "runners", "configs", "golden_al_distribution", "perf-changelog.yaml",
        ".github"}
    assert not [n for n in names if n.startswith("inferencex/utils/")]
    data = sorted(p.relative_to(corpus / "inferencex").as_posix()
                  for p in (corpus / "inferencex").rglob("*") if p.is_file())
    assert data == sorted(git(mine, "ls-tree", "-r", "--name-only", "HEAD").split())
