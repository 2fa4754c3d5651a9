"""The gate on real history (clone of ../shared/corpus/inferencex-history.bundle).

Figures are documented in docs/changelog.md ("Real history"); the exact counts are
asserted so that a behaviour change shows up here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.changelog.clihelp import ixtool
from tests.changelog.history import replay, summarize

# Spot checks: bundle commit → the error rules the gate reports, each verified by hand
# against the diff and the spec (the spec's own sha in the comment where it cites one).
SPOT_CHECKS: dict[str, tuple[set[str], str]] = {
    # entry inserted before the last existing entry (spec G2: #2700 = 056876ec1)
    "639c704": ({"CL403"}, "#2700 new entry above the last existing one"),
    # '/changes' suffix on a new entry's link, after #1853 (spec G1: 9e61bece8)
    "e97382c": ({"CL501"}, "#2305 pr-link …/pull/2305/changes"),
    # a blank line inserted into history before appending; pre-rename repo URL
    "7bec272": ({"CL404", "CL501"}, "#572 history bytes + InferenceMAX link"),
    # a whitespace-only history line emptied (spec G2 case 18)
    "6f3a8e0": ({"CL404"}, "#806 '  ' → '' in history"),
    # revert deleting an entry while turning the previous entry's link into XXXX
    "a8526c9": ({"CL401", "CL405"}, "#1080 revert: deleted entry + non-canonical correction"),
    # new lines inserted inside an existing entry: the old entry gets a second description
    "593f780": ({"CL111"}, "#963 duplicate key 'description'"),
    # the new entry is indented ('  - config-keys:'): not a valid YAML list item
    "6718c4d": ({"CL110"}, "#1767 YAML syntax"),
    # PR 1701: folded pr-link on a continuation line, inserted mid-file (spec G11)
    "d3cbba4": ({"CL403", "CL503"}, "#1701 mid-file + link on a continuation line"),
    # pr-link 'test'
    "8c64020": ({"CL501"}, "#880 pr-link 'test'"),
    # link correction (XXXX → 1072) mixed with an appended entry (spec §3.1.3)
    "cd6bfa7": ({"CL404", "CL406"}, "#1073 correction + append"),
    # base ends with a whitespace-only line and no empty line; head ends with an empty line
    "2c72338": ({"CL407", "CL409"}, "#862 separator + blank line at EOF"),
    # whitespace-only separator line before the appended entry
    "054818a": ({"CL407"}, "#699 whitespace-only separator"),
    # pre-rename InferenceMAX/InferenceMAX URL in a new entry
    "c3b217c": ({"CL501"}, "#335 InferenceMAX link"),
    # an entry removed from history
    "bd20ec7": ({"CL401"}, "#353 deleted entry"),
    # accepted: the newest commit (#2707) appends one canonical entry
    "8416b58": (set(), "#2707 clean append"),
}


def test_spot_checks(history_repo: Path) -> None:
    got = {v.sha[:7]: v for v in replay(history_repo, only=set(SPOT_CHECKS))}
    assert set(got) == set(SPOT_CHECKS)
    for sha, (rules, why) in SPOT_CHECKS.items():
        v = got[sha]
        assert v.rules == rules, (sha, why, [(f.rule, f.line, f.message) for f in v.errors])
        # every rejection names a line (file-wide findings excepted) and a fix
        for f in v.errors:
            assert f.hint


def test_recent_month(history_repo: Path) -> None:
    """Unmarked sample of the replay: the commits of 2026-08 (exact counts)."""
    total, rejected, rules = summarize(list(replay(history_repo, since="2026-08-01")))
    assert (total, rejected) == (107, 30)
    assert dict(rules) == {"CL403": 17, "CL407": 9, "CL404": 4, "CL501": 1, "CL409": 1}


@pytest.mark.slow
def test_full_history(history_repo: Path) -> None:
    verdicts = list(replay(history_repo))
    total, rejected, rules = summarize(verdicts)
    assert (total, rejected) == (831, 359)  # 43.2 % rejected
    assert dict(rules) == {
        "CL403": 144, "CL501": 101, "CL407": 60, "CL404": 35, "CL401": 33, "CL409": 15,
        "CL120": 7, "CL201": 5, "CL101": 5, "CL402": 3, "CL406": 2, "CL408": 1, "CL111": 1,
        "CL405": 1, "CL503": 1, "CL110": 1,
    }
    # spec §12 G2: of the 278 commits since 2026-06-19, 95 fail the strict main-mode gate
    recent = [v for v in verdicts if v.date >= "2026-06-19"]
    total, rejected, rules = summarize(recent)
    assert (total, rejected) == (278, 95)
    assert dict(rules) == {"CL403": 65, "CL407": 18, "CL401": 5, "CL404": 5, "CL409": 2,
                           "CL501": 2}
    # no config-key findings: each commit's keys resolve against its own master configs
    assert not any(r.startswith("CL6") and r != "CL603" for r in rules)


def test_cli_smoke_on_history(history_repo: Path) -> None:
    """Two commits through the real CLI (diff mode, --head, configs from the commit)."""
    def run(sha: str) -> tuple[int, dict[str, object]]:
        p = ixtool(history_repo, "changelog", "validate", "--base", f"{sha}^", "--head", sha,
                   "--format", "json")
        assert "Traceback" not in p.stderr, p.stderr
        return p.returncode, json.loads(p.stdout)

    code, doc = run("8416b58")
    assert code == 0 and doc["findings"] == []
    code, doc = run("e97382c")
    assert code == 1
    rules = [f["rule"] for f in doc["findings"]]  # type: ignore[index]
    assert rules == ["CL501"]


def _fast_path_matches_full_parse(repo: Path, since: str) -> int:
    """parse_extending (only the appended suffix is loaded) == a full parse, on real appends."""
    from inferencex_tools.changelog.model import Changelog, parse, parse_extending
    from tests.changelog.history import BlobReader, changelog_commits

    reader = BlobReader(repo)
    checked = 0
    prev: Changelog | None = None  # the previous head's full parse: this commit's base
    try:
        for sha, date, _subject, parent in changelog_commits(repo):
            if date < since or parent is None:
                continue
            base = reader.get(parent, "perf-changelog.yaml") or b""
            head = reader.get(sha, "perf-changelog.yaml") or b""
            full = parse(head, "h")
            base_cl = prev if prev is not None and prev.raw == base else parse(base, "b")
            prev = full
            if not base or not head.startswith(base):
                continue
            fast = parse_extending(base_cl, head, "h")
            assert fast.data == full.data, sha
            assert [(e.start, e.end, e.line, e.last_line) for e in fast.entries] == [
                (e.start, e.end, e.line, e.last_line) for e in full.entries], sha
            assert [(f.rule, f.line) for f in fast.findings] == [
                (f.rule, f.line) for f in full.findings], sha
            checked += 1
    finally:
        reader.close()
    return checked


def test_fast_parse_path_on_recent_appends(history_repo: Path) -> None:
    assert _fast_path_matches_full_parse(history_repo, "2026-08-18") == 25


@pytest.mark.slow
def test_fast_parse_path_since_1853(history_repo: Path) -> None:
    # all 612 real appends also match (checked once by hand; ~35 s CPU, too slow for CI)
    assert _fast_path_matches_full_parse(history_repo, "2026-06-19") == 203
