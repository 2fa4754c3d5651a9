"""Pure rules of sweep reuse: labels (spec §9), eligible source runs (§8.3
steps 5–7, G9, G13), what ixtool records in its authorization comment, and
squash message composition and lint (G8).  The authorization rule itself is
:mod:`inferencex_tools.ci.authorization`, shared with ``ci plan``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from inferencex_tools.ci.authorization import COMMAND
from inferencex_tools.ci.labels import FULL_SWEEP, PRIMARY
from inferencex_tools.ci.labels import REUSE_INCOMPATIBLE as INCOMPATIBLE
from inferencex_tools.io.github import (
    Artifact,
    LabelEvent,
    PullInfo,
    WorkflowRun,
)
from inferencex_tools.merge.rules import (
    INCOMPATIBLE_LABEL,
    NO_ELIGIBLE_RUN,
    NOT_FULL_SWEEP,
    PINNED_RUN_INVALID,
    SWEEP_LABEL_COUNT,
)
from inferencex_tools.report.findings import Finding

SWEEP_WORKFLOW_PATH = ".github/workflows/run-sweep.yml"
FAILED_OK = ("success", "failure", "cancelled")  # a pinned run under --allow-failed-run
CHANGELOG = "perf-changelog.yaml"
TRAILER = "Ixtool-Reuse-Run"  # information for humans; never used to recognise a commit

# --------------------------------------------------------------------------- labels


def label_findings(pr: PullInfo, where: str) -> list[Finding]:
    out: list[Finding] = []
    primaries = [lb for lb in pr.labels if lb in PRIMARY]
    if len(primaries) != 1:
        out.append(SWEEP_LABEL_COUNT.at(
            where, None, None,
            f"PR #{pr.number} has {len(primaries)} primary sweep labels "
            f"({', '.join(primaries) or 'none'}); exactly one is required"))
    elif primaries[0] not in FULL_SWEEP:
        out.append(NOT_FULL_SWEEP.at(
            where, None, None,
            f"PR #{pr.number} is labelled {primaries[0]} (a trimmed sweep); reuse needs one of "
            + ", ".join(FULL_SWEEP)))
    bad = [lb for lb in pr.labels if lb in INCOMPATIBLE]
    if bad:
        out.append(INCOMPATIBLE_LABEL.at(
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


# --------------------------------------------------------------------------- the comment

# The reference selector's reading (§8.1): ``\s`` spans newlines, so
# "/reuse-sweep-run\n123" pins 123 there.  ixtool decides with the one-line rule of
# ci.authorization; this reading only tells whether the comment in force could be
# read differently by a reference selector (then ixtool posts an unambiguous one).
_REF_RX = re.compile(r"^\s*/reuse-sweep-run(?:\s+(\d+))?\s*$", re.M)


def reference_agrees(body: str, run_id: int) -> bool:
    """The reference's reading of ``body`` pins ``run_id`` too."""
    matches = list(_REF_RX.finditer(body))
    return bool(matches) and matches[-1].group(1) == str(run_id)


def comment_body(run_id: int, prepared: str | None = None) -> str:
    """ixtool's authorization comment: the pinned command and, when ixtool is about to
    push a preparation commit, that commit's SHA (its record of its own commit)."""
    body = f"{COMMAND} {run_id}"
    if prepared:
        body += f"\n<!-- ixtool merge-with-reuse: prepared {prepared} -->"
    return body


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


def run_problems(run: WorkflowRun, pr: PullInfo, commits: set[str],
                 workflow_path: str = SWEEP_WORKFLOW_PATH, *,
                 allow_failed: bool = False) -> list[str]:
    """Why ``run`` is not a sweep of THIS pull request's code (empty: it is).

    A run belongs to the PR when it is a ``pull_request`` run from the PR's head
    repository and branch whose head SHA is a commit of the PR — as the reference
    selector decides.  The run's ``pull_requests`` list is only a hint: GitHub
    recomputes it on every read (it lists the open PRs whose head is the run's commit
    now), so it is empty for any run once the PR has moved on.  ``allow_failed``
    accepts a ``failure`` or ``cancelled`` conclusion (a pinned run whose results are
    complete, ``--allow-failed-run``)."""
    out: list[str] = []
    if run.event != "pull_request":
        out.append(f"event is {run.event!r}, not pull_request")
    if run.status != "completed":
        out.append(f"status is {run.status!r}, not completed")
    ok = FAILED_OK if allow_failed else ("success",)
    if run.conclusion not in ok:
        out.append(f"conclusion is {run.conclusion!r}, not " + " or ".join(ok)
                   + ("" if allow_failed or run.conclusion not in FAILED_OK
                      else " (a pinned run that failed or was cancelled with complete "
                           "results: --allow-failed-run)"))
    if run.path and run.path.split("@", 1)[0] != workflow_path:
        out.append(f"workflow is {run.path}, not {workflow_path}")
    out += _not_of_the_pr(run, pr, commits)
    if out and run.pr_numbers and pr.number not in run.pr_numbers:
        out.append("it lists " + ", ".join(f"#{n}" for n in run.pr_numbers)
                   + f", not PR #{pr.number}")
    return out


def _not_of_the_pr(run: WorkflowRun, pr: PullInfo, commits: set[str]) -> list[str]:
    """Why the run is not from the PR's head repository and branch on a PR commit."""
    out: list[str] = []
    if run.head_repo is None or pr.head_repo is None \
            or run.head_repo.lower() != pr.head_repo.lower():
        out.append(f"its head repository is {run.head_repo or 'unknown'}, not the PR's "
                   f"{pr.head_repo or 'deleted fork'}")
    if run.head_branch != pr.head_ref:
        out.append(f"it ran on branch {run.head_branch or '?'}, not the PR's {pr.head_ref}")
    if not run.head_sha or run.head_sha not in commits:
        out.append(f"its head {run.head_sha[:12] or '?'} is not a commit of the PR")
    return out


def choose_run(
    pr: PullInfo,
    commits: Iterable[str],
    runs: list[WorkflowRun] | None,
    pinned: WorkflowRun | None,
    artifacts_of: Callable[[int], list[Artifact]],
    where: str,
    labels_of: Callable[[WorkflowRun], set[str]] | None = None,
    *, allow_failed: bool = False,
) -> RunChoice:
    """Pick the source run: the pinned one (validated) or the newest eligible one.

    ``commits`` are the SHAs of the PR's commits.  ``labels_of(run)`` gives the PR's
    labels when the run was created (G9); a run made under a trimmed, evals-only or
    agentx-fast labelling is not reusable.  ``allow_failed`` lets the PINNED run have
    concluded failure or cancelled (never an unpinned choice)."""
    shas = set(commits)

    def problems_of(run: WorkflowRun) -> list[str]:
        out = run_problems(run, pr, shas, allow_failed=allow_failed and run is pinned)
        if not out and labels_of is not None:
            why = run_label_problem(labels_of(run))
            if why:
                out.append(why)
        return out

    if pinned is not None:
        return _check_pinned(pinned, problems_of(pinned), artifacts_of, where)
    considered: list[str] = []
    for run in sorted(runs or [], key=lambda r: (r.created_at, r.id), reverse=True):
        problems = problems_of(run)
        if not problems:
            all_arts = artifacts_of(run.id)
            arts = reusable_artifacts(all_arts)
            if arts:
                considered.append(f"run {run.id}: eligible ({', '.join(arts)})")
                return RunChoice(run, arts, [], considered)
            expired = reusable_artifacts(Artifact(a.name, False) for a in all_arts)
            problems = ["its result artifacts have expired" if expired
                        else "it has no results_bmk / eval_results_all / bmk_agentic_* "
                        "artifact"]
        considered.append(f"run {run.id}: " + "; ".join(problems))
    return RunChoice(None, [], [NO_ELIGIBLE_RUN.at(
        where, None, None, no_run_message(pr, considered),
        data={"considered": considered})], considered)


def no_run_message(pr: PullInfo, considered: list[str]) -> str:
    """MR301's message: the real reason of each run looked at (the first three)."""
    head = f"no reusable run-sweep.yml run for PR #{pr.number} (branch {pr.head_ref})"
    if not considered:
        return head + ": no completed pull_request run on that branch"
    shown = "; ".join(considered[:3])
    more = f"; and {len(considered) - 3} more" if len(considered) > 3 else ""
    return f"{head}: {shown}{more}"


def _check_pinned(pinned: WorkflowRun, problems: list[str],
                  artifacts_of: Callable[[int], list[Artifact]], where: str) -> RunChoice:
    arts: list[str] = []
    if not problems:
        arts = reusable_artifacts(artifacts_of(pinned.id))
        if not arts:
            problems.append("it has no unexpired results_bmk / eval_results_all / "
                            "bmk_agentic_* artifact")
    considered = [f"run {pinned.id} (pinned): " + ("; ".join(problems) or "eligible")]
    if problems:
        return RunChoice(None, [], [PINNED_RUN_INVALID.at(
            where, None, None, f"run {pinned.id} cannot be reused: " + "; ".join(problems))],
            considered)
    return RunChoice(pinned, arts, [], considered)


# --------------------------------------------------------------------------- messages

CONTROL_TOKENS = (
    "[skip-sweep]", "[skip sweep]", "[skip ci]", "[ci skip]", "[no ci]", "[skip actions]",
    "[actions skip]", "***no_ci***", "skip-checks:", "/reuse-sweep-run",
)
_TOKEN_RX = re.compile("|".join(re.escape(t) for t in CONTROL_TOKENS), re.I)


def lint_message(text: str) -> list[str]:
    """Control tokens found in a commit message (case-insensitive)."""
    return [m.group(0) for m in _TOKEN_RX.finditer(text)]


def _stripped(text: str) -> str:
    """``text`` without control tokens, removed until none is left: one pass over
    ``[skip [skip ci]ci]`` leaves ``[skip ci]``."""
    while True:
        out = _TOKEN_RX.sub("", text)
        if out == text:
            return out
        text = out


def squash_message(pr: PullInfo, run: WorkflowRun, repo: str,
                   unbenchmarked: list[str] | None = None, *, head: str = "",
                   failed_run: bool = False,
                   al_mismatch: list[str] | None = None) -> tuple[str, str]:
    """The squash commit title and body ixtool writes (never the PR's commit log).
    It names the benchmarked commit; commits merged under ``--allow-unbenchmarked``,
    a run reused under ``--allow-failed-run`` and jobs merged under
    ``--allow-al-mismatch`` are named too."""
    title = _stripped(pr.title)
    title = re.sub(r"\s{2,}", " ", title).strip() or f"Merge PR #{pr.number}"
    title = f"{title} (#{pr.number})"
    body = (
        f"Merged by ixtool merge-with-reuse; the benchmark results of this PR come from\n"
        f"sweep run {run.id} (head {run.head_sha[:12]}), reused instead of re-running.\n")
    if failed_run:
        body += (f"\nThe run concluded {run.conclusion}; reused with --allow-failed-run "
                 "(its result artifacts are complete).\n")
    if unbenchmarked:
        body += (f"\nNot benchmarked (merged with --allow-unbenchmarked): "
                 f"{len(unbenchmarked)} commit(s) after {run.head_sha[:12]}:\n"
                 + "".join(f"  {sha}\n" for sha in unbenchmarked))
    elif head and head != run.head_sha:
        body += (f"\nThe merged head {head[:12]} changes what {run.head_sha[:12]} changed "
                 "(main merged in, changelog link canonicalized).\n")
    if al_mismatch:
        body += (f"\nForced AL not served (merged with --allow-al-mismatch): "
                 f"{len(al_mismatch)} throughput job(s) of run {run.id}:\n"
                 + "".join(f"  {_stripped(job)}\n" for job in al_mismatch))
    body += (
        f"\n"
        f"Pull request: https://github.com/{repo}/pull/{pr.number}\n"
        f"Source run: {run.html_url or f'https://github.com/{repo}/actions/runs/{run.id}'}\n")
    return title, body


def prep_message(pr: PullInfo, run_id: int, kind: str) -> str:
    """Message of ixtool's one commit on the PR branch (``[skip-sweep]`` on purpose).
    The trailer informs humans; ixtool recognises its commit by the recorded SHA."""
    what = {"merge": f"merge {pr.base_ref} into PR #{pr.number} for sweep reuse",
            "canonicalize": f"canonicalize PR #{pr.number} changelog link for sweep reuse",
            "refresh": f"refresh PR #{pr.number} for sweep reuse"}[kind]
    return f"chore: {what} [skip-sweep]\n\n{TRAILER}: {run_id}\n"
