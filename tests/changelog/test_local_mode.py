"""``changelog validate`` in a git work tree (pre-commit, a local branch): entries not in
the upstream's merge-base are judged as new; outside git (or --no-git) the whole file is
checked standalone.  Also: the repository root is found from a subdirectory, and CL402 /
CL601 point at the changed line.  The last tests run the real ``pre-commit`` tool on the
real tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ci.test_pre_commit import MANIFEST, pre_commit
from tests.conftest import GIT_ENV, ROOT, TempRepo, extract_real_tree, git

CONFIG = "k-one:\n  image: i\nk-two:\n  image: i\n"
HISTORY = ("- config-keys:\n    - k-one\n  description:\n    - \"first\"\n"
           "  pr-link: https://github.com/o/r/pull/1\n")


def entry(key: str = "k-two", link: str = "XXX", desc: str = "second") -> str:
    return f"\n- config-keys:\n    - {key}\n  description:\n    - \"{desc}\"\n  pr-link: {link}\n"


def _run(cwd: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([sys.executable, "-m", "inferencex_tools", "changelog", "validate",
                           "--repo", "o/r", "--format", "json", *args], cwd=cwd,
                          capture_output=True, text=True, env=GIT_ENV)
    out = json.loads(proc.stdout) if proc.stdout.startswith("{") else {}
    return proc.returncode, out, proc.stderr


def _found(out: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(f["rule"], f["line"]) for f in out.get("findings", [])]


@pytest.fixture
def repo(temp_repo: TempRepo) -> TempRepo:
    temp_repo.write("configs/x-master.yaml", CONFIG)
    temp_repo.write("perf-changelog.yaml", HISTORY)
    temp_repo.commit("history")
    return temp_repo


@pytest.mark.parametrize(("text", "want"), [
    (entry(), []),                                              # correct: XXX
    (entry(link="https://github.com/o/r/pull/7"), []),           # correct: a PR URL
    (entry(link="TBD"), [("CL502", 11)]),                        # placeholder → CL502
    (entry(key="k-tow"), [("CL601", 8)]),                        # unknown key, its line
    (entry(desc="TEMP hack"), [("CL701", 10)]),                  # scaffold marker
])
def test_staged_entry_is_judged_as_new(repo: TempRepo, text: str,
                                       want: list[tuple[str, int]]) -> None:
    repo.write("perf-changelog.yaml", HISTORY + text)
    repo.git("add", "-A")
    rc, out, err = _run(repo.path)
    assert (rc, _found(out)) == (1 if want else 0, want), err
    assert out["info"]["mode"] == "local"
    assert "immutable" not in json.dumps(out)


@pytest.mark.parametrize(("link", "rule"), [
    ("TBD", "CL502"), ("PLACEHOLDER", "CL502"), ("https://github.com/o/r/pull/XXXX", "CL502"),
    ("https://github.com/other/repo/pull/7", "CL501"), ("see #7", "CL501"),
    ("https://github.com/o/r/pull/7/files", "CL501"),
])
def test_one_rule_per_mistake_in_every_mode(repo: TempRepo, link: str, rule: str) -> None:
    """Issue 31: the same ``TBD`` was CL502 in local mode and CL501 with ``--base``.  A
    placeholder is CL502, a link that is not a canonical PR URL of the repository CL501 —
    in local mode, with ``--base`` (main mode) and with ``--base --pr`` alike."""
    repo.write("perf-changelog.yaml", HISTORY + entry(link=link))
    modes = {"local": _run(repo.path), "--base": _run(repo.path, "--base", "main"),
             "--base --pr": _run(repo.path, "--base", "main", "--pr", "7")}
    for mode, (rc, out, err) in modes.items():
        assert (rc, _found(out)) == (1, [(rule, 11)]), (mode, err, out.get("findings"))


def test_fix_hint_and_did_you_mean(repo: TempRepo) -> None:
    repo.write("perf-changelog.yaml", HISTORY + entry(key="k-tow", link="TBD"))
    _, out, _ = _run(repo.path)
    by_rule = {f["rule"]: f for f in out["findings"]}
    assert by_rule["CL601"]["hint"] == "did you mean 'k-two'?"
    assert "XXX" in by_rule["CL502"]["hint"] and "--fix" in by_rule["CL502"]["hint"]
    _, out, _ = _run(repo.path, "--fix")
    assert "pr-link: XXX" in (repo.path / "perf-changelog.yaml").read_text()
    assert _found(out) == [("CL601", 8)]


def test_committed_but_unpushed_entries_are_new(repo: TempRepo, tmp_path: Path) -> None:
    upstream = tmp_path / "upstream.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(upstream))
    repo.git("remote", "add", "origin", str(upstream))
    repo.git("fetch", "-q", "origin")
    repo.git("branch", "-q", "--set-upstream-to", "origin/main")
    repo.write("perf-changelog.yaml", HISTORY + entry(link="TBD"))
    repo.commit("unpushed entry")
    assert _found(_run(repo.path)[1]) == [("CL502", 11)]
    repo.git("push", "-q", "origin", "main")   # pushed: now history
    assert _found(_run(repo.path)[1]) == []


def test_local_feature_branch_without_remote(repo: TempRepo) -> None:
    """A branch made from the local main (no remote, no upstream): its committed entries
    are new relative to main, not history."""
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("perf-changelog.yaml", HISTORY + entry(link="TBD"))
    repo.commit("entry on a local branch")
    assert _found(_run(repo.path)[1]) == [("CL502", 11)]
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--ff-only", "feature")   # merged into main: now history
    assert _found(_run(repo.path)[1]) == []


def test_mid_file_insertion_and_changed_history_line(repo: TempRepo) -> None:
    repo.write("perf-changelog.yaml", entry().lstrip("\n") + "\n" + HISTORY)
    _, out, _ = _run(repo.path)
    assert "CL403" in {r for r, _ in _found(out)}
    changed = HISTORY.replace('"first"', '"first, edited"')
    repo.write("perf-changelog.yaml", changed)
    _, out, _ = _run(repo.path)
    assert _found(out) == [("CL402", 4)]       # the description line, not the header


def _enclosing(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``outer``: a repository with an upstream and a folder ``outer/shared`` holding a
    changelog; ``checkout``: a repository beside it; ``shared``: a symlink to
    ``outer/shared`` beside both (``../shared`` from the checkout, as the tests use it).
    Returns (outer, checkout, the changelog's path from the checkout)."""
    outer, checkout = tmp_path / "outer", tmp_path / "checkout"
    for r in (outer, checkout):
        r.mkdir()
        git(r, "init", "-q", "-b", "main")
    (outer / "README").write_text("x\n")
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "init")
    git(tmp_path, "clone", "-q", "--bare", str(outer), str(tmp_path / "up.git"))
    git(outer, "remote", "add", "origin", str(tmp_path / "up.git"))
    git(outer, "fetch", "-q", "origin")
    git(outer, "branch", "-q", "--set-upstream-to", "origin/main")
    (outer / "shared" / "corpus").mkdir(parents=True)
    (outer / "shared" / "corpus" / "perf-changelog.yaml").write_text(HISTORY + entry())
    (tmp_path / "shared").symlink_to(outer / "shared")
    return outer, checkout, Path("../shared/corpus/perf-changelog.yaml")


@pytest.mark.parametrize("how", ["ignored", "untracked"])
def test_a_folder_an_enclosing_repository_does_not_track_is_standalone(
        tmp_path: Path, how: str) -> None:
    """Issue 31: a changelog in an untracked or ignored folder of an enclosing repository
    (``../shared`` a symlink into another work tree) is judged on its own, and the
    summary says why."""
    outer, checkout, path = _enclosing(tmp_path)
    if how == "ignored":
        (outer / ".gitignore").write_text("shared/\n")
    rc, out, err = _run(checkout, str(path))
    assert rc == 0 and out["info"]["mode"] == "standalone", (err, out)
    why = out["info"]["standalone_because"]
    assert why.startswith(f"not tracked by the git repository at {outer.resolve()}"), why
    text = subprocess.run([sys.executable, "-m", "inferencex_tools", "changelog", "validate",
                           "--repo", "o/r", str(path)], cwd=checkout, capture_output=True,
                          text=True, env=GIT_ENV)
    assert f"(standalone: not tracked by the git repository at {outer.resolve()}" \
        in text.stdout + text.stderr


def test_a_file_the_upstream_tracked_but_the_clone_ignores_is_standalone(
        tmp_path: Path) -> None:
    """The enclosing repository's upstream once tracked the folder; the clone removed it
    from its index (unpushed) and ignores it: it is not the repository's file — judged on
    its own (was: local mode against the upstream, "ok")."""
    outer, checkout, path = _enclosing(tmp_path)
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "track the corpus")
    git(outer, "push", "-q", "origin", "main")
    git(outer, "rm", "-q", "-r", "--cached", "shared")
    (outer / ".gitignore").write_text("shared/\n")
    git(outer, "add", ".gitignore")
    git(outer, "commit", "-q", "-m", "stop tracking the corpus")
    rc, out, err = _run(checkout, str(path))
    assert out["info"]["mode"] == "standalone", (err, out.get("info"))
    assert rc == 0 and out["info"]["standalone_because"].startswith("not tracked")


def test_a_file_another_repository_tracks_says_which(tmp_path: Path) -> None:
    """Tracked by the repository the symlinked folder lives in: local mode there, and the
    summary names that repository (a plain "ok" read as if this checkout were judged)."""
    outer, checkout, path = _enclosing(tmp_path)
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "track the corpus")
    git(outer, "push", "-q", "origin", "main")
    rc, out, err = _run(checkout, str(path))
    assert rc == 0 and out["info"]["mode"] == "local", (err, out.get("info"))
    assert f"git repository at {outer.resolve()}: " in out["checked"][0], out["checked"]


def test_root_found_from_a_subdirectory(repo: TempRepo) -> None:
    repo.write("perf-changelog.yaml", HISTORY + entry(link="TBD"))
    rc, out, _ = _run(repo.path / "configs")
    assert rc == 1 and _found(out) == [("CL502", 11)]
    assert out["findings"][0]["file"] == "../perf-changelog.yaml"


def test_outside_git_and_no_git_keep_the_standalone_check(repo: TempRepo,
                                                          tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "perf-changelog.yaml").write_text(HISTORY + entry(link="TBD"))
    rc, out, _ = _run(plain)
    assert out["info"]["mode"] == "standalone"
    repo.write("perf-changelog.yaml", HISTORY + entry(link="TBD"))
    rc2, out2, _ = _run(repo.path, "--no-git")
    assert out2["info"]["mode"] == "standalone"
    assert (rc, _found(out)) == (rc2, _found(out2))


# ------------------------------------------------------------------ real pre-commit

SEED_KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"


def _seed_entry(key: str, link: str) -> str:
    """The seed recipe's entry of this repository's changelog, with ``key`` and ``link``."""
    text = (ROOT / "perf-changelog.yaml").read_text(encoding="utf-8")
    at = text.index(f"    - {SEED_KEY}\n")
    start = text.rindex("- config-keys:", 0, at)
    end = text.find("\n- ", at)
    block = text[start:end if end >= 0 else len(text)]
    lines = [ln for ln in block.rstrip("\n").split("\n") if not ln.startswith("  pr-link:")]
    return "\n" + "\n".join(lines).replace(SEED_KEY, key) + f"\n  pr-link: {link}\n"


def _install_hook(root: Path, tmp_path: Path) -> dict[str, str]:
    """Make the changelog hook of this repository's manifest the pre-commit hook of
    ``root`` (language: system: the installed ixtool, offline)."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    git(hooks, "init", "-q", "-b", "main")
    (hooks / ".pre-commit-hooks.yaml").write_text(
        MANIFEST.read_text(encoding="utf-8").replace("language: python", "language: system"))
    git(hooks, "add", "-A")
    git(hooks, "commit", "-q", "-m", "hooks")
    rev = git(hooks, "rev-parse", "HEAD").strip()
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n"
        "      - id: ixtool-changelog-validate\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "pre-commit config")
    env = {**GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    subprocess.run([pre_commit(), "install"], cwd=root, env=env, check=True,
                   capture_output=True)
    return env


@pytest.fixture
def real_project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The real tree committed in a repository with the changelog hook installed."""
    root = extract_real_tree(tmp_path / "tree")
    return root, _install_hook(root, tmp_path)


def test_pre_commit_rejects_a_placeholder_link(repo: TempRepo, tmp_path: Path) -> None:
    """The fast representative: the real pre-commit tool on a small repository."""
    env = _install_hook(repo.path, tmp_path)
    bad = _commit(repo.path, env, entry(link="TBD"))
    assert bad.returncode != 0 and "[CL502]" in bad.stdout + bad.stderr
    assert _commit(repo.path, env, entry()).returncode == 0


def _commit(root: Path, env: dict[str, str], text: str) -> subprocess.CompletedProcess[str]:
    shutil.copy2(root / "perf-changelog.yaml", root / ".orig")
    with open(root / "perf-changelog.yaml", "a", encoding="utf-8") as fh:
        fh.write(text)
    subprocess.run(["git", "add", "perf-changelog.yaml"], cwd=root, env=env, check=True)
    proc = subprocess.run(["git", "commit", "-q", "-m", "changelog entry"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:  # rejected: restore for the next scenario
        shutil.copy2(root / ".orig", root / "perf-changelog.yaml")
        subprocess.run(["git", "add", "perf-changelog.yaml"], cwd=root, env=env, check=True)
    (root / ".orig").unlink()
    return proc


@pytest.mark.slow
def test_pre_commit_on_the_real_tree(real_project: tuple[Path, dict[str, str]]) -> None:
    root, env = real_project
    head = git(root, "rev-parse", "HEAD")
    tbd = _commit(root, env, _seed_entry(SEED_KEY, "TBD"))
    out = tbd.stdout + tbd.stderr
    assert tbd.returncode != 0 and "[CL502]" in out, out
    assert "pr-link: XXX" in out and "--fix" in out and "immutable" not in out
    typo = _commit(root, env, _seed_entry(SEED_KEY + "x", "XXX"))
    out = typo.stdout + typo.stderr
    assert typo.returncode != 0 and "[CL601]" in out, out
    assert f"did you mean '{SEED_KEY}'?" in out
    assert git(root, "rev-parse", "HEAD") == head          # nothing was committed
    good = _commit(root, env, _seed_entry(SEED_KEY, "XXX"))
    assert good.returncode == 0, good.stdout + good.stderr
    assert git(root, "rev-parse", "HEAD") != head
