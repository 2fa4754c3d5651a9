"""Pure rules of sweep reuse: labels (spec §9), the authorization comment
grammar (§8.1, G14), eligible source runs (§8.3 steps 5–7, G13), squash
message composition and lint (G8)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from inferencex_tools.ci.labels import FULL_SWEEP, PRIMARY
from inferencex_tools.ci.labels import REUSE_INCOMPATIBLE as INCOMPATIBLE
from inferencex_tools.ci.reuse import COMMAND_RX as _STRICT_RX
from inferencex_tools.ci.reuse import DEFAULT_ASSOCIATIONS
from inferencex_tools.io.github import (
    Artifact,
    Comment,
    LabelEvent,
    PullCommit,
    PullInfo,
    WorkflowRun,
)
from inferencex_tools.merge import rules as R
from inferencex_tools.report.findings import Finding

AUTHORIZED = DEFAULT_ASSOCIATIONS  # author associations whose comment authorizes reuse
SWEEP_WORKFLOW_PATH = ".github/workflows/run-sweep.yml"
CHANGELOG = "perf-changelog.yaml"
COMMAND = "/reuse-sweep-run"
TRAILER = "Ixtool-Reuse-Run"

# --------------------------------------------------------------------------- labels


def label_findings(pr: PullInfo, where: str) -> list[Finding]:
    out: list[Finding] = []
    primaries = [lb for lb in pr.labels if lb in PRIMARY]
    if len(primaries) != 1:
        out.append(R.SWEEP_LABEL_COUNT.at(
            where, None, None,
            f"PR #{pr.number} has {len(primaries)} primary sweep labels "
            f"({', '.join(primaries) or 'none'}); exactly one is required"))
    elif primaries[0] not in FULL_SWEEP:
        out.append(R.NOT_FULL_SWEEP.at(
            where, None, None,
            f"PR #{pr.number} is labelled {primaries[0]} (a trimmed sweep); reuse needs one of "
            + ", ".join(FULL_SWEEP)))
    bad = [lb for lb in pr.labels if lb in INCOMPATIBLE]
    if bad:
        out.append(R.INCOMPATIBLE_LABEL.at(
            where, None, None,
            f"PR #{pr.number} is labelled {', '.join(bad)}: its sweep results are partial "
            "and main refuses to reuse them"))
    return out


def labels_at(current: Iterable[str], events: Iterable[LabelEvent], when: str) -> set[str]:
    """The PR's labels at time ``when``: today's labels with later events undone (G9)."""
    labels = set(current)
    for ev in sorted(events, key=lambda e: e.created_at, reverse=True):
        if ev.created_at <= when:
            break
        if ev.event == "labeled":
            labels.discard(ev.label)
        elif ev.event == "unlabeled":
            labels.add(ev.label)
    return labels


def run_label_problem(labels: set[str]) -> str | None:
    """Why a run created under ``labels`` produced no reusable full sweep, if it did not."""
    primaries = sorted(lb for lb in labels if lb in PRIMARY)
    bad = sorted(lb for lb in labels if lb in INCOMPATIBLE)
    if len(primaries) != 1 or primaries[0] not in FULL_SWEEP or bad:
        shown = ", ".join(primaries + bad) or "no sweep label"
        return f"it ran while the PR was labelled {shown}, not as one full sweep"
    return None


# --------------------------------------------------------------------------- authorization

# The reference grammar (§8.1): ``\s`` spans newlines, so "/reuse-sweep-run\n123" pins 123.
_REF_RX = re.compile(r"^\s*/reuse-sweep-run(?:\s+(\d+))?\s*$", re.M)
# ixtool's own reading (G14), shared with ``ci plan``: ``_STRICT_RX`` (ci.reuse.COMMAND_RX).


@dataclass(frozen=True)
class Authorization:
    comment: Comment
    run_id: int | None  # None: unpinned


def authorization(comments: Iterable[Comment], *, strict: bool = False,
                  allowed: frozenset[str] = AUTHORIZED) -> Authorization | None:
    """The authorization in force: newest (by created_at) authorized matching comment;
    within it, the last match.  ``strict`` uses the one-line grammar."""
    rx = _STRICT_RX if strict else _REF_RX
    for c in sorted(comments, key=lambda c: c.created_at, reverse=True):
        if c.association not in allowed:
            continue
        matches = list(rx.finditer(c.body))
        if matches:
            digits = matches[-1].group(1)
            return Authorization(c, int(digits) if digits else None)
    return None


def pinned_to(comments: Iterable[Comment], run_id: int) -> Authorization | None:
    """The comment in force when both readings agree that it pins ``run_id``."""
    cs = list(comments)
    ref, strict = authorization(cs), authorization(cs, strict=True)
    if ref and strict and ref.comment.id == strict.comment.id and ref.run_id == run_id \
            and strict.run_id == run_id:
        return ref
    return None


def comment_body(run_id: int) -> str:
    return f"{COMMAND} {run_id}"


# --------------------------------------------------------------------------- runs

def reusable_artifacts(artifacts: Iterable[Artifact]) -> list[str]:
    """Unexpired result artifacts under main's exact-name rule (§8.3.7, G13)."""
    return [a.name for a in artifacts if not a.expired and (
        a.name in ("results_bmk", "eval_results_all") or a.name.startswith("bmk_agentic_"))]


@dataclass
class RunChoice:
    run: WorkflowRun | None
    artifacts: list[str]
    findings: list[Finding]
    considered: list[str]  # one line per run looked at, for the plan


def _run_problems(run: WorkflowRun, commits: set[str], workflow_path: str) -> list[str]:
    out: list[str] = []
    if run.event != "pull_request":
        out.append(f"event is {run.event!r}, not pull_request")
    if run.status != "completed":
        out.append(f"status is {run.status!r}, not completed")
    if run.conclusion != "success":
        out.append(f"conclusion is {run.conclusion!r}, not success")
    if run.path and run.path.split("@", 1)[0] != workflow_path:
        out.append(f"workflow is {run.path}, not {workflow_path}")
    if not run.head_sha or run.head_sha not in commits:
        out.append(f"its head {run.head_sha[:12] or '?'} is not a commit of the PR")
    return out


def choose_run(
    pr: PullInfo,
    commits: list[PullCommit],
    runs: list[WorkflowRun] | None,
    pinned: WorkflowRun | None,
    artifacts_of: Callable[[int], list[Artifact]],
    where: str,
    labels_of: Callable[[WorkflowRun], set[str]] | None = None,
) -> RunChoice:
    """Pick the source run: the pinned one (validated) or the newest eligible one.

    ``labels_of(run)`` gives the PR's labels when the run was created (G9); a run
    made under a trimmed, evals-only or agentx-fast labelling is not reusable."""
    shas = {c.sha for c in commits}
    considered: list[str] = []

    def problems_of(run: WorkflowRun) -> list[str]:
        out = _run_problems(run, shas, SWEEP_WORKFLOW_PATH)
        if not out and labels_of is not None:
            why = run_label_problem(labels_of(run))
            if why:
                out.append(why)
        return out

    if pinned is not None:
        problems = problems_of(pinned)
        arts: list[str] = []
        if not problems:
            arts = reusable_artifacts(artifacts_of(pinned.id))
            if not arts:
                problems.append("it has no unexpired results_bmk / eval_results_all / "
                                "bmk_agentic_* artifact")
        considered.append(f"run {pinned.id} (pinned): " + ("; ".join(problems) or "eligible"))
        if problems:
            return RunChoice(None, [], [R.PINNED_RUN_INVALID.at(
                where, None, None, f"run {pinned.id} cannot be reused: " + "; ".join(problems))],
                considered)
        return RunChoice(pinned, arts, [], considered)
    expired_seen = False
    for run in sorted(runs or [], key=lambda r: r.created_at, reverse=True):
        problems = problems_of(run)
        if problems:
            considered.append(f"run {run.id}: " + "; ".join(problems))
            continue
        all_arts = artifacts_of(run.id)
        arts = reusable_artifacts(all_arts)
        if not arts:
            if reusable_artifacts(Artifact(a.name, False) for a in all_arts):
                expired_seen = True
                considered.append(f"run {run.id}: result artifacts expired")
            else:
                considered.append(f"run {run.id}: no result artifacts")
            continue
        considered.append(f"run {run.id}: eligible ({', '.join(arts)})")
        return RunChoice(run, arts, [], considered)
    why = "their result artifacts have expired" if expired_seen else (
        "none succeeded on a commit of this PR with result artifacts")
    return RunChoice(None, [], [R.NO_ELIGIBLE_RUN.at(
        where, None, None,
        f"no reusable run-sweep.yml run for PR #{pr.number} (branch {pr.head_ref}): {why}",
        data={"considered": considered})], considered)


def unbenchmarked(commits: list[PullCommit], run_sha: str) -> list[PullCommit]:
    """PR commits after the run's head that are not ixtool's own preparation commits."""
    order = [c.sha for c in commits]
    if run_sha not in order:
        return []
    later = commits[order.index(run_sha) + 1:]
    return [c for c in later if f"{TRAILER}:" not in c.message]


# --------------------------------------------------------------------------- messages

CONTROL_TOKENS = (
    "[skip-sweep]", "[skip sweep]", "[skip ci]", "[ci skip]", "[no ci]", "[skip actions]",
    "[actions skip]", "***no_ci***", "skip-checks:", "/reuse-sweep-run",
)
_TOKEN_RX = re.compile("|".join(re.escape(t) for t in CONTROL_TOKENS), re.I)


def lint_message(text: str) -> list[str]:
    """Control tokens found in a commit message (case-insensitive)."""
    return [m.group(0) for m in _TOKEN_RX.finditer(text)]


def squash_message(pr: PullInfo, run: WorkflowRun, repo: str) -> tuple[str, str]:
    """The squash commit title and body ixtool writes (never the PR's commit log)."""
    title = _TOKEN_RX.sub("", pr.title)
    title = re.sub(r"\s{2,}", " ", title).strip() or f"Merge PR #{pr.number}"
    title = f"{title} (#{pr.number})"
    body = (
        f"Merged by ixtool merge-with-reuse; the benchmark results of this PR come from\n"
        f"sweep run {run.id} (head {run.head_sha[:12]}), reused instead of re-running.\n"
        f"\n"
        f"Pull request: https://github.com/{repo}/pull/{pr.number}\n"
        f"Source run: {run.html_url or f'https://github.com/{repo}/actions/runs/{run.id}'}\n")
    return title, body


def prep_message(pr: PullInfo, run_id: int, kind: str) -> str:
    """Message of ixtool's one commit on the PR branch (``[skip-sweep]`` on purpose)."""
    what = {"merge": f"merge {pr.base_ref} into PR #{pr.number} for sweep reuse",
            "canonicalize": f"canonicalize PR #{pr.number} changelog link for sweep reuse",
            "refresh": f"refresh PR #{pr.number} for sweep reuse"}[kind]
    return f"chore: {what} [skip-sweep]\n\n{TRAILER}: {run_id}\n"


def prep_run_id(message: str) -> int | None:
    m = re.search(rf"^{TRAILER}: (\d+)$", message, re.M)
    return int(m.group(1)) if m else None
