"""``validate --fix`` round trips: after the fix the change is clean and the base bytes are
untouched; changes to history's text are refused, never "repaired" (its layout — blank
lines — is restored from the base)."""

from __future__ import annotations

import json

import pytest

from inferencex_tools.changelog.fix import fix_change
from inferencex_tools.changelog.validate import Options, analyze_change
from tests.changelog.casedata import CASES_DIR, LABEL, Case, load_case
from tests.changelog.clihelp import ixtool
from tests.changelog.test_cases import make_case_repo
from tests.conftest import TempRepo

URL12 = "https://github.com/SemiAnalysisAI/InferenceX/pull/12"

# PR-mode cases whose every finding has a safe fix
FIXABLE = [
    "pr-link-tbd", "pr-link-tbd-url", "pr-link-xxxx", "pr-link-empty", "pr-link-files-suffix",
    "pr-link-changes-suffix", "pr-link-continuation-line", "pr-link-own-url-http",
    "pr-link-own-url-trailing-slash", "entry-in-the-middle",
    "entry-at-the-top", "separator-none", "separator-two-blank", "separator-whitespace-only",
    "two-appended-two-blank", "two-appended-no-blank", "blank-line-at-eof",
    "missing-final-newline", "trailing-whitespace-new-entry", "crlf-new-entry",
    "separator-base-ends-blank-ok",
    # the layout rules (issue 33, D7): history's blank lines restored from the base, the
    # change's own separators and end normalised, a comment line it wrote dropped
    "separator-comment", "quirky-history-whitespace-emptied", "separator-inherited-whitespace-ok",
    "separator-inherited-plus-empty-ok", "separator-base-ends-two-blank-ok",
    "two-appended-whitespace-separator", "whitespace-line-at-eof",
]
# history changed: --fix must refuse and change nothing
REFUSED = ["history-edited", "history-deleted", "history-deleted-all", "history-reformatted",
           "history-correction-and-append", "history-trailing-space-stripped"]


def case(name: str) -> Case:
    return load_case(CASES_DIR / name)


def opts(c: Case, pr: int | None = 12) -> Options:
    return Options(repo=c.repo, pr=pr, master_keys=c.master_keys)


@pytest.mark.parametrize("name", FIXABLE)
def test_fix_round_trip(name: str) -> None:
    c = case(name)
    assert c.base is not None
    a = analyze_change(c.base, c.head, LABEL, opts(c))
    out = fix_change(a, opts(c))
    if not c.findings:  # already clean: nothing to do
        assert out.data is None and out.refused is None
        return
    assert out.data is not None and out.applied, out.refused
    assert out.data.startswith(c.base), "base bytes must be untouched"
    again = analyze_change(c.base, out.data, LABEL, opts(c))
    assert again.findings == [], [(f.rule, f.line, f.message) for f in again.findings]
    assert len(again.new_entries) == len(a.new_entries)
    # idempotent
    assert fix_change(again, opts(c)).data is None


@pytest.mark.parametrize("name", REFUSED)
def test_fix_refuses_history_changes(name: str) -> None:
    c = case(name)
    assert c.base is not None
    a = analyze_change(c.base, c.head, LABEL, opts(c))
    out = fix_change(a, opts(c))
    assert out.data is None and out.refused


def test_tbd_becomes_own_pr_url_with_pr_and_xxx_without() -> None:
    c = case("pr-link-tbd")
    assert c.base is not None
    with_pr = fix_change(analyze_change(c.base, c.head, LABEL, opts(c)), opts(c))
    assert with_pr.data is not None and with_pr.data.endswith(f"  pr-link: {URL12}\n".encode())
    main = opts(c, pr=None)
    without = fix_change(analyze_change(c.base, c.head, LABEL, main), main)
    assert without.data is not None and without.data.endswith(b"  pr-link: XXX\n")
    # XXX is what a PR carries until merge: clean in PR mode
    assert analyze_change(c.base, without.data, LABEL, opts(c)).findings == []


@pytest.mark.parametrize("name", ["pr-link-other-pr", "pr-link-wrong-repo"])
def test_fix_never_guesses_a_real_link(name: str) -> None:
    """Another PR's number or another repo may be deliberate: reported, not rewritten."""
    c = case(name)
    assert c.base is not None
    out = fix_change(analyze_change(c.base, c.head, LABEL, opts(c)), opts(c))
    assert out.data is None


def test_fix_moves_mid_file_block_and_keeps_its_bytes() -> None:
    c = case("entry-in-the-middle")
    assert c.base is not None
    out = fix_change(analyze_change(c.base, c.head, LABEL, opts(c)), opts(c))
    assert out.data is not None
    assert out.applied == ["moved 1 new entry to the end of the file"]
    new_block = c.head[c.head.index(b"- config-keys:\n    - dsr1-fp4"):]
    new_block = new_block[: new_block.index(b"\n\n") + 1]
    assert out.data == c.base + b"\n" + new_block


def test_fix_messages_name_what_changed() -> None:
    c = case("missing-final-newline")
    assert c.base is not None
    out = fix_change(analyze_change(c.base, c.head, LABEL, opts(c)), opts(c))
    assert out.applied == ["normalised the separators and the final newline of the new entries"]
    c = case("trailing-whitespace-new-entry")
    assert c.base is not None
    out = fix_change(analyze_change(c.base, c.head, LABEL, opts(c)), opts(c))
    assert len(out.applied) == 1 and "stripped trailing whitespace" in out.applied[0]


# ------------------------------------------------------------------------------ CLI


def test_cli_fix_writes_and_revalidates(temp_repo: TempRepo) -> None:
    c = case("entry-in-the-middle")
    assert c.base is not None
    c.head = c.head.replace(b"pr-link: XXX", b"pr-link: TBD")
    make_case_repo(temp_repo, c)
    p = ixtool(temp_repo.path, "changelog", "validate", "--base", "main", "--pr", "12", "--fix")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "fixed: moved 1 new entry to the end of the file" in p.stdout
    assert f"pr-link → {URL12}" in p.stdout
    data = (temp_repo.path / LABEL).read_bytes()
    assert data.startswith(c.base) and data.endswith(f"  pr-link: {URL12}\n".encode())
    p = ixtool(temp_repo.path, "changelog", "validate", "--base", "main", "--pr", "12",
               "--format", "json")
    assert p.returncode == 0 and json.loads(p.stdout)["findings"] == []
    # no temp files left behind by the atomic write
    assert sorted(x.name for x in temp_repo.path.iterdir()) == [".git", "README", "configs",
                                                                 LABEL]


def test_cli_fix_refusal_is_a_note_and_leaves_the_file(temp_repo: TempRepo) -> None:
    c = case("history-edited")
    make_case_repo(temp_repo, c)
    p = ixtool(temp_repo.path, "changelog", "validate", "--base", "main", "--pr", "12", "--fix",
               "--format", "json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert [(f["rule"], f["severity"]) for f in doc["findings"]] == [("CL702", "note"),
                                                                     ("CL402", "error")]
    assert doc["fixes"] == []
    assert (temp_repo.path / LABEL).read_bytes() == c.head


@pytest.mark.parametrize("extra", [["--head", "HEAD", "--base", "main"], ["--no-git"]])
def test_cli_fix_usage_errors(temp_repo: TempRepo, extra: list[str]) -> None:
    c = case("pr-link-tbd")
    make_case_repo(temp_repo, c)
    p = ixtool(temp_repo.path, "changelog", "validate", "--fix", *extra)
    assert p.returncode == 2
    assert p.stderr.startswith("ixtool: error: --fix") and "Traceback" not in p.stderr
    assert (temp_repo.path / LABEL).read_bytes() == c.head


def test_cli_fix_in_a_git_work_tree_without_base(temp_repo: TempRepo) -> None:
    """Local mode (no --base, pre-commit): the uncommitted entry's placeholder becomes XXX."""
    c = case("pr-link-tbd")
    make_case_repo(temp_repo, c)
    p = ixtool(temp_repo.path, "changelog", "validate", "--fix")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (temp_repo.path / LABEL).read_bytes() != c.head
    assert b"pr-link: XXX" in (temp_repo.path / LABEL).read_bytes()


def test_fix_ends_a_base_without_its_final_newline() -> None:
    """A base without its final newline (CL120, a warning: the base's): --fix ends the base's
    last line and leaves one empty line before the new entry (it glued the entry to that
    line with no empty line between them); a base whose entries cannot be read is refused."""
    c = case("base-invalid")
    assert c.base is not None and not c.base.endswith(b"\n")
    block = c.head[c.head.rindex(b"- config-keys:"):]
    a = analyze_change(c.base, c.base + b"\n  \n" + block, LABEL, opts(c))
    assert {f.rule for f in a.findings} == {"CL120", "CL407"}
    out = fix_change(a, opts(c))
    assert out.data == c.base + b"\n\n" + block, out.data
    again = analyze_change(c.base, out.data, LABEL, opts(c))
    assert [f.rule for f in again.findings] == ["CL120"]
    broken = case("base-broken-yaml-new-tbd")
    assert broken.base is not None
    out = fix_change(analyze_change(broken.base, broken.head, LABEL, opts(broken)),
                     opts(broken))
    assert out.data is None and out.refused and "cannot be read" in out.refused
