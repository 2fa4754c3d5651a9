"""Sweep-reuse authorization (spec §8.1, gaps G8/G14 fixed): ONE rule for
``ixtool ci plan`` and ``ixtool merge-with-reuse``.

A comment authorizes reuse when some line of it is the command
``/reuse-sweep-run`` (unpinned: the newest eligible run) or
``/reuse-sweep-run <run-id>`` (pinned), alone on that line **as rendered text** —
not in a fenced or indented code block, a code span, a block quote, an HTML
comment or other raw HTML (:mod:`inferencex_tools.ci.rendered`) — and its author has
**write or admin permission** on the repository, as the collaborator-permission
API reports it (``GET /repos/{repo}/collaborators/{login}/permission``; the
``maintain`` role reports ``write``).  The ``author_association`` label is NOT
used: it says nothing about rights (any outside collaborator, even read-only,
is a ``COLLABORATOR``).

Choice: among authorizing comments the newest by ``created_at`` decides; equal
timestamps are broken by the comment id (GitHub's ids grow with time, so the
larger id is the later comment).  Within the deciding comment the last command
line decides.  A run id is canonical and bounded: ``[1-9][0-9]*`` and at most
``2**63 - 1``; a line with any other number (``0``, ``007``, 20 digits) is not a
command line.  Unlike the reference (G14) the run id must be on the same line:
``/reuse-sweep-run`` followed by a line ``123`` is an unpinned command.

**For which head.**  An authorization is not a switch for every later push: it
skips the PR sweep only for the head it was given for (:func:`for_head`) — the
preparation commit its comment records (``<!-- ixtool merge-with-reuse: prepared
<sha> -->``: that commit only, and only when it checks out structurally as a
preparation commit, a comment being a claim, never a proof), or, for a comment that
records nothing, a head pushed before the comment was posted.

**Not by whoever pushed or wrote what it covers.**  A command that records no
preparation commit skips a sweep only when its author neither is the PR's author nor
pushed the head (the event's ``sender``) nor authored or committed a commit of the PR,
as GitHub reports them (``author.login`` / ``committer.login`` of ``GET
/repos/{repo}/pulls/{n}/commits``) — :func:`self_authorization`.  A commit whose author
or committer e-mail GitHub matches to no account, or a PR with more commits than the
list holds (GitHub lists at most 250), leaves the question open: the sweep runs.  "Not
the PR's author" is not "not the pusher": a write user who pushes to a colleague's PR
cannot then switch its sweep off.  (A recorded preparation commit that checks out
brings nothing new: its push and comment are merge-with-reuse's by design.)

Both commands feed this module the same records (:class:`Comment` from
``io.github``) and a permission lookup: ``merge-with-reuse`` asks the API,
``ci plan`` reads the permission that the workflow's trusted ``reuse-comments``
job looked up and stored in each comment as ``author_permission``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from inferencex_tools.ci.ids import is_run_id, run_id
from inferencex_tools.ci.rendered import text_lines
from inferencex_tools.errors import InputError

if TYPE_CHECKING:
    from inferencex_tools.io.github import Comment

COMMAND = "/reuse-sweep-run"
AUTHORIZING = frozenset({"admin", "write"})  # collaborator permission (maintain → write)
# One rendered line: the command and an optional canonical run id (ixtool's reading,
# G14); at most 3 spaces before it (4 make an indented code block).
COMMAND_RX = re.compile(r" {0,3}/reuse-sweep-run(?:[ \t]+([0-9]+))?[ \t]*")
# ixtool's record, in its own comment, of the preparation commit it is about to push
PREPARED_RX = re.compile(r"^<!-- ixtool merge-with-reuse: prepared ([0-9a-f]{40}) -->\r?$",
                         re.M)


@dataclass(frozen=True)
class Command:
    """A ``/reuse-sweep-run`` comment, before its author's permission is known."""

    comment: Comment
    run_id: int | None  # None: unpinned
    when: datetime


@dataclass(frozen=True)
class Authorization:
    """The authorization in force."""

    comment: Comment
    run_id: int | None  # None: unpinned (the newest eligible run)
    permission: str  # the author's permission that made it count

    @property
    def prepared(self) -> str | None:
        """The preparation commit the comment records (a claim: check it)."""
        return prepared_in(self.comment.body)

    @property
    def author(self) -> str:
        return self.comment.author

    @property
    def comment_id(self) -> int:
        return self.comment.id

    def describe(self) -> str:
        pin = f"run {self.run_id}" if self.run_id is not None else "newest successful run"
        return (f"by @{self.comment.author} ({self.permission}) at {self.comment.created_at}, "
                f"comment {self.comment.id} ({pin})")


def command_in(body: str) -> tuple[bool, int | None]:
    """(matched, run id) of the LAST command line of ``body`` that renders as text."""
    last: tuple[bool, int | None] = (False, None)
    if COMMAND not in body:
        return last
    for line in text_lines(body):
        m = COMMAND_RX.fullmatch(line)
        if m is None:
            continue
        digits = m.group(1)
        if digits is None:
            last = (True, None)
        elif (rid := run_id(digits)) is not None:
            last = (True, rid)
    return last


def prepared_in(body: str) -> str | None:
    """The preparation commit recorded in a comment body (ixtool's line), if any."""
    matches = list(PREPARED_RX.finditer(body))
    return matches[-1].group(1) if matches else None


def parse_time(value: str) -> datetime | None:
    """An ISO 8601 timestamp as an aware UTC datetime (naive ones are UTC)."""
    if not value or len(value) > 64:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def commands(comments: Iterable[Comment]) -> list[Command]:
    """The command comments, newest first: by ``created_at``, then by comment id."""
    out: list[Command] = []
    for c in comments:
        matched, rid = command_in(c.body)
        when = parse_time(c.created_at)
        if matched and when is not None:
            out.append(Command(c, rid, when))
    out.sort(key=lambda k: (k.when, k.comment.id), reverse=True)
    return out


def authorization(comments: Iterable[Comment],
                  permission_of: Callable[[Comment], str | None]) -> Authorization | None:
    """The authorization in force, or None.

    ``permission_of`` is asked only for command comments, newest first, until one
    author has write or admin permission (so the API is asked as little as possible)."""
    for cmd in commands(comments):
        perm = permission_of(cmd.comment)
        if perm in AUTHORIZING:
            return Authorization(cmd.comment, cmd.run_id, perm)
    return None


def for_head(auth: Authorization, head: str, pushed_at: str | None,
             is_prepared: Callable[[str], list[str]]) -> str | None:
    """Why ``auth`` is NOT an authorization for ``head`` (None: it is; whether its author
    may give it is :func:`self_authorization`'s question).

    A comment that records a preparation commit was given for that commit only: it
    covers ``head`` when it records ``head`` and ``is_prepared(head)`` finds nothing
    wrong with it structurally (an empty list of problems).  Any other command covers
    the heads pushed before it was posted (``pushed_at``: when GitHub recorded the
    push of ``head``; unknown → it covers nothing), and only when it was not edited (its
    ``updated_at`` after its ``created_at``, or unknown: any user with write access can
    edit anyone's comment, and the API does not say who did).
    """
    recorded = auth.prepared
    if recorded is not None:
        if recorded != head:
            return (f"it records the preparation of {recorded[:12]}, not of the head "
                    f"{head[:12]}")
        problems = is_prepared(head)
        if problems:
            return (f"it records {head[:12]} as ixtool's preparation commit, but "
                    + "; ".join(problems))
        return None
    when = parse_time(auth.comment.created_at)
    pushed = parse_time(pushed_at or "")
    if pushed is None:
        return (f"the time of the push of {head[:12]} is unknown, and the comment records "
                "no preparation commit")
    if when is None or when <= pushed:
        return (f"it was posted at {auth.comment.created_at}, before the push of "
                f"{head[:12]} ({pushed_at})")
    return _unedited(auth.comment)


def _unedited(comment: Comment) -> str | None:
    """Why a command comment's text may not be its author's (None: it is)."""
    edited = parse_time(comment.updated_at)
    created = parse_time(comment.created_at)
    if edited is None or created is None or edited > created:
        when = f"at {comment.updated_at}" if comment.updated_at else "(time unknown)"
        return (f"it was edited {when} after it was posted: anyone with write access can "
                "edit a comment and the API does not say who did; post a new one")
    return None


# ------------------------------------------------------------------ who pushed what it covers

LISTED_COMMITS_MAX = 250  # GET /pulls/{n}/commits lists at most this many commits


@dataclass(frozen=True)
class CommitLogins:
    """A PR commit's GitHub accounts (None: its e-mail matches no account)."""

    sha: str
    author: str | None
    committer: str | None


@dataclass(frozen=True)
class PushedBy:
    """Who pushed the head and wrote the PR's commits, as GitHub reports them."""

    sender: str | None  # the synchronize event's sender: who pushed the head
    commits: tuple[CommitLogins, ...]  # GET /pulls/{n}/commits, oldest first
    count: int | None = None  # the PR's number of commits (pull_request.commits)

    @property
    def complete(self) -> bool:
        """Whether ``commits`` holds every commit of the PR."""
        if self.count is not None:
            return len(self.commits) >= self.count
        return len(self.commits) < LISTED_COMMITS_MAX


def self_authorization(auth: Authorization, pushed: PushedBy | None, *,
                       pr_author: str | None) -> str | None:
    """Why the author of ``auth`` — a command that records no preparation commit — may
    have pushed or written what it would cover: the push of the head and the PR's
    commits (None: they did not, as far as GitHub says).  A recorded preparation commit
    that checks out structurally brings nothing new: its push and its comment are
    merge-with-reuse's by design, and this question is not asked."""
    who = auth.comment.author.lower()
    me = f"@{auth.comment.author}"
    if pr_author is None:
        return "the PR's author is unknown"
    if who == pr_author.lower():
        return (f"{me} is the PR's author: a PR's author does not authorize skipping the "
                "sweep of their own push")
    if pushed is None:
        return ("who pushed the head and wrote the PR's commits is unknown (the comments "
                "file carries no commits of the PR)")
    if pushed.sender is None:
        return "who pushed the head is unknown (the event has no sender)"
    if pushed.sender.lower() == who:
        return (f"{me} pushed the head: whoever pushes a commit does not authorize "
                "skipping its sweep")
    for c in pushed.commits:
        for role, login in (("authored", c.author), ("committed", c.committer)):
            if login is None:
                return (f"GitHub matches the {role[:-2]}or of commit {c.sha[:12]} to no "
                        f"account, so it cannot say that {me} did not write it")
            if login.lower() == who:
                return (f"{me} {role} commit {c.sha[:12]} of this PR: whoever wrote a "
                        "commit does not authorize skipping its sweep")
    if not pushed.complete:
        return (f"the PR has more commits than GitHub lists ({len(pushed.commits)}): who "
                "wrote the others is unknown")
    return None


def _login(value: Any) -> str | None:
    login = value.get("login") if isinstance(value, dict) else None
    return login if isinstance(login, str) and login else None


def commits_from_json(data: Any) -> tuple[CommitLogins, ...]:
    """The commits of ``GET /repos/{repo}/pulls/{n}/commits`` (GitHub API shape: each with
    ``sha`` and the ``author`` / ``committer`` accounts, null when none matches)."""
    if not isinstance(data, list):
        raise InputError("comments file: 'commits' is not a JSON list of commits",
                         hint="pass the list GET /repos/OWNER/NAME/pulls/N/commits returns")
    out = []
    for i, c in enumerate(data):
        sha = c.get("sha") if isinstance(c, dict) else None
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}(?:[0-9a-f]{24})?", sha):
            raise InputError(f"comments file: commit {i} has no commit SHA",
                             hint="pass the list GET /repos/OWNER/NAME/pulls/N/commits "
                             "returns")
        out.append(CommitLogins(sha, _login(c.get("author")), _login(c.get("committer"))))
    return tuple(out)


# ----------------------------------------------------------------------------- ci plan's file

def comments_from_json(data: Any) -> list[tuple[Comment, str | None]]:
    """Comments of a ``--comments`` file (GitHub API shape, each with the
    ``author_permission`` the workflow looked up) and their authors' permission.
    Items without a usable id, body, time or login are skipped (they cannot count)."""
    from inferencex_tools.io.github import Comment

    if not isinstance(data, list):
        raise InputError("comments file: expected a JSON list of issue comments (or an "
                         "object with 'comments' and 'commits')",
                         hint="pass the list the workflow's reuse-comments job wrote")
    out: list[tuple[Comment, str | None]] = []
    for i, c in enumerate(data):
        if not isinstance(c, dict):
            raise InputError(f"comments file: item {i} is not an object",
                             hint="pass the list the workflow's reuse-comments job wrote")
        cid, body, created = c.get("id"), c.get("body"), c.get("created_at")
        user = c.get("user")
        login = user.get("login") if isinstance(user, dict) else None
        if (not is_run_id(cid)
                or not isinstance(body, str) or not isinstance(created, str)
                or not isinstance(login, str)):
            continue
        assoc = c.get("author_association")
        perm = c.get("author_permission")
        url = c.get("html_url")
        edited = c.get("updated_at")
        out.append((Comment(id=cid, body=body, author=login,
                            association=assoc if isinstance(assoc, str) else "NONE",
                            created_at=created, html_url=url if isinstance(url, str) else "",
                            updated_at=edited if isinstance(edited, str) else ""),
                    perm if isinstance(perm, str) else None))
    return out


def _parts(data: Any) -> tuple[Any, Any]:
    """(comments, commits or None) of a ``--comments`` file: the list of comments, or an
    object ``{"comments": [...], "commits": [...]}``."""
    if isinstance(data, dict) and "comments" in data:
        return data["comments"], data.get("commits")
    return data, None


def find_authorization(data: Any) -> Authorization | None:
    """``ci plan``: the authorization in force in a ``--comments`` file."""
    items = comments_from_json(_parts(data)[0])
    perms = {id(c): p for c, p in items}
    return authorization([c for c, _ in items], lambda c: perms.get(id(c)))


def find_commits(data: Any) -> tuple[CommitLogins, ...] | None:
    """The PR's commits a ``--comments`` file carries (the commits as ``GET
    /repos/{repo}/pulls/{n}/commits`` returns them), None when it carries none."""
    commits = _parts(data)[1]
    return None if commits is None else commits_from_json(commits)
