"""The review on real merged PRs (slow).

* Commit every suggestion: on 23 real PRs of the history bundle that change the changelog
  or a pinned AL (entries inserted mid-file, separators, a placeholder link, edited
  history, the AL of the wrong thinking mode on two lines of six recipes), every
  suggestion of the review is committed on the PR head at once, as GitHub does, and the
  gate runs on the result: no rule a suggestion names is left, no entry is lost.
* The review's gate is the gate: on real PRs of the full-history bundle replayed as the
  gate saw them (`--base <sha>^1`), `ixtool review` and `ixtool ci gate` give the same
  exit code, stages and findings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from inferencex_tools.ci.gate import GateRequest, default_policy_stage, gate
from inferencex_tools.review import comments as C
from inferencex_tools.review.model import Review
from inferencex_tools.review.service import ReviewRequest, build_review
from tests.conftest import GIT_ENV, SHARED, git
from tests.review.replay import full_pair, hist_pair

SLUG = "SemiAnalysisAI/InferenceX"
FULL_BUNDLE = SHARED / "corpus" / "inferencex-full-history-9aeaa75d8.bundle"

# history-bundle commits (their `source-commit:` in the comment where the issue names it)
APPLY = [
    "ba22a33af",  # c2b58030b #2698: entry inserted mid-file (was an empty suggestion)
    "657123f12",  # 38fbc472e #2697: the same
    "fa61c964a",  # 6816ed05f #2690: PO408 on prefill_environment and decode_environment
    "d3cbba45f",  # #1701: mid-file, and a link the fixer rewrites in place
    "208a47ed5", "91d136f5b",  # two new entries mid-file
    "03747975c", "fed306d46", "0fed59ba8", "4deb8f07e", "c74da78fe", "8203b39c8",
    "5809aa77e", "77ce75c47",  # one new entry mid-file
    "1ada0d16c", "fc9e81e76", "b2a3a1efa", "f1393fd17", "e2467d1d9", "5ec5bbff1",  # separators
    "ec6ad490a", "203f6868e", "9a2e0e5e1",  # history edited: no fix, no suggestion
]
# 23 reviews and 6 gate + review pairs of real PRs (tests/parallel.py: handed out early)
pytestmark = pytest.mark.costly(500)
EQUAL = ["f7af076", "cbc9f65", "17ba74b", "ec81d52", "5cce587", "d37b6fb"]


@pytest.fixture(scope="module")
def full_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not FULL_BUNDLE.is_file():
        pytest.skip(f"full-history bundle not found at {FULL_BUNDLE}")
    dest = tmp_path_factory.mktemp("full") / "inferencex"
    subprocess.run(["git", "clone", "-q", "--no-checkout", "-b", "main-upto-0715",
                    str(FULL_BUNDLE), str(dest)], env=GIT_ENV, check=True)
    return dest


class Reviews:
    """The review of each history commit's replayed pair, built once per module: the
    suggestion test and the two focused tests below read the same reviews (each build runs
    the gate's stages on the pair).  ``get`` gives (clone, base, PR number, review); the
    review is of the pair as replayed, whatever a test commits on the clone afterwards."""

    def __init__(self, tree: Path, hist: Path, tmp: Path) -> None:
        self.tree, self.hist, self.tmp = tree, hist, tmp
        self.done: dict[str, tuple[Path, str, int, Review]] = {}

    def get(self, sha: str) -> tuple[Path, str, int, Review]:
        if sha not in self.done:
            root, base = hist_pair(self.tree, self.hist, sha, self.tmp / sha)
            pr = pr_number(self.hist, sha)
            self.done[sha] = (root, base, pr, build_review(ReviewRequest(
                root=root, base=base, pr=pr, repo=SLUG)))
        return self.done[sha]


@pytest.fixture(scope="module")
def reviews(real_tree: Path, history_repo: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Reviews:
    return Reviews(real_tree, history_repo, tmp_path_factory.mktemp("reviews"))


def pr_number(repo: Path, sha: str) -> int:
    import re

    m = re.search(r"\(#(\d+)\)\s*$", git(repo, "log", "-1", "--format=%s", sha).strip())
    assert m, sha
    return int(m.group(1))


def entries(raw: bytes) -> Counter[tuple[object, ...]]:
    data = yaml.safe_load(raw) or []
    return Counter((tuple(e.get("config-keys") or []), tuple(e.get("description") or []))
                   for e in data if isinstance(e, dict))


@pytest.mark.slow
def test_named_commits_are_the_issues(history_repo: Path) -> None:
    for sha, source in (("ba22a33af", "c2b58030b"), ("657123f12", "38fbc472e"),
                        ("fa61c964a", "6816ed05f")):
        assert f"source-commit: {source}" in git(history_repo, "log", "-1", "--format=%b", sha)


@pytest.mark.slow
def test_committing_every_suggestion(reviews: Reviews) -> None:
    seen: Counter[str] = Counter()
    for sha in APPLY:
        root, base, pr, r = reviews.get(sha)
        sugg = [c for c in r.comments if c.suggestion is not None]
        named = {(c.path, rule) for c in sugg for rule in c.rules}
        for path in sorted({c.path for c in sugg}):
            head = (root / path).read_bytes()
            mine = [c for c in sugg if c.path == path]
            assert all(C.keeps_entries(head, c) for c in mine), (sha, path)
            new = C.apply(head, mine)
            assert new is not None, (sha, path, "overlapping suggestions")
            if path == "perf-changelog.yaml":
                assert not entries(head) - entries(new), (sha, "an entry was lost")
            (root / path).write_bytes(new)
        seen["reviews with suggestions" if sugg else "reviews without"] += 1
        seen["suggestions"] += len(sugg)
        if not sugg:
            continue
        git(root, "commit", "-q", "-am", "apply every suggestion")
        al = any(rule.startswith("PO") for _, rule in named)
        out = gate(GateRequest(base=base, head="HEAD", pr=pr, repo=root, repo_slug=SLUG),
                   policy_stage=default_policy_stage if al else None)
        left = {(f.file, f.rule) for f in out.result.findings} & named
        assert not left, (sha, left)
    assert seen["reviews with suggestions"] >= 5 and seen["suggestions"] >= 12, seen


@pytest.mark.slow
def test_the_al_fix_covers_every_line(reviews: Reviews) -> None:
    """6816ed05f: TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS '1.49' on lines 37
    (prefill_environment) and 50 (decode_environment) of six recipes: 1.97 on both."""
    _, _, pr, r = reviews.get("fa61c964a")
    assert pr == 2690
    by_file: dict[str, list[int]] = {}
    for c in r.comments:
        if c.suggestion is not None and "PO408" in c.rules:
            assert c.suggestion.strip().endswith("'1.97'"), c.suggestion
            by_file.setdefault(c.path, []).append(c.line)
    assert len(by_file) == 6 and all(sorted(v) == [37, 50] for v in by_file.values())
    assert all("AL of the other thinking mode" in c.body for c in r.comments
               if "PO408" in c.rules)
    assert "Al of" not in "".join(c.body for c in r.comments)


@pytest.mark.slow
def test_only_the_prs_findings(reviews: Reviews) -> None:
    """c2b58030b: the runner labels nobody touched (SW406) are one collapsed line; the
    agentic recipe is not compared with its fixed-seq-len siblings (no PO502)."""
    from inferencex_tools.review.render import summary_markdown

    _, _, pr, r = reviews.get("ba22a33af")
    assert pr == 2698
    assert not [f for f in r.findings if f.rule == "SW406"]
    assert [f.rule for f in r.preexisting] == ["SW406", "SW406"]
    assert not [f for f in r.findings if f.rule == "PO502"]
    text = summary_markdown(r)
    assert text.count("<details><summary>2 finding(s) already present at the base") == 1
    assert not [c for c in r.comments if c.suggestion == ""]
    [move] = [c for c in r.comments if "CL403" in c.rules]
    assert move.suggestion is None


@pytest.mark.slow
@pytest.mark.parametrize("sha", EQUAL)
def test_review_gate_is_ci_gate(full_repo: Path, tmp_path: Path, sha: str) -> None:
    root, base = full_pair(full_repo, sha, tmp_path / "pr")
    pr = pr_number(full_repo, sha)
    env = {k: v for k, v in GIT_ENV.items() if not k.startswith(("GITHUB_", "GH_"))}
    args = ["--base", base, "--pr", str(pr), "--repo", SLUG, "--format", "json"]

    def run(*cmd: str) -> tuple[int, dict[str, object]]:
        p = subprocess.run([sys.executable, "-m", "inferencex_tools", *cmd, *args], cwd=root,
                           env=env, capture_output=True, text=True, timeout=900)
        assert p.returncode in (0, 1), p.stderr[-2000:]
        return p.returncode, json.loads(p.stdout)

    g_rc, g = run("ci", "gate")
    r_rc, r = run("review")
    view = r["gate"]
    assert isinstance(view, dict)
    assert (r_rc, view["exit-code"]) == (g_rc, g_rc)
    assert view["findings"] == g["findings"]
    assert r["verdict"] == ("fail" if g_rc else "pass")
