"""GitHub event payloads → :class:`~inferencex_tools.ci.labels.Facts` (pure).

Only the fields the label policy needs are read; everything is checked for
type and shape (SHAs must be hex, numbers integers) so that nothing untrusted
leaves this module unvalidated.  Malformed payloads raise
:class:`~inferencex_tools.errors.InputError`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from inferencex_tools.ci.ids import MAX_PR_NUMBER, is_pr_number, pr_number
from inferencex_tools.ci.labels import EVENTS, Facts
from inferencex_tools.errors import InputError, UsageError

_EVENT_HINT = "pass the webhook payload GitHub wrote ($GITHUB_EVENT_PATH), or --event FILE"

_SHA_RX = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_QUEUE_PR_RX = re.compile(r"/pr-([0-9]{1,20})-[0-9a-f]+$")


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _sha(value: Any, what: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not _SHA_RX.fullmatch(value):
        raise InputError(f"event payload: {what} is not a commit SHA: {value!r}"[:200],
                         hint="pass the event file GitHub wrote ($GITHUB_EVENT_PATH)")
    return value


def _maybe_sha(value: Any) -> str | None:
    return value if isinstance(value, str) and _SHA_RX.fullmatch(value) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31
    return value if ok else None


def facts_from_payload(event_name: str, payload: Any) -> Facts:
    """Read the facts of a ``pull_request``, ``push`` or ``merge_group`` payload."""
    if event_name not in EVENTS:
        raise UsageError(
            f"unsupported event {event_name!r}",
            hint="ixtool ci plan handles " + ", ".join(EVENTS)
            + " (set --event-name or $GITHUB_EVENT_NAME)",
        )
    if not isinstance(payload, dict):
        raise InputError("event payload is not a JSON object",
                         hint=_EVENT_HINT)
    default_branch = _str(_get(payload, "repository", "default_branch")) or "main"
    if event_name == "pull_request":
        return _pull_request(payload, default_branch)
    if event_name == "push":
        return Facts(
            event="push",
            ref=_str(payload.get("ref")),
            default_branch=default_branch,
            base_sha=_sha(payload.get("before"), "before", required=False),
            head_sha=_sha(payload.get("after"), "after"),
            head_message=_str(_get(payload, "head_commit", "message")),
        )
    mg = payload.get("merge_group")
    if not isinstance(mg, dict):
        raise InputError("merge_group event payload has no 'merge_group' object",
                         hint=_EVENT_HINT)
    head_ref = _str(mg.get("head_ref")) or ""
    m = _QUEUE_PR_RX.search(head_ref)
    return Facts(
        event="merge_group",
        action=_str(payload.get("action")),
        ref=head_ref or None,
        default_branch=default_branch,
        base_sha=_sha(mg.get("base_sha"), "merge_group.base_sha"),
        head_sha=_sha(mg.get("head_sha"), "merge_group.head_sha"),
        head_message=_str(_get(mg, "head_commit", "message")),
        pr_number=pr_number(m.group(1)) if m else None,  # canonical or none
    )


def _pull_request(payload: dict[str, Any], default_branch: str) -> Facts:
    pr = payload.get("pull_request")
    if not isinstance(pr, dict):
        raise InputError("pull_request event payload has no 'pull_request' object",
                         hint=_EVENT_HINT)
    number = pr.get("number", payload.get("number"))
    if not is_pr_number(number):
        raise InputError(f"event payload: pull_request.number is not a PR number: {number!r}"
                         [:200], hint=f"a PR number is an integer from 1 to {MAX_PR_NUMBER}")
    raw_labels = pr.get("labels") or []
    if not isinstance(raw_labels, list):
        raise InputError("event payload: pull_request.labels is not a list",
                         hint=_EVENT_HINT)
    labels = frozenset(
        lab["name"] for lab in raw_labels
        if isinstance(lab, dict) and isinstance(lab.get("name"), str)
    )
    head_repo = _str(_get(pr, "head", "repo", "full_name"))
    base_repo = _str(_get(pr, "base", "repo", "full_name")) or _str(
        _get(payload, "repository", "full_name"))
    # A deleted fork has head.repo = null: treat it as a fork (untrusted).
    fork = head_repo is None or base_repo is None or head_repo.lower() != base_repo.lower()
    return Facts(
        event="pull_request",
        action=_str(payload.get("action")),
        labels=labels,
        changed_label=_str(_get(payload, "label", "name")),
        draft=pr.get("draft") is True,
        fork=fork,
        pr_number=number,
        ref=_str(_get(pr, "head", "ref")),
        default_branch=default_branch,
        base_sha=_sha(_get(pr, "base", "sha"), "pull_request.base.sha"),
        head_sha=_sha(_get(pr, "head", "sha"), "pull_request.head.sha"),
        # GitHub stamps the PR when the push lands: a synchronize payload's updated_at
        # is the push of its head (a reuse comment newer than that authorizes it)
        pushed_at=_str(pr.get("updated_at")) if payload.get("action") == "synchronize"
        else None,
        # (only to tie a recorded preparation commit to the head it replaced: a value
        # that is not a SHA makes that record count for nothing, it is no input error)
        before_sha=_maybe_sha(payload.get("before"))
        if payload.get("action") == "synchronize" else None,
        repo=base_repo,
        pr_author=_str(_get(pr, "user", "login")),
        sender=_str(_get(payload, "sender", "login")),
        commit_count=_count(pr.get("commits")),
    )


def with_local_facts(facts: Facts, *, head_message: str | None,
                     changelog_changed: bool | None) -> Facts:
    """``facts`` completed with what only the local clone knows."""
    msg = facts.head_message if facts.head_message is not None else head_message
    return replace(facts, head_message=msg, changelog_changed=changelog_changed)
