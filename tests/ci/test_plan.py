"""``ixtool ci plan`` driven by real-shaped GitHub event payloads.

The payload fixtures (tests/cases/ci/events/) are written in GitHub's shapes with
``__BASE_SHA__``/``__HEAD_SHA__`` placeholders, filled with the commits of a real
temporary git repository; the CLI runs as a subprocess with ``$GITHUB_OUTPUT``
and ``$GITHUB_STEP_SUMMARY`` pointing at temporary files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.io.actions import parse_outputs as parse_github_output
from tests.conftest import TempRepo

CASES = Path(__file__).resolve().parents[1] / "cases" / "ci"
EVENTS = CASES / "events"

ENTRY_1 = """- config-keys:
    - dsr1-fp8-h200-sglang
  description:
    - "First entry."
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1
"""
ENTRY_2 = """
- config-keys:
    - dsr1-fp8-h200-sglang
  description:
    - "Second entry."
  pr-link: XXX
"""


CANON = "https://github.com/SemiAnalysisAI/InferenceX/pull/2711"  # the payloads' PR
PREP_MESSAGE = ("chore: canonicalize PR #2711 changelog link for sweep reuse [skip-sweep]\n\n"
                "Ixtool-Reuse-Run: 17070001\n")


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str


@pytest.fixture
def shas(temp_repo: TempRepo) -> dict[str, str]:
    temp_repo.write("perf-changelog.yaml", ENTRY_1)
    base = temp_repo.commit("base")
    temp_repo.write("perf-changelog.yaml", ENTRY_1 + ENTRY_2)
    head = temp_repo.commit("Add recipe")
    temp_repo.write("README.md", "x\n")
    skip = temp_repo.commit("Add recipe\n\nno benchmarks needed [skip-sweep]")
    temp_repo.write("README.md", "y\n")
    same = temp_repo.commit("docs only")
    # on the head: merge-with-reuse's canonicalization commit, and a copy of its message
    # on a commit that links another PR (its tree differs from what ixtool builds)
    made = {}
    for name, link in (("prep", CANON), ("forged", CANON.replace("2711", "2712"))):
        temp_repo.git("checkout", "-q", "-b", name, head)
        temp_repo.write("perf-changelog.yaml", ENTRY_1 + ENTRY_2.replace("XXX", link))
        made[name] = temp_repo.commit(PREP_MESSAGE)
    temp_repo.git("checkout", "-q", "main")
    return {"base": base, "head": head, "skip": skip, "same": same, **made,
            "repo": str(temp_repo.path)}


def plan(tmp_path: Path, shas: dict[str, str], fixture: str, *, head: str = "head",
         extra: tuple[str, ...] = (), base: str = "base", before: str | None = None) -> Run:
    name = fixture.split(".")[0]
    text = (EVENTS / fixture).read_text(encoding="utf-8")
    text = text.replace("__BASE_SHA__", shas[base]).replace("__HEAD_SHA__", shas[head])
    if before is not None:  # the head the push replaced (synchronize)
        text = json.dumps(json.loads(text) | {"before": shas[before]})
    event = tmp_path / f"event-{fixture}"
    event.write_text(text, encoding="utf-8")
    out, summ = tmp_path / "github_output", tmp_path / "step_summary"
    out.write_text("previous=step\n", encoding="utf-8")
    summ.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= {"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summ),
            "GITHUB_EVENT_PATH": str(event), "GITHUB_EVENT_NAME": name}
    p = subprocess.run(
        [sys.executable, "-m", "inferencex_tools", "ci", "plan", "--repo", shas["repo"],
         *extra], env=env, capture_output=True, text=True, check=False, timeout=60)
    outputs = parse_github_output(out.read_text(encoding="utf-8"))
    return Run(p.returncode, p.stdout, p.stderr, outputs, summ.read_text(encoding="utf-8"))


def test_labeled_full_sweep_evals_only(tmp_path: Path, shas: dict[str, str]) -> None:
    r = plan(tmp_path, shas, "pull_request.labeled.json")
    assert r.rc == 0, r.stderr
    o = r.outputs
    assert o["previous"] == "step"  # appended, not overwritten
    assert o["changelog-gate"] == "true" and o["changelog-mode"] == "pr"
    assert o["diff-base"] == shas["base"] and o["diff-head"] == shas["head"]
    assert o["pr-number"] == "2710"
    assert o["sweep"] == "true" and o["sweep-mode"] == "full"
    assert o["sweep-label"] == "full-sweep-enabled"
    assert o["sweep-flags"] == "--evals-only" and o["canary"] == "false"
    assert o["reusable"] == "false" and o["reuse-check"] == "none"
    assert json.loads(o["labels"]) == ["full-sweep-enabled", "evals-only"]
    assert o["errors"] == "0"
    assert len(o["reasons"].splitlines()) >= 2  # multi-line value through a heredoc
    decision = json.loads(o["decision"])
    assert decision["sweep"]["flags"] == ["--evals-only"]
    assert "| sweep | ✅ runs |" in r.summary
    assert "full matrix, no canary, --evals-only, not reusable at merge" in r.summary
    assert "CI104" in r.summary and "CI104" in r.stdout


def test_labeled_unrelated_is_a_noop(tmp_path: Path, shas: dict[str, str]) -> None:
    r = plan(tmp_path, shas, "pull_request.labeled-unrelated.json")
    assert r.rc == 0, r.stderr  # even though the PR carries two primary labels
    o = r.outputs
    assert o["noop"] == "true"
    assert o["changelog-gate"] == "false" and o["policy-check"] == "false"
    assert o["sweep"] == "false" and o["errors"] == "0"
    assert "'documentation'" in o["sweep-reason"]
    assert "⏭️ skipped" in r.summary


def test_labeled_conflict_fails_with_hint(tmp_path: Path, shas: dict[str, str]) -> None:
    r = plan(tmp_path, shas, "pull_request.labeled-conflict.json", extra=("--format", "github"))
    assert r.rc == 1
    o = r.outputs  # outputs are written before the failing exit
    assert o["sweep"] == "false" and o["errors"] == "1" and o["changelog-gate"] == "true"
    assert "::error file=labels,title=CI101::" in r.stdout
    assert "remove all but one of sweep-enabled, full-sweep-enabled" in r.stdout
    assert "`CI101`" in r.summary


def test_synchronize_trimmed_sweep(tmp_path: Path, shas: dict[str, str]) -> None:
    r = plan(tmp_path, shas, "pull_request.synchronize.json", extra=("--format", "json"))
    assert r.rc == 0, r.stderr
    o = r.outputs
    assert o["sweep"] == "true" and o["sweep-mode"] == "trimmed"
    assert o["sweep-flags"] == "--trim-conc" and o["skip-queue"] == "true"
    assert o["concurrency-group"] == "ixtool-sweep-pr-2711"
    doc = json.loads(r.stdout)
    assert doc["command"] == "ci plan" and doc["info"]["decision"]["sweep"]["run"] is True


@pytest.mark.parametrize("before", ["head", "base"])
def test_synchronize_skip_sweep_tag_of_the_author(tmp_path: Path, shas: dict[str, str],
                                                   before: str) -> None:
    """The author's own ``[skip-sweep]`` commit (it changes README.md) is not a
    merge-with-reuse preparation commit: the tag is ignored, the sweep runs and CI110
    says why (was: no sweep, CI107)."""
    r = plan(tmp_path, shas, "pull_request.synchronize.json", head="skip", before=before)
    assert r.rc == 0, r.stderr
    assert r.outputs["sweep"] == "true" and r.outputs["skip-sweep-tag"] == "false"
    assert "CI110" in r.stdout and "CI107" not in r.stdout
    why = ("changes README.md besides perf-changelog.yaml" if before == "head"
           else "does not sit on the previous head")
    assert why in r.stdout, r.stdout
    assert "[skip-sweep] in head commit, ignored" in r.summary


@pytest.mark.parametrize("head", ["prep", "forged"])
def test_synchronize_skip_sweep_tag_of_a_preparation_commit(tmp_path: Path,
                                                            shas: dict[str, str],
                                                            head: str) -> None:
    """The push of a canonicalization commit built as merge-with-reuse builds it skips
    the sweep (CI107); the same message on a commit that links another PR does not."""
    r = plan(tmp_path, shas, "pull_request.synchronize.json", head=head, before="head")
    assert r.rc == 0, r.stderr
    if head == "prep":
        assert r.outputs["sweep"] == "false" and r.outputs["skip-sweep-tag"] == "true"
        assert "CI107" in r.stdout and "CI110" not in r.stdout
        assert "preparation commit" in r.outputs["sweep-reason"]
    else:
        assert r.outputs["sweep"] == "true" and r.outputs["skip-sweep-tag"] == "false"
        assert "CI110" in r.stdout and "CI107" not in r.stdout
        assert "links canonicalized" in r.stdout, r.stdout


def test_synchronize_changelog_unchanged(tmp_path: Path, shas: dict[str, str]) -> None:
    r = plan(tmp_path, shas, "pull_request.synchronize.json", base="head", head="same")
    assert r.rc == 0, r.stderr
    assert r.outputs["sweep"] == "false" and r.outputs["changelog-gate"] == "true"
    assert "unchanged" in r.outputs["sweep-reason"]


def test_fork_pr_gates_but_no_sweep(tmp_path: Path, shas: dict[str, str]) -> None:
    r = plan(tmp_path, shas, "pull_request.synchronize-fork.json")
    assert r.rc == 0, r.stderr
    assert r.outputs["changelog-gate"] == "true" and r.outputs["sweep"] == "false"
    assert "fork" in r.outputs["sweep-reason"] and "CI105" in r.stdout


def _reuse_plan(tmp_path: Path, shas: dict[str, str], pushed_at: str, *,
                pusher: str = "dev-a") -> dict[str, Any]:
    """``ci plan`` on the synchronize of the head ``pusher`` pushed, with the comments and
    the PR's commits (one, by dev-a, the PR's author) as pr-gate.yml hands them over."""
    text = (EVENTS / "pull_request.labeled.json").read_text(encoding="utf-8")
    data = json.loads(text)
    data["action"] = "synchronize"
    data["sender"] = {"login": pusher}
    data["pull_request"]["labels"] = [{"name": "full-sweep-enabled"}]
    data["pull_request"]["updated_at"] = pushed_at  # GitHub's stamp of the push
    data["pull_request"]["commits"] = 1  # base..head
    env_event = tmp_path / "ev.json"
    env_event.write_text(json.dumps(data).replace("__BASE_SHA__", shas["base"])
                         .replace("__HEAD_SHA__", shas["head"]), encoding="utf-8")
    comments = tmp_path / "comments.json"
    comments.write_text(json.dumps({
        "comments": json.loads((CASES / "comments.reuse.json").read_text(encoding="utf-8")),
        "commits": [{"sha": shas["head"], "author": {"login": "dev-a"},
                     "committer": {"login": "dev-a"}}]}), encoding="utf-8")
    p = subprocess.run(
        [sys.executable, "-m", "inferencex_tools", "ci", "plan", "--event", str(env_event),
         "--event-name", "pull_request", "--root", shas["repo"],
         "--comments", str(comments), "--format", "json"],
        env={k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        capture_output=True, text=True, check=False, timeout=60)
    assert p.returncode == 0, p.stderr
    out: dict[str, Any] = json.loads(p.stdout)
    return out


def test_reuse_authorization_skips_pr_sweep(tmp_path: Path, shas: dict[str, str]) -> None:
    """maintainer-b's pin (09:00) is newer than the push (08:00): this head's sweep is
    skipped."""
    d = _reuse_plan(tmp_path, shas, "2026-08-21T08:00:00Z")["info"]["decision"]
    assert d["reuse_check"] == "pr" and d["sweep"]["run"] is False
    # dev-a's newer comment does not count (read permission); maintainer-b's pin does
    assert "maintainer-b" in d["sweep"]["reason"] and "run 17070001" in d["sweep"]["reason"]


def test_reuse_authorization_by_the_pusher_does_not_skip(tmp_path: Path,
                                                         shas: dict[str, str]) -> None:
    """Issue 32 item 5: maintainer-b pushed the head to dev-a's PR, then pinned the run
    (09:00, after the push): not the PR's author, but the pusher — the sweep runs, CI303
    says why (was: skipped)."""
    out = _reuse_plan(tmp_path, shas, "2026-08-21T08:00:00Z", pusher="maintainer-b")
    d = out["info"]["decision"]
    assert d["reuse_check"] == "pr" and d["sweep"]["run"] is True
    f = next(f for f in out["findings"] if f["rule"] == "CI303")
    assert "@maintainer-b pushed the head" in f["message"]


def test_older_reuse_authorization_does_not_skip_a_later_push(tmp_path: Path,
                                                               shas: dict[str, str]) -> None:
    """Issue 27 item 10: the same pin, but the head was pushed after it (11:00): the
    sweep runs (was: skipped for every later head), with CI302 saying why."""
    out = _reuse_plan(tmp_path, shas, "2026-08-21T11:00:00Z")
    d = out["info"]["decision"]
    assert d["reuse_check"] == "pr" and d["sweep"]["run"] is True
    f = next(f for f in out["findings"] if f["rule"] == "CI302")
    assert "maintainer-b" in f["message"] and "before the push" in f["message"]


def test_push_to_main_ignores_skip_sweep(tmp_path: Path, shas: dict[str, str]) -> None:
    r = plan(tmp_path, shas, "push.json")
    assert r.rc == 0, r.stderr
    o = r.outputs
    assert o["changelog-mode"] == "main" and o["sweep"] == "true" and o["reuse-check"] == "push"
    # the tag is in the message, ignored on push: it skips nothing
    assert o["skip-sweep-tag"] == "false" and o["sweep-flags"] == ""
    assert "ignored on push" in o["reasons"]


def test_merge_group_diffs_against_base_sha(tmp_path: Path, shas: dict[str, str]) -> None:
    r = plan(tmp_path, shas, "merge_group.json")
    assert r.rc == 0, r.stderr
    o = r.outputs
    assert o["changelog-mode"] == "main"
    assert o["diff-base"] == shas["base"] and o["diff-head"] == shas["head"]
    assert o["sweep"] == "false" and o["pr-number"] == "2710"
    assert "merge queue" in o["sweep-reason"]


def test_missing_commits_warn(tmp_path: Path, shas: dict[str, str]) -> None:
    shas = dict(shas, head="c" * 40)  # not in the clone (shallow checkout)
    r = plan(tmp_path, shas, "pull_request.synchronize.json")
    assert r.rc == 0, r.stderr
    assert "CI201" in r.stdout and r.outputs["sweep"] == "true"


@pytest.mark.parametrize(("args", "needle"), [
    (("--event-name", "issue_comment"), "unsupported event"),
    (("--event-name", "pull_request"), "no event payload"),
])
def test_usage_errors(args: tuple[str, ...], needle: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    if "issue_comment" in args:
        env["GITHUB_EVENT_PATH"] = str(EVENTS / "push.json")
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "plan", *args],
                       env=env, capture_output=True, text=True, check=False, timeout=60)
    assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr


def test_malformed_payload_is_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "e.json"
    bad.write_text(json.dumps({"action": "synchronize", "pull_request": {
        "number": 5, "head": {"sha": "$(id)"}, "base": {"sha": "a" * 40}}}), encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "plan", "--event",
                        str(bad), "--event-name", "pull_request", "--no-git"],
                       capture_output=True, text=True, check=False, timeout=60)
    assert p.returncode == 2 and "not a commit SHA" in p.stderr
