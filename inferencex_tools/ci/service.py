"""I/O orchestration of ``ixtool ci plan`` and ``ixtool labels explain``.

Reads the event payload (and optionally the PR's issue comments), completes the
facts from the local clone (head commit message, whether perf-changelog.yaml
changed in the event's range), calls the pure policy and returns the decision
as a :class:`Result`.  The environment (``$GITHUB_EVENT_PATH`` …) arrives as an
:class:`~inferencex_tools.io.actions.ActionsEnv` read by the CLI; writing
``$GITHUB_OUTPUT``/``$GITHUB_STEP_SUMMARY`` is the CLI's, through the same adapter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferencex_tools.ci.authorization import (
    Authorization,
    PushedBy,
    find_authorization,
    find_commits,
    for_head,
    self_authorization,
)
from inferencex_tools.ci.event import facts_from_payload, with_local_facts
from inferencex_tools.ci.labels import (
    EVENTS,
    LABELS_FILE,
    PR_ACTIONS,
    RELEVANT,
    ZERO_SHA,
    Decision,
    Facts,
    decide,
    has_skip_tag,
    near_miss,
)
from inferencex_tools.ci.rules import HEAD_UNAVAILABLE
from inferencex_tools.errors import GitError, UsageError, did_you_mean
from inferencex_tools.io.actions import MAX_EVENT_BYTES, ActionsEnv
from inferencex_tools.io.files import read_json
from inferencex_tools.report.findings import Finding, Result


@dataclass
class PlanRequest:
    event_path: Path | None = None
    event_name: str | None = None
    repo: Path = Path(".")
    changelog: str = "perf-changelog.yaml"
    comments: Path | None = None
    use_git: bool = True
    actions: ActionsEnv = field(default_factory=ActionsEnv)  # defaults for event/name


def _read_json(path: Path, what: str) -> Any:
    return read_json(path, what, max_bytes=MAX_EVENT_BYTES)


def _local(facts: Facts, req: PlanRequest) -> tuple[Facts, list[Finding]]:
    """Head message and changelog change from the clone; a warning when unavailable."""
    if not req.use_git or facts.head_sha is None:
        return facts, []
    from inferencex_tools.io.git import GitRepo

    try:
        repo = GitRepo.open(req.repo)
        head = repo.resolve(facts.head_sha)
        message: str | None = repo.message(head)
        if facts.event == "pull_request" and facts.base_sha:
            base: str | None = repo.merge_base(facts.base_sha, head)
        else:
            base = facts.base_sha if facts.base_sha not in (None, "", ZERO_SHA) else None
        changed = None if base is None else (
            repo.show(base, req.changelog) != repo.show(head, req.changelog))
    except GitError as exc:
        return facts, [HEAD_UNAVAILABLE.at(
            LABELS_FILE, None, None, f"cannot inspect the event's commits locally: {exc}")]
    return with_local_facts(facts, head_message=message, changelog_changed=changed), []


def checked_facts(facts: Facts, comments: Path | None, root: Path | None
                  ) -> tuple[Facts, Authorization | None]:
    """``facts`` completed with what no PR-controlled text can claim, read the same way by
    ``ci plan`` and ``ci gate``: whether the head is a merge-with-reuse preparation
    commit (``ci/prepared.py``, recomputed in the clone at ``root`` from the head's
    parents, on top of the head the push replaced; None: no clone, not one) — what a
    ``[skip-sweep]`` in its message needs to count (``labels.skip_tag_refusal``) — and
    the reuse authorization in force (``ci.authorization``, the rule merge-with-reuse
    uses too; each comment carries its author's API permission) with whether it is for
    this head: the preparation commit it records or a comment newer than the push."""
    memo: dict[str, list[str]] = {}

    def problems(sha: str) -> list[str]:
        if sha not in memo:
            memo[sha] = _preparation(facts, root, sha)
        return memo[sha]

    if (facts.event == "pull_request" and facts.action == "synchronize" and facts.head_sha
            and has_skip_tag(facts)):
        why = problems(facts.head_sha)
        facts = replace(facts, head_prepared=not why, head_not_prepared="; ".join(why))
    if comments is None:
        return facts, None
    evidence = _read_json(comments, "comments file")
    auth = find_authorization(evidence)
    if auth is None:
        return facts, None
    head = facts.head_sha or ""
    stale = for_head(auth, head, facts.pushed_at, problems)
    if stale is not None:
        return replace(facts, reuse_stale=f"{auth.describe()}: {stale}"), auth
    commits = find_commits(evidence)
    pushed = None if commits is None else PushedBy(facts.sender, commits, facts.commit_count)
    mine = None if auth.prepared == head else self_authorization(
        auth, pushed, pr_author=facts.pr_author)  # a checked preparation: nothing new
    if mine is not None:
        return replace(facts, reuse_self=f"{auth.describe()}: {mine}"), auth
    return replace(facts, reuse_authorized=True, reuse_detail=auth.describe()), auth


def _preparation(facts: Facts, root: Path | None, sha: str) -> list[str]:
    """Why ``sha`` is not a merge-with-reuse preparation commit of the event's PR."""
    from inferencex_tools.ci.prepared import preparation_problems
    from inferencex_tools.io.gitcat import GitReader

    if (root is None or facts.base_sha is None or facts.pr_number is None or not facts.repo
            or facts.before_sha is None):
        return ["it cannot be checked here: no clone, base, previous head (the "
                "synchronize payload's before), PR number or repository"]
    try:
        reader = GitReader(root)
    except GitError as exc:
        return [f"it cannot be checked: {exc.message}"]
    try:
        return preparation_problems(reader, sha, facts.base_sha, pr=facts.pr_number,
                                    repo=facts.repo, previous=facts.before_sha)
    finally:
        reader.close()


def plan(req: PlanRequest) -> tuple[Decision, Result]:
    """Decide what runs for the event in ``req``."""
    event_path = req.event_path or req.actions.event_path
    if event_path is None:
        raise UsageError("no event payload", hint="pass --event PATH or set $GITHUB_EVENT_PATH")
    name = req.event_name or req.actions.event_name
    if not name:
        raise UsageError("unknown event name",
                         hint="pass --event-name (pull_request, push, merge_group) or set "
                         "$GITHUB_EVENT_NAME")
    facts = facts_from_payload(name, _read_json(event_path, "event payload"))
    facts, extra = _local(facts, req)
    facts, auth = checked_facts(facts, req.comments, req.repo if req.use_git else None)
    decision = decide(facts)
    if decision.noop:
        extra = []
    decision = replace(decision, findings=(*decision.findings, *extra))
    result = _result("ci plan", decision, str(event_path))
    if req.comments is not None:
        result.info["reuse_authorization"] = None if auth is None else {
            "run_id": auth.run_id, "comment_id": auth.comment_id, "author": auth.author,
            "permission": auth.permission, "for_head": facts.reuse_authorized}
    return decision, result


def explain(labels: list[str], *, event: str = "pull_request", action: str = "synchronize",
            draft: bool = False, fork: bool = False, skip_sweep: bool = False,
            prepared: bool = False) -> tuple[Decision, Result]:
    """The decision for a label set under hypothetical event facts (``labels explain``).
    ``prepared``: the head checks out as a merge-with-reuse preparation commit on the
    previous head (what ``ci plan`` verifies in the clone; only then does
    ``skip_sweep``, the tag in its message, skip the PR sweep)."""
    if event not in EVENTS:
        raise UsageError(f"unknown event {event!r}", hint="use one of " + ", ".join(EVENTS))
    if event == "pull_request" and action not in PR_ACTIONS:
        raise UsageError(f"unknown pull_request action {action!r}",
                         hint="use one of " + ", ".join(PR_ACTIONS))
    unknown = [x for x in labels if x not in RELEVANT and near_miss(x) is None]
    if unknown:
        raise UsageError(
            f"{unknown[0]!r} is not a sweep or policy label",
            hint=did_you_mean(unknown[0], RELEVANT, what="label",
                              listing="ixtool labels explain without labels lists them"))
    changed = None
    if action in ("labeled", "unlabeled"):
        changed = next((x for x in labels if x in RELEVANT), labels[0] if labels else "")
    facts = Facts(
        event=event, action=action if event == "pull_request" else None,
        labels=frozenset(labels), changed_label=changed, draft=draft, fork=fork,
        head_message="[skip-sweep]" if skip_sweep else "", pr_number=1,
        ref="refs/heads/main", base_sha="1" * 40, head_sha="2" * 40, before_sha="3" * 40,
        head_prepared=prepared,
        head_not_prepared="" if prepared else "explained without --prepared",
    )
    decision = decide(facts)
    return decision, _result("labels explain", decision, "labels")


def _result(command: str, decision: Decision, checked: str) -> Result:
    result = Result(command=command, checked=[checked])
    result.extend(decision.findings)
    result.info["decision"] = decision.to_dict()
    return result


def run_shards(matrix_path: Path, max_shards: int, *, canary: bool = False
               ) -> tuple[list[tuple[str, str]], Result]:
    """``ci shards``: the outputs and a Result (findings when rows do not fit)."""
    from inferencex_tools.ci.shards import make_shards

    sh = make_shards(_read_json(matrix_path, "sweep matrix"), max_shards=max_shards,
                     canary=canary)
    pairs = [("shard-count", str(sum(1 for s in sh.shards if s))), ("jobs", str(sh.total)),
             ("canary", json.dumps(sh.canary, separators=(",", ":")))]
    pairs += [(f"shard-{i}", json.dumps(s, separators=(",", ":")))
              for i, s in enumerate(sh.shards, 1)]
    result = Result(command="ci shards", checked=[str(matrix_path)])
    result.extend(sh.findings)
    result.info["jobs"] = sh.total
    return pairs, result


def run_row(matrix_path: Path, row_id: str, *, node: str | None, workspace: str) -> str:
    """``ci row``: the row as JSON, or its launcher environment as shell exports."""
    import shlex

    from inferencex_tools.ci.shards import row_by_id

    row = row_by_id(_read_json(matrix_path, "sweep matrix"), row_id)
    if node is None:
        return json.dumps(row, sort_keys=True) + "\n"
    if not node or not all(c.isalnum() or c in "-_.:" for c in node):
        raise UsageError(f"--node {node!r} is not a runner name",
                         hint="give the concrete runner name, as in $RUNNER_NAME "
                         "(e.g. h200-dgxc-slurm_7)")
    from inferencex_tools.launch.env import row_env

    env = row_env(row, node=node, workspace=workspace,
                  eval_only=bool(row.get("eval-only")))
    env["LAUNCHER"] = f"runners/launch_{node.split('_', 1)[0]}.sh"
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
