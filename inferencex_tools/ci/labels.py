"""The PR label policy, pure: event facts in, a :class:`Decision` out (spec §9).

The reference spreads this logic over job ``if:`` expressions of one large
workflow; here it is one function, :func:`decide`, tested over the whole
product of the 13 relevant labels × draft × fork × event × ``[skip-sweep]``
(``tests/ci/test_truth_table.py``) and documented in ``docs/labels.md``.

Differences from the reference, on purpose (each one is in docs/labels.md):

* the cheap gates (changelog, policy) also run on drafts, fork PRs and on
  ``opened``/``reopened``; only the self-hosted sweep keeps the reference's
  draft/fork/label restrictions;
* a label event whose label is not one of the 13 relevant labels is a no-op
  (nothing runs, nothing is cancelled) and reports no findings;
* conflicting or ineffective labels are findings with a fix hint, not a bare
  failing step;
* ``merge_group`` runs the changelog gate in main mode over the merge group's
  own base..head range; sweeps are never started from the merge queue;
* ``[skip-sweep]`` in the head commit message skips the PR sweep only on the push of
  a head that checks out as a merge-with-reuse preparation commit
  (:func:`skip_tag_refusal`); the reference honours it on any commit.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any

from inferencex_tools.ci.rules import (
    DRAFT_NO_SWEEP,
    FORK_NO_SWEEP,
    INEFFECTIVE_MODIFIER,
    MODIFIER_WITHOUT_PRIMARY,
    NEAR_MISS,
    NOT_REUSABLE,
    PRIMARY_CONFLICT,
    REUSE_AUTHORIZED,
    REUSE_NOT_FOR_HEAD,
    REUSE_SELF,
    SKIP_SWEEP_IGNORED,
    WAIVER_WITHOUT_PATCHWORK,
)
from inferencex_tools.ci.rules import SKIP_SWEEP_TAG as SKIP_SWEEP_TAG_RULE
from inferencex_tools.report.findings import Finding

PRIMARY: tuple[str, ...] = (
    "sweep-enabled",
    "full-sweep-enabled",
    "non-canary-full-sweep-enabled",
    "full-sweep-fail-fast",
    "full-sweep-fail-fast-no-canary",
)
FULL_SWEEP: tuple[str, ...] = PRIMARY[1:]
MODIFIERS: tuple[str, ...] = ("all-evals", "evals-only", "agentx-fast", "skip_queue")
POLICY: tuple[str, ...] = (
    "ci-patchwork",
    "engine-patch",
    "ci-patchwork-waived",
    "ci-checklist-complete",
)
RELEVANT: tuple[str, ...] = PRIMARY + MODIFIERS + POLICY
REUSE_INCOMPATIBLE: tuple[str, ...] = ("evals-only", "agentx-fast")

EVENTS: tuple[str, ...] = ("pull_request", "push", "merge_group")
PR_ACTIONS: tuple[str, ...] = (
    "opened", "synchronize", "reopened", "labeled", "unlabeled", "ready_for_review",
)
# ``opened`` never starts a sweep: labels given at creation arrive as their own
# ``labeled`` events, which would start the same sweep a second time.
SWEEP_ACTIONS = frozenset({"synchronize", "reopened", "labeled", "unlabeled", "ready_for_review"})
SKIP_SWEEP_TAG = "[skip-sweep]"
ZERO_SHA = "0" * 40
LABELS_FILE = "labels"  # the "file" of label findings (they have no source position)


@dataclass(frozen=True)
class PrimarySpec:
    label: str
    matrix: str  # "trimmed" | "full"
    canary: bool
    fail_fast: bool
    reusable: bool


PRIMARY_SPECS: dict[str, PrimarySpec] = {
    "sweep-enabled": PrimarySpec("sweep-enabled", "trimmed", False, False, False),
    "full-sweep-enabled": PrimarySpec("full-sweep-enabled", "full", True, False, True),
    "non-canary-full-sweep-enabled": PrimarySpec(
        "non-canary-full-sweep-enabled", "full", False, False, True),
    "full-sweep-fail-fast": PrimarySpec("full-sweep-fail-fast", "full", True, True, True),
    "full-sweep-fail-fast-no-canary": PrimarySpec(
        "full-sweep-fail-fast-no-canary", "full", False, True, True),
}

LABEL_HELP: dict[str, str] = {
    "sweep-enabled": "primary: trimmed sweep (lowest concurrency per recipe, --trim-conc); "
    "no canary; not reusable at merge",
    "full-sweep-enabled": "primary: full sweep after a canary job; reusable at merge",
    "non-canary-full-sweep-enabled": "primary: full sweep without a canary; reusable at merge",
    "full-sweep-fail-fast": "primary: full sweep with canary and matrix fail-fast; reusable",
    "full-sweep-fail-fast-no-canary": "primary: full sweep, matrix fail-fast, no canary; "
    "reusable",
    "all-evals": "modifier: evaluate every eligible row (--all-evals); stays reusable",
    "evals-only": "modifier: run evaluations only (--evals-only); not reusable at merge",
    "agentx-fast": "modifier: fast mode for the agentic throughput jobs; not reusable",
    "skip_queue": "modifier: the sweep's rows skip the priority queue (skip-queue-pr)",
    "ci-patchwork": "policy: CI patchwork PR (priority score 0 unless waived)",
    "engine-patch": "policy: engine patch PR (priority score 0 unless waived)",
    "ci-patchwork-waived": "policy: waives ci-patchwork/engine-patch for priority scoring",
    "ci-checklist-complete": "policy: PR checklist complete (+0.25 priority)",
}


@dataclass(frozen=True)
class Facts:
    """What the label policy needs to know about one workflow event."""

    event: str
    action: str | None = None
    labels: frozenset[str] = frozenset()
    changed_label: str | None = None  # the label of a labeled/unlabeled event
    draft: bool = False
    fork: bool = False
    head_message: str | None = None  # None: not known (commit not available)
    pr_number: int | None = None
    ref: str | None = None
    default_branch: str = "main"
    base_sha: str | None = None
    head_sha: str | None = None
    changelog_changed: bool | None = None  # None: not known
    reuse_authorized: bool = False  # a maintainer's /reuse-sweep-run comment applies
    reuse_detail: str = ""
    reuse_stale: str = ""  # an authorization is in force, but not for this head: why
    # an authorization for this head by someone who pushed or wrote what it covers: why
    reuse_self: str = ""
    pushed_at: str | None = None  # when GitHub recorded the push of the head (synchronize)
    before_sha: str | None = None  # the head the push replaced (synchronize)
    pr_author: str | None = None  # the PR's author (pull_request.user.login)
    sender: str | None = None  # who triggered the event (synchronize: pushed the head)
    commit_count: int | None = None  # the PR's number of commits (pull_request.commits)
    repo: str | None = None  # OWNER/NAME of the base repository
    # the head checks out as a merge-with-reuse preparation commit sitting on
    # ``before_sha`` (ci/prepared.py, asked by ci.service.checked_facts); only then
    # does a [skip-sweep] in its message skip the PR sweep.  Unchecked = not one.
    head_prepared: bool = False
    head_not_prepared: str = ""  # why not, when it was checked


@dataclass(frozen=True)
class Sweep:
    """What the labeled sweep does (``run`` false: nothing, see ``reason``)."""

    run: bool = False
    reason: str = ""
    label: str | None = None
    mode: str = "none"  # none | trimmed | full
    canary: bool = False
    fail_fast: bool = False
    trim_conc: bool = False
    all_evals: bool = False
    evals_only: bool = False
    agentx_fast: bool = False
    skip_queue: bool = False
    reusable: bool = False

    def flags(self) -> list[str]:
        """The ``ixtool sweep from-changelog`` flags this sweep needs."""
        out: list[str] = []
        if self.trim_conc:
            out.append("--trim-conc")
        if self.all_evals:
            out.append("--all-evals")
        if self.evals_only:
            out.append("--evals-only")
        return out


@dataclass(frozen=True)
class Decision:
    event: str
    action: str | None
    noop: bool
    changelog_gate: bool
    changelog_mode: str  # pr | main | standalone | none
    diff_base: str | None
    diff_head: str | None
    pr_number: int | None
    policy_check: bool
    sweep: Sweep
    reuse_check: str  # none | pr | push
    skip_sweep_tag: bool
    concurrency_group: str
    labels: tuple[str, ...]  # the relevant labels present, in catalog order
    policy_labels: tuple[str, ...]
    reasons: tuple[str, ...]
    findings: tuple[Finding, ...] = field(default=())
    # a fork PR whose labels ask for a sweep: it runs through the trusted path
    # (sweep.yml dispatched by a maintainer for the approved head SHA)
    trusted_sweep: bool = False
    # the [skip-sweep] tag skips the PR sweep (``skip_sweep_tag`` says only that the
    # head commit message carries it): see :func:`skip_tag_refusal`
    skip_sweep: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["findings"] = [f.to_dict() for f in self.findings]
        d["labels"] = list(self.labels)
        d["policy_labels"] = list(self.policy_labels)
        d["reasons"] = list(self.reasons)
        d["sweep"]["flags"] = self.sweep.flags()
        return d


# ------------------------------------------------------------------------ label checks

def _norm(label: str) -> str:
    return "".join(c for c in label.lower().replace("_", "-") if c.isalnum() or c == "-")


_NORMALIZED = {_norm(x): x for x in RELEVANT}


def near_miss(label: str) -> str | None:
    """The relevant label ``label`` was probably meant to be, if any."""
    if label in RELEVANT:
        return None
    n = _norm(label)
    if n in _NORMALIZED:
        return _NORMALIZED[n]
    close = difflib.get_close_matches(n, list(_NORMALIZED), n=1, cutoff=0.86)
    return _NORMALIZED[close[0]] if close else None


def _ordered(labels: frozenset[str], catalog: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(x for x in catalog if x in labels)


def label_findings(labels: frozenset[str]) -> list[Finding]:
    """Findings about a PR's label set alone (conflicts, near misses, no-ops)."""
    out: list[Finding] = []
    primaries = _ordered(labels, PRIMARY)
    if len(primaries) > 1:
        count = "two" if len(primaries) == 2 else str(len(primaries))
        out.append(PRIMARY_CONFLICT.at(
            LABELS_FILE, None, None,
            f"{count} primary sweep labels: {', '.join(primaries)}; no sweep runs",
            hint=f"{count} primary labels: remove all but one of {', '.join(primaries)}",
            data={"labels": list(primaries)},
        ))
    sweep_mods = _ordered(labels, MODIFIERS)
    if sweep_mods and not primaries:
        out.append(MODIFIER_WITHOUT_PRIMARY.at(
            LABELS_FILE, None, None,
            f"{', '.join(sweep_mods)} without a primary sweep label has no effect",
            hint="add one of " + ", ".join(PRIMARY) + f" or remove {', '.join(sweep_mods)}",
        ))
    if "agentx-fast" in labels and "evals-only" in labels:
        out.append(INEFFECTIVE_MODIFIER.at(
            LABELS_FILE, None, None,
            "agentx-fast has no effect with evals-only (no throughput jobs run)",
            hint="remove agentx-fast, or remove evals-only to run throughput jobs",
        ))
    blockers = _ordered(labels, REUSE_INCOMPATIBLE)
    full = _ordered(labels, FULL_SWEEP)
    if len(primaries) == 1 and full and blockers:
        out.append(NOT_REUSABLE.at(
            LABELS_FILE, None, None,
            f"{full[0]} with {', '.join(blockers)}: main will not reuse this sweep and "
            "runs its own after merge",
        ))
    if "ci-patchwork-waived" in labels and not ({"ci-patchwork", "engine-patch"} & labels):
        out.append(WAIVER_WITHOUT_PATCHWORK.at(
            LABELS_FILE, None, None,
            "ci-patchwork-waived is set but neither ci-patchwork nor engine-patch is",
        ))
    for lab in sorted(labels):
        meant = near_miss(lab)
        if meant is not None:
            out.append(NEAR_MISS.at(
                LABELS_FILE, None, None,
                f"label {lab!r} is not a sweep/policy label; did you mean {meant!r}?",
                hint=f"replace label {lab!r} with {meant!r}",
            ))
    return out


def sweep_for_labels(labels: frozenset[str]) -> Sweep:
    """The sweep a PR's labels select, ignoring event, draft and fork facts."""
    primaries = _ordered(labels, PRIMARY)
    if not primaries:
        return Sweep(reason="no primary sweep label")
    if len(primaries) > 1:
        return Sweep(reason="conflicting primary sweep labels: " + ", ".join(primaries))
    spec = PRIMARY_SPECS[primaries[0]]
    evals_only = "evals-only" in labels
    agentx = "agentx-fast" in labels
    return Sweep(
        run=True,
        reason=f"labeled {spec.label}",
        label=spec.label,
        mode=spec.matrix,
        # the canary is a non-eval single-node throughput row: evals-only has none
        canary=spec.canary and not evals_only,
        fail_fast=spec.fail_fast,
        trim_conc=spec.matrix == "trimmed",
        all_evals="all-evals" in labels,
        evals_only=evals_only,
        agentx_fast=agentx,
        skip_queue="skip_queue" in labels,
        reusable=spec.reusable and not evals_only and not agentx,
    )


def _off(sweep: Sweep, reason: str) -> Sweep:
    """``sweep`` with run=false (the label-derived flags stay, for the summary)."""
    return Sweep(**{**asdict(sweep), "run": False, "reason": reason})


# ------------------------------------------------------------------------- [skip-sweep]

def has_skip_tag(facts: Facts) -> bool:
    """The head commit message carries ``[skip-sweep]`` (a claim, see below)."""
    return facts.head_message is not None and SKIP_SWEEP_TAG in facts.head_message


def skip_tag_refusal(facts: Facts) -> str | None:
    """Why ``[skip-sweep]`` in the head commit message does NOT skip the sweep of a
    pull_request event (None: it does).

    The tag is a claim anyone who can push may write.  ixtool honours it only for what
    it exists for (spec §7: merge-with-reuse's own commit): the push (``synchronize``)
    of a head that checks out as a preparation commit on top of the head that push
    replaced (``Facts.head_prepared``: main merged in and the changelog's links
    canonicalized, nothing else, ci/prepared.py), so the PR content is the content
    the previous head's own event decided about.  On any other action (a label,
    ready-for-review, reopen) the sweep those ask for was never decided for this
    content, and the tag counts for nothing."""
    if facts.action != "synchronize":
        return (f"the tag counts only on the push of a merge-with-reuse preparation "
                f"commit (synchronize), not on a {facts.action or 'unknown'} event")
    if facts.head_prepared:
        return None
    return ("the head is not a merge-with-reuse preparation commit on the previous head ("
            + (facts.head_not_prepared or "not checked") + ")")


# ------------------------------------------------------------------------------ decide

def decide(facts: Facts) -> Decision:
    """The decision for one event.  Pure; see docs/labels.md for the truth table."""
    if facts.event == "pull_request":
        return _decide_pr(facts)
    if facts.event == "push":
        return _decide_push(facts)
    if facts.event == "merge_group":
        return _decide_merge_group(facts)
    raise ValueError(f"unsupported event {facts.event!r}")


def _pr_group(facts: Facts) -> str:
    return f"ixtool-sweep-pr-{facts.pr_number}"


def _decide_pr(facts: Facts) -> Decision:
    labels = facts.labels
    present = _ordered(labels, RELEVANT)
    policy_labels = _ordered(labels, POLICY)
    skip_tag = has_skip_tag(facts)
    refusal = skip_tag_refusal(facts) if skip_tag else None
    honoured = skip_tag and refusal is None
    noop_reason = _pr_noop(facts)
    if noop_reason is not None:
        return Decision(
            event=facts.event, action=facts.action, noop=True, changelog_gate=False,
            changelog_mode="none", diff_base=None, diff_head=None,
            pr_number=facts.pr_number, policy_check=False,
            sweep=_off(sweep_for_labels(labels), noop_reason), reuse_check="none",
            skip_sweep_tag=skip_tag, concurrency_group=_pr_group(facts),
            labels=present, policy_labels=policy_labels, reasons=(noop_reason,),
        )
    findings = label_findings(labels)
    reasons: list[str] = ["pull_request: changelog gate (PR mode) and policy check run"]
    reuse_check = _pr_reuse_check(facts)
    sweep = _pr_sweep(facts, sweep_for_labels(labels), reuse_check, (skip_tag, refusal),
                      findings)
    if facts.head_message is None and facts.head_sha:
        reasons.append(f"{SKIP_SWEEP_TAG} not checked: head commit not available")
    reasons.append(("sweep: " if sweep.run else "no sweep: ") + sweep.reason)
    if reuse_check == "pr":
        reasons.append("reuse authorization is checked (synchronize, reusable full sweep)")
    return Decision(
        event=facts.event, action=facts.action, noop=False, changelog_gate=True,
        changelog_mode="pr", diff_base=facts.base_sha, diff_head=facts.head_sha,
        pr_number=facts.pr_number, policy_check=True, sweep=sweep,
        reuse_check=reuse_check, skip_sweep_tag=skip_tag,
        concurrency_group=_pr_group(facts), labels=present, policy_labels=policy_labels,
        reasons=tuple(reasons), findings=tuple(findings),
        trusted_sweep=_trusted_sweep(facts, honoured), skip_sweep=honoured,
    )


def _trusted_sweep(facts: Facts, skip: bool) -> bool:
    """A fork PR whose labels ask for a sweep: the trusted path (sweep.yml) may run it."""
    return (facts.fork and len(_ordered(facts.labels, PRIMARY)) == 1
            and (facts.action or "") in SWEEP_ACTIONS and not facts.draft
            and not skip and facts.changelog_changed is not False)


def _pr_noop(facts: Facts) -> str | None:
    """Why a pull_request event runs nothing at all (None: it runs the checks)."""
    action = facts.action or ""
    if action not in PR_ACTIONS:
        return f"pull_request action {action or 'unknown'!r} needs no checks"
    if action in ("labeled", "unlabeled") and facts.changed_label not in RELEVANT:
        return (f"label {facts.changed_label!r} was {action}; it is not a sweep or "
                "policy label, so nothing runs and nothing is cancelled")
    return None


def _pr_reuse_check(facts: Facts) -> str:
    """"pr" when a synchronize of a ready PR with one reusable full-sweep label checks for
    a maintainer's reuse authorization, else "none"."""
    primaries = _ordered(facts.labels, PRIMARY)
    if (facts.action == "synchronize" and not facts.draft and len(primaries) == 1
            and primaries[0] in FULL_SWEEP
            and not any(x in facts.labels for x in REUSE_INCOMPATIBLE)):
        return "pr"
    return "none"


def _pr_sweep(facts: Facts, sweep: Sweep, reuse_check: str, tag: tuple[bool, str | None],
              findings: list[Finding]) -> Sweep:
    """The labeled sweep, switched off (with a finding where useful) by the first event
    fact that forbids it: action, draft, fork, [skip-sweep] on a preparation commit,
    unchanged changelog, reuse.  ``tag``: (the tag is in the head commit message, why
    it does not count or None)."""
    action = facts.action or ""
    if not sweep.run:
        return sweep
    if action not in SWEEP_ACTIONS:
        return _off(sweep, f"action {action!r} does not start a sweep (labels applied at "
                           "creation arrive as labeled events)")
    if facts.draft:
        findings.append(DRAFT_NO_SWEEP.at(
            LABELS_FILE, None, None, f"draft PR labeled {sweep.label}: no sweep yet"))
        return _off(sweep, "draft PR: the sweep waits for ready_for_review")
    refusal = tag[1]
    skip = tag[0] and refusal is None
    if facts.fork:
        trusted = not skip and facts.changelog_changed is not False
        findings.append(FORK_NO_SWEEP.at(
            LABELS_FILE, None, None, f"fork PR labeled {sweep.label}: the sweep runs only "
            "through the trusted path (sweep.yml on the default branch, approved SHA)"))
        return _off(sweep, "fork PR: no sweep from the PR's own workflow run" + (
            "; a maintainer dispatches the trusted sweep (sweep.yml) for the approved head"
            if trusted else ""))
    if tag[0] and _tag_finding(facts, refusal, findings):
        return _off(sweep, f"{SKIP_SWEEP_TAG} on a merge-with-reuse preparation commit")
    if facts.changelog_changed is False:
        return _off(sweep, "perf-changelog.yaml is unchanged: nothing to sweep")
    if reuse_check == "pr":
        return _reuse(facts, sweep, findings)
    return sweep


def _reuse(facts: Facts, sweep: Sweep, findings: list[Finding]) -> Sweep:
    """A PR sweep the reuse authorization in force switches off (CI301), or, when it
    does not count for this head, the finding that says why (CI302, CI303)."""
    head = (facts.head_sha or "")[:12]
    if facts.reuse_authorized:
        findings.append(REUSE_AUTHORIZED.at(
            LABELS_FILE, None, None, "sweep reuse authorized "
            + (facts.reuse_detail or "by a maintainer") + ": no new PR sweep"))
        return _off(sweep, "reuse authorized: " + (facts.reuse_detail or "by a maintainer"))
    if facts.reuse_stale:
        findings.append(REUSE_NOT_FOR_HEAD.at(
            LABELS_FILE, None, None, f"the reuse authorization in force is not for head "
            f"{head}: {facts.reuse_stale}; the PR sweep runs"))
    if facts.reuse_self:
        findings.append(REUSE_SELF.at(
            LABELS_FILE, None, None, f"the reuse authorization in force for head {head} "
            f"does not count: {facts.reuse_self}; the PR sweep runs"))
    return sweep


def _tag_finding(facts: Facts, refusal: str | None, findings: list[Finding]) -> bool:
    """The finding about the ``[skip-sweep]`` in the head commit message: CI107 when it
    skips the sweep (True), CI110 with ``refusal`` when it does not (False)."""
    head = (facts.head_sha or "")[:12]
    if refusal is None:
        findings.append(SKIP_SWEEP_TAG_RULE.at(
            LABELS_FILE, None, None,
            f"head commit {head} says {SKIP_SWEEP_TAG} and checks out as a merge-with-reuse "
            f"preparation commit on top of the previous head {(facts.before_sha or '')[:12]} "
            "(main merged in, the changelog's links canonicalized, nothing else): no PR sweep"))
        return True
    findings.append(SKIP_SWEEP_IGNORED.at(
        LABELS_FILE, None, None,
        f"head commit {head} says {SKIP_SWEEP_TAG}, but {refusal}: the tag does not skip "
        "the PR sweep"))
    return False


def _decide_push(facts: Facts) -> Decision:
    on_default = facts.ref == f"refs/heads/{facts.default_branch}"
    skip_tag = has_skip_tag(facts)
    new_branch = facts.base_sha in (None, "", ZERO_SHA)
    reasons = ["push: changelog gate (" + ("standalone, new branch" if new_branch
                                          else "main mode, before..after")
               + ") and policy check run"]
    if not on_default:
        sweep = Sweep(reason=f"push to {facts.ref or 'an unknown ref'}, not to "
                             f"{facts.default_branch}")
    elif facts.changelog_changed is False:
        sweep = Sweep(reason="perf-changelog.yaml is unchanged: nothing to sweep")
    else:
        sweep = Sweep(run=True, reason=f"push to {facts.default_branch}", mode="full",
                      reusable=False)
    if skip_tag:
        reasons.append(f"{SKIP_SWEEP_TAG} is ignored on push (it only skips PR sweeps)")
    reasons.append(("sweep: " if sweep.run else "no sweep: ") + sweep.reason)
    reuse = "push" if sweep.run else "none"
    if reuse == "push":
        reasons.append("reuse of the merged PR's sweep is checked (push to the default branch)")
    return Decision(
        event="push", action=None, noop=False, changelog_gate=True,
        changelog_mode="standalone" if new_branch else "main",
        diff_base=None if new_branch else facts.base_sha, diff_head=facts.head_sha,
        pr_number=None, policy_check=True, sweep=sweep, reuse_check=reuse,
        skip_sweep_tag=skip_tag,
        concurrency_group=f"ixtool-sweep-{facts.head_sha or facts.ref or 'push'}",
        labels=(), policy_labels=(), reasons=tuple(reasons),
    )


def _decide_merge_group(facts: Facts) -> Decision:
    reason = "merge queue: sweeps run on the push to the default branch, not in the queue"
    return Decision(
        event="merge_group", action=facts.action, noop=False, changelog_gate=True,
        changelog_mode="main", diff_base=facts.base_sha, diff_head=facts.head_sha,
        pr_number=facts.pr_number, policy_check=True, sweep=Sweep(reason=reason),
        reuse_check="none",
        skip_sweep_tag=has_skip_tag(facts),
        concurrency_group=f"ixtool-sweep-{facts.head_sha or facts.ref or 'merge-group'}",
        labels=(), policy_labels=(),
        reasons=("merge_group: changelog gate (main mode, merge group base..head) and "
                 "policy check run", "no sweep: " + reason),
    )
