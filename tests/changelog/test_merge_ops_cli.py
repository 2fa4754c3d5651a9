"""The merge commands end to end, in real temporary git repositories.

canonicalize against a base branch, resolve-conflict from the git index (and from
files), and the merge driver inside real ``git merge`` runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.changelog.validate import Options, analyze_change
from inferencex_tools.report.findings import Severity
from tests.conftest import GIT_ENV, TempRepo

U = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
F = "perf-changelog.yaml"


def entry(key: str, desc: str, link: str) -> str:
    return f'- config-keys:\n    - {key}\n  description:\n    - "{desc}"\n  pr-link: {link}\n'


BASE = entry("dsr1-fp8-b200-sglang", "first", U + "10") + "\n" + entry(
    "dsr1-fp8-h200-sglang", "second", U + "11")
PR_ENTRY = entry("gptoss-fp4-b200-vllm", "the PR change", "XXX")
MAIN_ENTRY = entry("dsr1-fp4-mi355x-atom", "a main change", U + "99")


def ixtool(cwd: Path, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inferencex_tools", *args], cwd=cwd,
                          env={**GIT_ENV, **(env or {})}, capture_output=True, text=True,
                          check=False)


def errors_of(base: bytes, head: bytes, pr: int, repo: str = "SemiAnalysisAI/InferenceX"
              ) -> list[str]:
    a = analyze_change(base, head, "f", Options(repo=repo, pr=pr, master_keys=None))
    return [f.message for f in a.findings if f.severity is Severity.ERROR]


@pytest.fixture
def forked(temp_repo: TempRepo) -> TempRepo:
    """main: BASE + MAIN_ENTRY; branch pr (checked out): BASE + PR_ENTRY."""
    temp_repo.write(F, BASE)
    temp_repo.commit("base")
    temp_repo.git("checkout", "-q", "-b", "pr")
    temp_repo.write(F, BASE + "\n" + PR_ENTRY)
    temp_repo.commit("pr entry")
    temp_repo.git("checkout", "-q", "main")
    temp_repo.write(F, BASE + "\n" + MAIN_ENTRY)
    temp_repo.commit("main entry (#99)")
    temp_repo.git("checkout", "-q", "pr")
    return temp_repo


# ------------------------------------------------------------------------ canonicalize

def test_canonicalize_writes_then_is_idempotent(forked: TempRepo) -> None:
    r = ixtool(forked.path, "changelog", "canonicalize", "--pr", "42", "--base", "main")
    assert r.returncode == 0, r.stderr
    assert f"\nreplaced 1 placeholder link with {U}42\n" in "\n" + r.stdout and not r.stderr
    data = (forked.path / F).read_bytes()
    assert data == (BASE + "\n" + PR_ENTRY.replace("XXX", U + "42")).encode()
    r2 = ixtool(forked.path, "changelog", "canonicalize", "--pr", "42", "--base", "main")
    assert r2.returncode == 0
    assert f"already canonical: the appended entry links to {U}42" in r2.stdout
    assert (forked.path / F).read_bytes() == data


def test_canonicalize_honours_repo(forked: TempRepo) -> None:
    r = ixtool(forked.path, "changelog", "canonicalize", "--pr", "7", "--base", "main",
               "--repo", "example-org/bench", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert '"repo": "example-org/bench"' in r.stdout
    assert (forked.path / F).read_bytes().endswith(
        b"  pr-link: https://github.com/example-org/bench/pull/7\n")


def test_canonicalize_refusal_leaves_file_alone(forked: TempRepo) -> None:
    bad = BASE + "\n" + PR_ENTRY.replace("XXX", "TBD")
    forked.write(F, bad)
    r = ixtool(forked.path, "changelog", "canonicalize", "--pr", "42", "--base", "main")
    assert r.returncode == 2  # an error with a hint, like every ixtool error (issue 31)
    assert r.stderr.strip().splitlines() == [
        f"ixtool: error: {F}: refusing to canonicalize for PR #42: {F}:17 [CL502] entry 3 "
        "[gptoss-fp4-b200-vllm] (TBD): pr-link 'TBD' is a placeholder ixtool cannot replace "
        f"at merge; expected 'XXX' or {U}42",
        "ixtool: hint: ixtool changelog validate --base origin/main --pr 42 --fix writes "
        "this PR's URL; then run the command again"]
    assert (forked.path / F).read_text() == bad


def test_canonicalize_finds_a_master_default_branch(tmp_path: Path) -> None:
    """Without --base the base is the default branch, whether it is called main or
    master (the real InferenceX tree extracted and committed lands on master)."""
    from tests.conftest import git

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    (repo / F).write_text(BASE)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / F).write_text(BASE + "\n" + PR_ENTRY)
    git(repo, "commit", "-qam", "pr")
    r = ixtool(repo, "changelog", "canonicalize", "--pr", "7")
    assert r.returncode == 0, r.stderr
    assert (repo / F).read_text().endswith(f"pr-link: {U}7\n")


def test_canonicalize_outside_git_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / F).write_text(BASE)
    r = ixtool(tmp_path, "changelog", "canonicalize", "--pr", "3")
    assert r.returncode == 2
    assert "not inside a git repository" in r.stderr


# -------------------------------------------------------------------- resolve-conflict

def _conflicted(forked: TempRepo) -> None:
    r = subprocess.run(["git", "merge", "-q", "main"], cwd=forked.path, env=GIT_ENV,
                       capture_output=True, text=True, check=False)
    assert r.returncode != 0 and "CONFLICT" in r.stdout + r.stderr


def test_resolve_from_index(forked: TempRepo) -> None:
    _conflicted(forked)
    r = ixtool(forked.path, "changelog", "resolve-conflict", "--pr", "42")
    assert r.returncode == 0, r.stderr
    main = (BASE + "\n" + MAIN_ENTRY).encode()
    data = (forked.path / F).read_bytes()
    assert data == main + b"\n" + PR_ENTRY.replace("XXX", U + "42").encode()
    assert errors_of(main, data, 42) == []
    forked.git("add", F)
    forked.git("commit", "-q", "--no-edit")
    assert forked.git("status", "--porcelain") == ""


def test_resolve_missing_stage_is_refused(temp_repo: TempRepo) -> None:
    temp_repo.write(F, BASE)
    temp_repo.write("other.txt", "x\n")
    temp_repo.commit("base")
    temp_repo.git("checkout", "-q", "-b", "pr")
    temp_repo.write(F, BASE + "\n" + PR_ENTRY)
    temp_repo.commit("pr")
    temp_repo.git("checkout", "-q", "main")
    temp_repo.git("rm", "-q", F)
    temp_repo.commit("main deletes the changelog")
    temp_repo.git("checkout", "-q", "pr")
    r = subprocess.run(["git", "merge", "-q", "main"], cwd=temp_repo.path, env=GIT_ENV,
                       capture_output=True, text=True, check=False)
    assert r.returncode != 0
    r = ixtool(temp_repo.path, "changelog", "resolve-conflict", "--pr", "42")
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == (
        f"ixtool: error: could not read stage 3 (theirs, the main side) of {F} from the git "
        "index: the main side (theirs) deleted the file; resolve by hand")
    assert r.stderr.splitlines()[1].startswith("ixtool: hint: ")


def test_resolve_without_conflict_is_refused(forked: TempRepo) -> None:
    r = ixtool(forked.path, "changelog", "resolve-conflict", "--pr", "42")
    assert r.returncode == 2  # a usage error, with a hint (issue 31)
    assert r.stderr.splitlines() == [
        f"ixtool: error: {F} is not in a merge conflict (no index stages 1-3): "
        "resolve-conflict resolves a merge that stopped on it",
        "ixtool: hint: run it while `git merge origin/main` is stopped on the changelog, or "
        "pass --base/--ours/--theirs FILE"]


def test_resolve_from_files_to_output(tmp_path: Path) -> None:
    (tmp_path / "b").write_text(BASE)
    (tmp_path / "o").write_text(BASE + "\n" + PR_ENTRY)
    (tmp_path / "t").write_text(BASE + "\n" + MAIN_ENTRY)
    r = ixtool(tmp_path, "changelog", "resolve-conflict", "--pr", "5", "--base", "b", "--ours",
               "o", "--theirs", "t", "--output", "out.yaml", "--repo", "example-org/bench")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.yaml").read_text() == (
        BASE + "\n" + MAIN_ENTRY + "\n"
        + PR_ENTRY.replace("XXX", "https://github.com/example-org/bench/pull/5"))
    assert not (tmp_path / F).exists()


def test_resolve_needs_all_three_files(tmp_path: Path) -> None:
    (tmp_path / "b").write_text(BASE)
    r = ixtool(tmp_path, "changelog", "resolve-conflict", "--pr", "5", "--base", "b")
    assert r.returncode == 2
    assert "ixtool: error: --base, --ours and --theirs go together" in r.stderr


# ------------------------------------------------------------------------ merge driver

def _install_driver(repo: TempRepo, extra: str = "") -> None:
    repo.write(".gitattributes", f"{F} merge=ixtool-changelog\n")
    repo.git("config", "merge.ixtool-changelog.name", "ixtool changelog resolver")
    repo.git("config", "merge.ixtool-changelog.driver",
             f"'{sys.executable}' -m inferencex_tools changelog merge-driver{extra} "
             "%O %A %B %P")


def _merge(repo: TempRepo, branch: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "merge", "--no-edit", branch], cwd=repo.path,
                          env={**GIT_ENV, **(env or {})}, capture_output=True, text=True,
                          check=False)


def test_driver_merge_main_into_pr(forked: TempRepo) -> None:
    _install_driver(forked)
    r = _merge(forked, "main", {"IXTOOL_PR": "42"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert forked.git("status", "--porcelain", "--", F) == ""
    main = (BASE + "\n" + MAIN_ENTRY).encode()
    data = (forked.path / F).read_bytes()
    assert data == main + b"\n" + PR_ENTRY.replace("XXX", U + "42").encode()
    assert b"<<<<<<<" not in data
    assert errors_of(main, data, 42) == []


def test_driver_merge_pr_into_main(forked: TempRepo) -> None:
    forked.git("checkout", "-q", "main")
    _install_driver(forked, " --pr 42 --pr-side theirs")
    r = _merge(forked, "pr")
    assert r.returncode == 0, r.stdout + r.stderr
    main = (BASE + "\n" + MAIN_ENTRY).encode()
    data = (forked.path / F).read_bytes()
    assert data == main + b"\n" + PR_ENTRY.replace("XXX", U + "42").encode()


def test_driver_refusal_leaves_a_conflict(forked: TempRepo) -> None:
    _install_driver(forked)
    forked.write(F, BASE + "\n" + PR_ENTRY.replace("XXX", "TBD"))
    forked.commit("tbd")
    r = _merge(forked, "main", {"IXTOOL_PR": "42"})
    assert r.returncode != 0
    assert ("cannot resolve the conflict for PR #42: the PR side fails the gate: "
            f"{F}@ours:17 [CL502]") in r.stderr
    data = (forked.path / F).read_text()
    assert "<<<<<<<" in data and ">>>>>>>" in data
    assert F in forked.git("diff", "--name-only", "--diff-filter=U")


def test_driver_without_pr_number_leaves_a_conflict(forked: TempRepo) -> None:
    _install_driver(forked)
    env = {k: v for k, v in os.environ.items() if k not in ("IXTOOL_PR", "GITHUB_EVENT_NAME")}
    r = subprocess.run(["git", "merge", "--no-edit", "main"], cwd=forked.path,
                       env={**env, **{k: v for k, v in GIT_ENV.items() if k.startswith("GIT")}},
                       capture_output=True, text=True, check=False)
    assert r.returncode != 0
    assert "ixtool: error: the changelog merge driver needs the PR number" in r.stderr
    assert "<<<<<<<" in (forked.path / F).read_text()
