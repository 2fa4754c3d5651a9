"""Sweep-reuse authorization comments (spec §8.1), pure.

A maintainer authorizes reusing a finished PR sweep with a comment line
``/reuse-sweep-run`` (unpinned) or ``/reuse-sweep-run <run-id>`` (pinned).
Rules: only comments whose ``author_association`` is allowed count; the newest
matching comment (by ``created_at``) decides; within it the last matching line
decides.  Unlike the reference (gap G14) the run id must be on the same line:
``/reuse-sweep-run`` followed by a line ``123`` is an unpinned authorization.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from inferencex_tools.errors import InputError

DEFAULT_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
# One line: the command and an optional run id (ixtool's reading, G14).
COMMAND_RX = re.compile(r"^[ \t]*/reuse-sweep-run(?:[ \t]+(\d+))?[ \t]*\r?$", re.M)


@dataclass(frozen=True)
class Authorization:
    run_id: int | None  # None: unpinned (newest successful run)
    author: str
    created_at: str
    comment_id: int | None

    def describe(self) -> str:
        pin = f"run {self.run_id}" if self.run_id is not None else "newest successful run"
        return f"by @{self.author} at {self.created_at} ({pin})"


def find_authorization(
    comments: Any, *, associations: frozenset[str] = DEFAULT_ASSOCIATIONS
) -> Authorization | None:
    """The authorization in a list of GitHub issue comments (API shape), if any."""
    if not isinstance(comments, list):
        raise InputError("comments file: expected a JSON list of issue comments")
    candidates: list[tuple[str, int, Authorization]] = []
    for i, c in enumerate(comments):
        if not isinstance(c, dict):
            raise InputError(f"comments file: item {i} is not an object")
        assoc = c.get("author_association")
        if not isinstance(assoc, str) or assoc not in associations:
            continue
        body, created = c.get("body"), c.get("created_at")
        if not isinstance(body, str) or not isinstance(created, str):
            continue
        matches = list(COMMAND_RX.finditer(body))
        if not matches:
            continue
        last = matches[-1]
        if last.group(1) and len(last.group(1)) > 19:  # not a run id (int() would refuse it)
            continue
        user = c.get("user")
        login = user.get("login") if isinstance(user, dict) else None
        cid = c.get("id")
        candidates.append((created, i, Authorization(
            run_id=int(last.group(1)) if last.group(1) else None,
            author=login if isinstance(login, str) else "unknown",
            created_at=created,
            comment_id=cid if isinstance(cid, int) else None,
        )))
    if not candidates:
        return None
    # newest created_at wins; on equal timestamps the later comment in the list
    candidates.sort(key=lambda t: (t[0], t[1]))
    return candidates[-1][2]
