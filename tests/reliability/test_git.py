"""Git robustness with real temporary repositories (spec CHANGELOG.md §12 G6).

ixtool reads blobs from git's object database with global/system config
neutralised, so colour, diff drivers, textconv, autocrlf and clean/smudge filters
cannot change its verdict; odd checkouts (worktrees, detached HEAD, shallow clones)
work or fail with a clear message; untrusted ref strings never reach a shell and
never become options.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.errors import GitError, ShallowCloneError
from inferencex_tools.io.git import GitRepo
from tests.conftest import TempRepo, git
from tests.reliability.helpers import REPO, changelog, entry, ixtool

NEW = entry(100, link="XXX").encode()


@pytest.fixture
def repo(temp_repo: TempRepo) -> TempRepo:
    """main: 3 entries; HEAD (branch pr): one appended entry with the XXX placeholder."""
    temp_repo.write("perf-changelog.yaml", changelog(3))
    temp_repo.commit("base")
    temp_repo.git("checkout", "-q", "-b", "pr")
    temp_repo.write("perf-changelog.yaml", changelog(3) + b"\n" + NEW)
    temp_repo.commit("append")
    return temp_repo


def _verdict(cwd: Path, *extra: str, env: dict[str, str] | None = None
             ) -> tuple[int, set[str], list[int]]:
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--base", "main",
               "--repo", REPO, "--format", "json", *extra, cwd=cwd, env=env)
    r.assert_clean_exit()
    data = r.json()
    return r.code, r.rules, data.get("info", {}).get("new_entries", [])


def test_baseline_verdict(repo: TempRepo) -> None:
    code, rules, new = _verdict(repo.path)
    assert new == [4]
    assert "CL201" not in rules and code in (0, 1)


HOSTILE_CONFIG = {
    "color.ui": "always",
    "color.diff": "always",
    "diff.noprefix": "true",
    "diff.mnemonicPrefix": "true",
    "diff.external": "false",
    "diff.evil.textconv": "sed s/config-keys/hijacked/",
    "core.autocrlf": "true",
    "core.eol": "crlf",
    "core.quotePath": "true",
    "filter.evil.smudge": "sed s/config-keys/smudged/",
    "filter.evil.clean": "sed s/config-keys/cleaned/",
    "pager.show": "false",
    "log.showSignature": "true",
}


def test_repo_config_cannot_change_the_verdict(repo: TempRepo) -> None:
    baseline = _verdict(repo.path)
    for k, v in HOSTILE_CONFIG.items():
        repo.git("config", k, v)
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "attributes").write_text(
        "* diff=evil filter=evil text eol=crlf\n")
    assert _verdict(repo.path) == baseline


def test_global_config_is_ignored(repo: TempRepo, tmp_path: Path) -> None:
    baseline = _verdict(repo.path)
    gcfg = tmp_path / "hostile-gitconfig"
    for k, v in HOSTILE_CONFIG.items():
        git(tmp_path, "config", "--file", str(gcfg), k, v)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(gcfg.read_text())
    env = {"GIT_CONFIG_GLOBAL": str(gcfg), "HOME": str(home), "XDG_CONFIG_HOME": str(home)}
    assert _verdict(repo.path, env=env) == baseline


def test_gitattributes_in_the_tree_cannot_change_the_verdict(repo: TempRepo) -> None:
    baseline = _verdict(repo.path)
    repo.write(".gitattributes", "*.yaml diff=evil filter=evil eol=crlf -text\n")
    repo.commit("attributes")
    repo.git("config", "diff.evil.textconv", "sed s/config-keys/hijacked/")
    repo.git("config", "filter.evil.smudge", "sed s/config-keys/smudged/")
    assert _verdict(repo.path) == baseline


def test_show_reads_raw_blob_bytes_despite_autocrlf(temp_repo: TempRepo) -> None:
    temp_repo.write("f.yaml", b"a: 1\nb: 2\n")
    temp_repo.commit()
    temp_repo.git("config", "core.autocrlf", "true")
    temp_repo.git("config", "core.eol", "crlf")
    g = GitRepo.open(temp_repo.path)
    assert g.show("HEAD", "f.yaml") == b"a: 1\nb: 2\n"


def test_worktree(repo: TempRepo, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "--detach", str(wt), "pr")
    _code, _rules, new = _verdict(wt)
    assert new == [4]
    g = GitRepo.open(wt)
    assert g.root.resolve() == wt.resolve()
    assert not g.is_shallow
    assert g.merge_base("main", "HEAD") == repo.git("rev-parse", "main").strip()


def test_detached_head(repo: TempRepo) -> None:
    repo.git("checkout", "-q", "--detach", "pr")
    code, rules, new = _verdict(repo.path)
    assert new == [4]
    code2, rules2, new2 = _verdict(repo.path, "--head", "HEAD")
    assert code2 == code
    assert new2 == [4] and rules2 == rules


def test_shallow_clone_missing_history_is_a_clear_error(repo: TempRepo, tmp_path: Path
                                                        ) -> None:
    # main moves on after the branch point, then a depth-1 clone of each tip
    repo.git("checkout", "-q", "main")
    repo.write("other.txt", "x\n")
    repo.commit("main moves")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "pr",
        f"file://{repo.path}", str(shallow))
    git(shallow, "fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    g = GitRepo.open(shallow)
    assert g.is_shallow
    with pytest.raises(ShallowCloneError) as ei:
        g.merge_base("origin/main", "HEAD")
    assert "shallow" in ei.value.message and "fetch-depth: 0" in (ei.value.hint or "")
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--base", "origin/main",
               "--repo", REPO, cwd=shallow)
    r.assert_clean_exit()
    assert r.code == 2 and "shallow" in r.err


def test_unknown_ref_is_a_clean_git_error(repo: TempRepo) -> None:
    g = GitRepo.open(repo.path)
    with pytest.raises(GitError, match="unknown git ref"):
        g.resolve("no-such-branch")
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--base", "no-such-branch",
               cwd=repo.path)
    r.assert_clean_exit()
    assert r.code == 2 and "unknown git ref 'no-such-branch'" in r.err


@pytest.mark.parametrize("ref", [
    "--foo", "-n", "--output=/tmp/ixtool-pwned", "--upload-pack=touch pwned",
    "-c core.pager=touch", "HEAD\n--all", "HEAD\0", "",
])
def test_option_like_refs_are_rejected(repo: TempRepo, ref: str) -> None:
    g = GitRepo.open(repo.path)
    with pytest.raises(GitError):
        g.resolve(ref)
    with pytest.raises(GitError):
        g.merge_base(ref, "HEAD")
    assert not (repo.path / "pwned").exists()


@pytest.mark.parametrize("ref", [
    "$(touch pwned)", "`touch pwned`", "main; touch pwned", "main && touch pwned",
    "main | touch pwned", "main\ttouch", "'main'", "main^{/touch pwned}", "@{-99}",
])
def test_shell_metacharacters_never_reach_a_shell(repo: TempRepo, ref: str) -> None:
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--base", ref, cwd=repo.path)
    r.assert_clean_exit()
    assert r.code == 2
    assert not (repo.path / "pwned").exists()
    assert not Path("pwned").exists()


def test_ref_that_is_a_path_is_still_a_ref(repo: TempRepo) -> None:
    # a file named like a ref must not confuse rev-parse
    repo.write("main", "not a ref\n")
    g = GitRepo.open(repo.path)
    assert g.resolve("main") == repo.git("rev-parse", "main").strip()


def test_not_a_repository_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "perf-changelog.yaml").write_bytes(changelog(2))
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--base", "main",
               cwd=tmp_path, env={"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    r.assert_clean_exit()
    assert r.code == 2 and "git" in r.err


def test_changelog_missing_at_head_ref(repo: TempRepo) -> None:
    repo.git("rm", "-q", "perf-changelog.yaml")
    repo.commit("remove")
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--base", "main",
               "--head", "HEAD", cwd=repo.path)
    r.assert_clean_exit()
    assert r.code == 2 and "does not exist at HEAD" in r.err


def test_git_reads_are_independent_of_lang_and_pager(repo: TempRepo) -> None:
    env = {"LANG": "de_DE.UTF-8", "LC_ALL": "de_DE.UTF-8", "GIT_PAGER": "false",
           "PAGER": "false", "GIT_EXTERNAL_DIFF": "false"}
    assert _verdict(repo.path, env=env) == _verdict(repo.path)


def test_no_shell_anywhere_in_the_package() -> None:
    """Static guard: no module passes shell=True or uses os.system/os.popen."""
    root = Path(__file__).resolve().parents[2] / "inferencex_tools"
    offenders = [
        f"{p.relative_to(root)}: {needle}"
        for p in sorted(root.rglob("*.py"))
        for needle in ("shell=True", "os.system(", "os.popen(")
        if needle in p.read_text(encoding="utf-8")
    ]
    assert offenders == []
    assert (root / "io" / "git.py").is_file()  # the guard looks at the right tree
