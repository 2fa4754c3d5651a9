"""Layout rules a maintainer can adopt (issue 33, D7), on real pull-request heads.

The changelog stage of ``ci gate`` judged the layout of a change by bytes the PR never
wrote: main ended with a whitespace-only line (or two empty lines) and every PR that
appended after it got CL407 or CL404; layout errors failed 149 of the 626 merged heads
that change the changelog, on layout alone.  Now the layout rules judge the lines the
change adds, are warnings ``--fix`` (and ``canonicalize``) repair, and CL404 is an error
only for a removed or rewritten line that is not blank — what the repository's own
changelog processing refuses.  The heads come from
``../shared/corpus/inferencex-pr-heads-upto-0714.bundle``, judged as CI judges them
(``--base $(git merge-base main-upto-0715 HEAD) --pr N``); the evidence table is in
docs/changelog.md ("Layout rules").
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from inferencex_tools.changelog.configkeys import top_level_keys
from inferencex_tools.changelog.validate import Options, analyze_change
from inferencex_tools.report.findings import Finding
from tests.changelog.casedata import CASES_DIR, load_case
from tests.conftest import GIT_ENV, SHARED

HEADS = SHARED / "corpus" / "inferencex-pr-heads-upto-0714.bundle"
MAIN = "main-upto-0715"
LAYOUT = {"CL403", "CL407", "CL408", "CL409", "CL411"}
_MASTER_RX = re.compile(r"(\.github/)?configs/[^/]*-master\.yaml")


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], env=GIT_ENV, check=True,
                          capture_output=True).stdout


@pytest.fixture(scope="module")
def heads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare clone of the PR-heads bundle with its refs/pull/N/head refs."""
    if not HEADS.is_file():
        pytest.skip(f"PR-heads bundle not found at {HEADS}")
    repo = tmp_path_factory.mktemp("pr-heads") / "r"
    subprocess.run(["git", "clone", "-q", "--bare", str(HEADS), str(repo)], env=GIT_ENV,
                   check=True, capture_output=True)
    _git(repo, "fetch", "-q", str(HEADS.resolve()), "+refs/pull/*:refs/pull/*")
    return repo


def judge(repo: Path, pr: int) -> list[Finding]:
    """The changelog stage of the gate on the head of PR ``pr``, as CI runs it."""
    head = _git(repo, "rev-parse", f"refs/pull/{pr}/head").decode().strip()
    base = _git(repo, "merge-base", MAIN, head).decode().strip()
    keys: list[str] = []
    for path in _git(repo, "ls-tree", "-r", "--name-only", head).decode().split():
        if _MASTER_RX.fullmatch(path):
            keys += top_level_keys(_git(repo, "show", f"{head}:{path}").decode("utf-8",
                                                                                "replace"))
    a = analyze_change(_git(repo, "show", f"{base}:perf-changelog.yaml"),
                       _git(repo, "show", f"{head}:perf-changelog.yaml"), "perf-changelog.yaml",
                       Options(repo="SemiAnalysisAI/InferenceX", pr=pr, master_keys=keys or None))
    return a.findings


def _rules(findings: list[Finding]) -> set[tuple[str, str]]:
    return {(f.rule, f.severity.value) for f in findings if f.rule != "CL301"}


# PR → what the gate reports on its head (CL301, trailing whitespace in the new entry, aside);
# each was an error before, checked by hand against the diff
REAL_HEADS: dict[int, tuple[set[tuple[str, str]], str]] = {
    1323: (set(), "main ended with two empty lines; the entry took the place of the second "
                  "(was CL404)"),
    636: ({("CL501", "error")}, "main ended with a whitespace-only line; appended right after "
                                "it (was CL407 too); a pre-rename InferenceMAX link"),
    806: ({("CL409", "warning")}, "emptied main's whitespace-only last line, its separator "
                                  "(was CL404); ends with an empty line"),
    1040: ({("CL403", "warning"), ("CL411", "warning")},
           "written mid-file, the next header re-spaced: git diff shows no deleted line"),
    572: ({("CL411", "warning"), ("CL501", "error")},
          "a blank line added into history; a pre-rename InferenceMAX link"),
    699: ({("CL407", "warning"), ("CL409", "warning")},
          "a whitespace-only separator, and a whitespace-only last line"),
    1073: ({("CL404", "error"), ("CL406", "error")},
           "a historical link line rewritten, mixed with an append"),
}


@pytest.mark.parametrize("pr", list(REAL_HEADS))
def test_real_heads(heads: Path, pr: int) -> None:
    want, why = REAL_HEADS[pr]
    got = judge(heads, pr)
    assert _rules(got) == want, (why, [(f.rule, f.line, f.message) for f in got])


def test_cl408_names_what_separates_the_entries(heads: Path) -> None:
    """#671 (not merged) separates its two entries with a whitespace-only line: the
    message said "1 blank line(s), not exactly one"."""
    got = [f for f in judge(heads, 671) if f.rule == "CL408"]
    assert got and all(f.severity.value == "warning" for f in got)
    assert any("a whitespace-only line, not exactly one empty line" in f.message for f in got)
    assert not any("blank line(s)" in f.message for f in got)
    case = load_case(CASES_DIR / "two-appended-whitespace-separator")
    assert case.base is not None
    (f,) = [f for f in analyze_change(case.base, case.head, "f", Options(pr=12)).findings
            if f.rule == "CL408"]
    assert "by a whitespace-only line, not exactly one empty line" in f.message


@pytest.mark.slow
def test_no_merged_head_fails_on_layout(heads: Path) -> None:
    """Every merged head that changes the changelog (the squash commit's subject ends
    "(#N)" on main): no layout rule is an error, CL404 only where a link correction is
    mixed with an append, and the figures of docs/changelog.md's table."""
    merged = set()
    for line in _git(heads, "log", "--first-parent", "--format=%s", MAIN).decode().splitlines():
        m = re.search(r"\(#(\d+)\)\s*$", line)
        if m:
            merged.add(int(m.group(1)))
    refs = _git(heads, "for-each-ref", "--format=%(refname)", "refs/pull").decode().split()
    judged, failing = 0, 0
    warned: Counter[str] = Counter()
    for pr in sorted(int(r.split("/")[2]) for r in refs):
        if pr not in merged:
            continue
        head = f"refs/pull/{pr}/head"
        base = _git(heads, "merge-base", MAIN, head).decode().strip()
        if (subprocess.run(["git", "-C", str(heads), "diff", "--quiet", base, head, "--",
                            "perf-changelog.yaml"], env=GIT_ENV, check=False).returncode == 0):
            continue
        found = judge(heads, pr)
        judged += 1
        errors = {f.rule for f in found if f.severity.value == "error"}
        assert not errors & LAYOUT, (pr, errors)
        assert "CL404" not in errors or "CL406" in errors, pr
        failing += bool(errors)
        warned.update({f.rule for f in found if f.rule in LAYOUT})
    # 139 before CL120 was the base's (issue 33 C: #333, #571, #577, #950, #1717 pass now;
    # #1717's own whitespace-only separator is a CL407 warning)
    assert (judged, failing) == (626, 134)
    assert warned == {"CL403": 107, "CL407": 48, "CL409": 35, "CL411": 27}


# PR → (errors, warnings) on heads whose base is itself not a valid changelog (CL120 was an
# error: the base's defect charged to the PR that repairs it)
BROKEN_BASES: dict[int, tuple[set[str], set[str], str]] = {
    1717: (set(), {"CL120", "CL407"},
           "main lacked its final newline (#1798); the PR adds it and appends its entry after "
           "a whitespace-only separator of its own"),
    1798: ({"CL101"}, {"CL120"},
           "main's YAML was broken by #1767 (an indented '  - config-keys:'); the PR repairs "
           "it and appends its own entry, but leaves no final newline (its own error)"),
}


@pytest.mark.parametrize("pr", list(BROKEN_BASES))
def test_a_pr_that_repairs_its_base_is_not_charged_with_the_base(heads: Path, pr: int) -> None:
    """Issue 31/33 (C): CL120 is the base's defect, reported as a warning; the change is
    judged against what can be read of the base, and its own errors stay errors."""
    errors, warnings, why = BROKEN_BASES[pr]
    got = judge(heads, pr)
    by = {sev: {f.rule for f in got if f.severity.value == sev and f.rule != "CL301"}
          for sev in ("error", "warning")}
    assert (by["error"], by["warning"]) == (errors, warnings), (
        why, [(f.rule, f.severity.value, f.line, f.message) for f in got])
    (cl120,) = [f for f in got if f.rule == "CL120"]
    assert "not the change's" in cl120.message, cl120.message
