"""What a maintainer must be able to post without reading it first (issue 26, review part):
a suggestion only where committing it yields the fixed file, the AL fix on every line that
pins the value, only the PR's own findings, one count of eval jobs, no stage error under a
pass, no silently ignored working tree; and the review's gate is `ci gate`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.changelog.fix import fix_change, fix_in_place
from inferencex_tools.changelog.validate import Options, analyze_change
from inferencex_tools.errors import UsageError
from inferencex_tools.review import comments as C
from inferencex_tools.review import shape as S
from inferencex_tools.review.model import LineComment
from inferencex_tools.review.service import ReviewRequest, build_review
from tests.conftest import GIT_ENV, TempRepo, git

SLUG = "acme/bench"


def entry(key: str, link: str, desc: str = "x") -> str:
    return (f"- config-keys:\n    - {key}\n  description:\n    - \"{desc}\"\n"
            f"  pr-link: {link}\n")


BASE = entry("a-key", f"https://github.com/{SLUG}/pull/1") + "\n" + entry(
    "b-key", f"https://github.com/{SLUG}/pull/2")


def changelog_repo(repo: TempRepo, head: str) -> Path:
    repo.path.mkdir(parents=True, exist_ok=True)
    git(repo.path, "init", "-q", "-b", "main")
    repo.write("perf-changelog.yaml", BASE)
    repo.commit("base")
    git(repo.path, "checkout", "-q", "-b", "pr")
    repo.write("perf-changelog.yaml", head)
    repo.commit("pr")
    return repo.path


def review(root: Path, pr: int = 7) -> object:
    return build_review(ReviewRequest(root=root, base="main", pr=pr, repo=SLUG))


# ---------------------------------------------------------------- 1. suggestions

MID = entry("a-key", f"https://github.com/{SLUG}/pull/1") + "\n" + entry(
    "new-key", "TBD") + "\n" + entry("b-key", f"https://github.com/{SLUG}/pull/2")


def test_a_move_is_never_an_empty_suggestion(temp_repo: TempRepo) -> None:
    """An entry inserted mid-file with a placeholder link: the move to the end cannot be
    written on the PR's lines, so it is said in prose (CL403 with its hint); the link is
    fixed where the entry is; committing every suggestion loses no entry."""
    root = changelog_repo(temp_repo, MID)
    r = review(root)
    head = (root / "perf-changelog.yaml").read_bytes()
    sugg = [c for c in r.comments if c.suggestion is not None]
    assert sugg and all(c.suggestion for c in sugg), "an empty suggestion deletes lines"
    applied = C.apply(head, sugg)
    assert applied is not None
    assert applied.count(b"- config-keys:") == head.count(b"- config-keys:")
    assert f"pr-link: https://github.com/{SLUG}/pull/7".encode() in applied
    [move] = [c for c in r.comments if "CL403" in c.rules]
    assert move.suggestion is None and "end of the file" in move.body


def test_the_whole_fix_or_the_in_place_fix(temp_repo: TempRepo) -> None:
    """fix_in_place leaves the entries where they are; fix_change moves them."""
    opts = Options(repo=SLUG, pr=7)
    a = analyze_change(BASE.encode(), MID.encode(), "perf-changelog.yaml", opts)
    whole, here = fix_change(a, opts).data, fix_in_place(a, opts).data
    assert whole is not None and here is not None
    assert whole.rstrip().endswith(b"pull/7") and here.index(b"new-key") < here.index(b"b-key")


def test_apply_is_what_github_commits() -> None:
    head = b"a\nb\nc\nd\n"
    cs = [LineComment("f", 2, "", suggestion="B\n"), LineComment("f", 4, "", start_line=3,
                                                                 suggestion="C\nD\nE\n")]
    assert C.apply(head, cs) == b"a\nB\nC\nD\nE\n"
    assert C.apply(head, [*cs, LineComment("f", 3, "", suggestion="x\n")]) is None  # overlap
    assert not C.keeps_entries(b"- a\n- b\n", LineComment("f", 2, "", suggestion=""))


@pytest.mark.parametrize("pr", [7, None])
def test_a_suggested_link_is_one_the_validator_accepts(temp_repo: TempRepo,
                                                        pr: int | None) -> None:
    """The review's link fix is the PR's URL when the PR is known; without a PR number the
    gate judges in main mode, where 'XXX' is CL502 too: no placeholder is suggested, the
    comment on the link says the number is unknown and what the link is."""
    head = BASE + "\n" + entry("c-key", "TBD").replace('"x"', '"x"  ')
    root = changelog_repo(temp_repo, head)
    r = build_review(ReviewRequest(root=root, base="main", pr=pr, repo=SLUG))
    sugg = [c for c in r.comments if c.suggestion is not None]
    assert sugg  # the trailing spaces are fixed either way
    applied = C.apply(head.encode(), sugg)
    assert applied is not None and b'"x"  ' not in applied
    opts = Options(repo=SLUG, pr=pr, master_keys=["a-key", "b-key", "c-key"])
    left = analyze_change(BASE.encode(), applied, "perf-changelog.yaml", opts).findings
    if pr is not None:
        assert f"pr-link: https://github.com/{SLUG}/pull/7\n".encode() in applied
        assert left == []
        return
    assert b"pr-link: XXX" not in applied and b"pr-link: TBD\n" in applied
    assert [f.rule for f in left] == ["CL502"]  # what is left is the link, said so:
    link_line = applied.decode().splitlines().index("  pr-link: TBD") + 1
    [said] = [c for c in r.comments if c.line == link_line and "CL502" in c.rules]
    assert said.suggestion is None
    assert "PR number is not known" in said.body
    assert f"https://github.com/{SLUG}/pull/N" in said.body


# --------------------------------------------------------- 2. every line of the value

@pytest.mark.parametrize(("text", "line", "old", "want"), [
    ("p:\n  X: '1.49'\n  Y: 1\nd:\n  X: '1.49'\n", 2, "1.49", [2, 5]),  # prefill, decode
    ("export A=2.83\nB=2.83\nexport A=2.83\n# A=2.83\n", 1, "2.83", [1, 3]),
    ('{"synthetic_acceptance_length": 2.83}\n"synthetic_acceptance_length":2.83\n', 1,
     "2.83", [1, 2]),
    ("--spec-decode-acceptance-length 2.49 \\\n  --x 1\n", 1, "2.49", [1]),
    ("GOLDEN_AL=2.83\nGOLDEN_AL=2.830\n", 1, "2.83", [1]),
    ("x 2.83\n", 1, "2.83", [1]),
])
def test_value_lines(text: str, line: int, old: str, want: list[int]) -> None:
    assert C.value_lines(text, line, old) == want


# ------------------------------------------------------------- 3. siblings, noise

def cfg(scenario: str, spec: str) -> dict[str, object]:
    return {"model": "m", "precision": "fp8", "runner": "h200", "framework": "vllm",
            "scenarios": {scenario: [{"search-space": [{"tp": 8, "spec-decoding": spec}]}]}}


def test_siblings_share_the_scenario_type() -> None:
    configs = {"k-agentic-mtp": cfg("agentic-coding", "mtp"),
               "k-agentic": cfg("agentic-coding", "none"),
               "k": cfg("fixed-seq-len", "none"), "k-mtp": cfg("fixed-seq-len", "mtp")}
    assert S.siblings("k-agentic-mtp", configs) == ["k-agentic"]
    assert S.siblings("k-mtp", configs) == ["k"]


# ------------------------------------------------------------- 4. contradictions

def test_nothing_new_has_no_stage_error_under_a_pass(temp_repo: TempRepo) -> None:
    root = changelog_repo(temp_repo, BASE)
    temp_repo.write("README.md", "docs only\n")
    temp_repo.commit("docs")
    r = review(root)
    assert r.verdict == "pass"
    assert not any("error" in v for v in r.stages.values()), r.stages
    assert r.matrix_error is None


@pytest.mark.parametrize("change", ["tracked", "staged", "untracked"])
def test_a_dirty_working_tree_is_refused(temp_repo: TempRepo, change: str) -> None:
    root = changelog_repo(temp_repo, BASE + "\n" + entry("c-key", "TBD"))
    if change == "untracked":
        temp_repo.write("benchmarks/new.sh", "echo\n")
    else:
        temp_repo.write("perf-changelog.yaml", BASE)
        if change == "staged":
            git(root, "add", "perf-changelog.yaml")
    with pytest.raises(UsageError, match="working tree differs from HEAD"):
        review(root)
    env = {k: v for k, v in GIT_ENV.items() if not k.startswith(("GITHUB_", "GH_"))}
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", "review", "--base", "main"],
                       cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "working tree differs from HEAD" in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("settings", [None, '[severity]\nCL502 = "off"\n'])
def test_json_carries_the_gate(temp_repo: TempRepo, settings: str | None) -> None:
    """`review`'s gate is `ci gate`'s result for the pair, whatever the settings (here a
    PR that adds an .ixtool.toml switching its own error off: both read them alike)."""
    root = changelog_repo(temp_repo, BASE + "\n" + entry("c-key", "TBD"))
    if settings is not None:
        temp_repo.write(".ixtool.toml", settings)
        temp_repo.commit("settings")
    env = {k: v for k, v in GIT_ENV.items() if not k.startswith(("GITHUB_", "GH_"))}
    args = ["--base", "main", "--pr", "7", "--repo", SLUG]
    rv = subprocess.run([sys.executable, "-m", "inferencex_tools", "review", *args,
                         "--format", "json"], cwd=root, env=env, capture_output=True,
                        text=True, timeout=120)
    gate = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "gate", *args,
                           "--format", "json"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)
    assert rv.returncode == gate.returncode, rv.stderr + gate.stderr
    assert gate.returncode == (1 if settings is None else gate.returncode)
    d, g = json.loads(rv.stdout), json.loads(gate.stdout)
    assert d["gate"]["findings"] == g["findings"]
    assert d["gate"]["stages"] == d["stages"]


@pytest.mark.parametrize("labels", [[], ["sweep-enabled"], ["full-sweep-enabled", "evals-only"]])
def test_without_a_token_the_event_gives_the_labels(temp_repo: TempRepo, tmp_path: Path,
                                                    labels: list[str]) -> None:
    """In a pull_request workflow without a token, `review` reads the PR's labels (and
    body) from the event payload, as `ci gate` does: its gate section is the gate's."""
    root = changelog_repo(temp_repo, BASE + "\n" + entry("c-key", f"https://github.com/{SLUG}/pull/7"))
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {
        "number": 7, "labels": [{"name": n} for n in labels], "body": "",
        "head": {"ref": "feat", "sha": "0" * 40, "repo": {"full_name": SLUG}},
        "base": {"ref": "main", "sha": "1" * 40, "repo": {"full_name": SLUG}}}}))
    env = {k: v for k, v in GIT_ENV.items() if not k.startswith(("GITHUB_", "GH_"))}
    env |= {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": SLUG}
    rv = subprocess.run([sys.executable, "-m", "inferencex_tools", "review", "--base", "main",
                         "--format", "json"], cwd=root, env=env, capture_output=True,
                        text=True, timeout=120)
    args = [a for n in labels for a in ("--label", n)]
    gate = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "gate", "--base",
                           "main", "--pr", "7", *args, "--format", "json"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert rv.returncode == gate.returncode, rv.stderr + gate.stderr
    d, g = json.loads(rv.stdout), json.loads(gate.stdout)
    assert d["gate"]["findings"] == g["findings"]
    assert d["gate"]["stages"] == g["info"]["stages"], (d["gate"], g["info"])
