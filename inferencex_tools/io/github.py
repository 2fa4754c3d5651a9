"""The GitHub forge adapter (PyGithub), exposing only what ixtool needs.

* Authentication: a token from ``GITHUB_TOKEN`` / ``GH_TOKEN`` (or passed in);
  the API root from ``--api-url`` / ``GITHUB_API_URL`` (GitHub Enterprise:
  ``https://HOST/api/v3``).
* Every call goes through :meth:`Forge._call`: rate-limit answers (403/429 with
  ``x-ratelimit-remaining: 0`` or ``retry-after``), 5xx answers and connection
  errors are retried with bounded exponential backoff, then reported as a
  :class:`~inferencex_tools.errors.ForgeError` naming the call.  Delays go
  through an injectable ``sleep`` so tests do not wait.
* Pagination is PyGithub's (``Link`` headers); lists are materialised inside
  the retried call, so a failure on page 3 restarts the listing cleanly.
* The token is never printed: it is not part of any message, ``repr`` or log
  line (``--debug`` logs pass through :class:`RedactingFilter`).

PyGithub is imported lazily so ``ixtool --help`` stays fast.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from inferencex_tools.errors import ForgeError, UsageError

T = TypeVar("T")

DEFAULT_API_URL = "https://api.github.com"
# A GitHub login (39 characters at most), or an app's bot account ``name[bot]``.
LOGIN_RX = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
SWEEP_WORKFLOW = "run-sweep.yml"
log = logging.getLogger("ixtool.forge")


# ----------------------------------------------------------------------------- records

@dataclass(frozen=True)
class PullInfo:
    number: int
    state: str  # "open" | "closed"
    merged: bool
    title: str
    head_ref: str
    head_sha: str
    head_repo: str | None  # full name; None when the fork was deleted
    base_ref: str
    base_repo: str
    labels: tuple[str, ...]
    draft: bool = False
    merge_commit_sha: str | None = None
    html_url: str = ""
    body: str = ""

    @property
    def is_fork(self) -> bool:
        return self.head_repo is None or self.head_repo.lower() != self.base_repo.lower()


@dataclass(frozen=True)
class PullCommit:
    sha: str
    message: str


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    author: str
    association: str
    created_at: str  # ISO 8601 as sent by GitHub (string order = time order)
    html_url: str = ""
    # when its text last changed ("" unknown): any write user can edit anyone's comment
    updated_at: str = ""


@dataclass(frozen=True)
class ReviewRecord:
    id: int
    body: str
    author: str
    commit_id: str
    state: str


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    head_sha: str
    head_branch: str
    event: str
    status: str
    conclusion: str | None
    path: str
    created_at: str
    run_attempt: int = 1
    html_url: str = ""
    head_repo: str | None = None  # full name of the repository the run's head came from
    pr_numbers: tuple[int, ...] = ()  # the pull requests the run lists


@dataclass(frozen=True)
class Artifact:
    name: str
    expired: bool


@dataclass(frozen=True)
class ArtifactInfo:
    """One artifact of a workflow run, as ``GET …/actions/runs/{id}/artifacts`` lists it."""

    id: int
    name: str
    size: int
    expired: bool


@dataclass(frozen=True)
class CheckRun:
    id: int
    name: str
    status: str  # queued | in_progress | completed | waiting | requested | pending
    conclusion: str | None
    started_at: str


@dataclass(frozen=True)
class LabelEvent:
    event: str  # "labeled" | "unlabeled"
    label: str
    created_at: str


@dataclass
class RetryPolicy:
    """Bounded backoff: ``attempts`` tries, delays ``base * 2**k`` capped at ``cap``."""

    attempts: int = 5
    base: float = 1.0
    cap: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep)


# ----------------------------------------------------------------------------- token

def token_from_env(env: Mapping[str, str] | None = None) -> str:
    env = dict(os.environ) if env is None else env
    tok = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
    if not tok:
        raise UsageError("no GitHub token: set GITHUB_TOKEN or GH_TOKEN",
                         hint="e.g. export GH_TOKEN=$(gh auth token)")
    return tok


def api_url_from_env(explicit: str | None, env: Mapping[str, str] | None = None) -> str:
    """The API root: ``explicit``, else ``$GITHUB_API_URL``, else api.github.com.

    The token travels in every request's ``Authorization`` header, so the URL must be
    ``https://`` — plain ``http://`` only to a loopback address (a local test server
    or an SSH tunnel), where nothing crosses the network."""
    env = dict(os.environ) if env is None else env
    url = explicit or env.get("GITHUB_API_URL") or DEFAULT_API_URL
    check_api_url(url)
    return url.rstrip("/")


def check_api_url(url: str) -> None:
    import ipaddress
    from urllib.parse import urlsplit

    hint = "e.g. https://api.github.com or https://HOST/api/v3"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise UsageError(f"invalid API URL {url!r}", hint=hint) from None
    if parts.scheme not in ("https", "http") or not host or any(
            c in url for c in "\0\r\n\t "):
        raise UsageError(f"invalid API URL {url!r}", hint=hint)
    if parts.username is not None or parts.password is not None or parts.query \
            or parts.fragment:
        raise UsageError(f"invalid API URL {url!r}: no user, password, query or fragment "
                         "in the API root", hint=hint)
    if parts.scheme == "http":
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise UsageError(
                f"refusing the plain-http API URL {url!r}: the token would travel in clear",
                hint="use https:// (plain http is accepted only for a loopback address: "
                "localhost, 127.0.0.0/8, [::1])")


# Secrets met while working (the signed query of an artifact's download URL): the
# --debug log redacts them like the token; and any URL's signature-like query values.
REDACT: set[str] = set()
_SIGNED = re.compile(r"(?i)([?&](?:sig|signature|x-amz-signature|x-amz-credential|"
                     r"x-amz-security-token|token|access_token|code)=)[^&\s'\"]+")


class RedactingFilter(logging.Filter):
    """Replace every occurrence of the secret (and of :data:`REDACT`) in log records
    (``--debug``)."""

    def __init__(self, secret: str) -> None:
        super().__init__()
        self._secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        out = _SIGNED.sub(r"\1***", msg)
        for secret in (self._secret, *REDACT):
            if secret and secret in out:
                out = out.replace(secret, "***")
        if out != msg:
            record.msg = out
            record.args = None
        return True


# ----------------------------------------------------------------------------- helpers

def _iso(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        v = value if value.tzinfo else value.replace(tzinfo=UTC)
        return v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def _header(headers: Any, name: str) -> str | None:
    if not headers:
        return None
    for k, v in dict(headers).items():
        if str(k).lower() == name:
            return str(v)
    return None


def _retry_delay(exc: Any, attempt: int, policy: RetryPolicy, now: float) -> float | None:
    """Seconds to wait before retrying ``exc``, or None when it is not retryable."""
    from github.GithubException import GithubException

    backoff = float(min(policy.cap, policy.base * (2 ** attempt)))
    if isinstance(exc, GithubException):
        status = exc.status
        headers = exc.headers
        retry_after = _header(headers, "retry-after")
        remaining = _header(headers, "x-ratelimit-remaining")
        if _is_rate_limit(exc):
            if retry_after is not None and retry_after.isdigit():
                return min(policy.cap, float(retry_after))
            reset = _header(headers, "x-ratelimit-reset")
            if remaining == "0" and reset and reset.isdigit():
                return max(0.0, min(policy.cap, float(reset) - now))
            return backoff
        if isinstance(status, int) and status >= 500:
            return backoff
        return None
    import requests

    if isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout):
        return backoff
    return None


def _describe_failure(exc: Any) -> str:
    from github.GithubException import GithubException

    if isinstance(exc, GithubException):
        msg = ""
        if isinstance(exc.data, dict):
            msg = str(exc.data.get("message") or "")
        status = exc.status
        if status == 401:
            return "HTTP 401: bad credentials (check GITHUB_TOKEN / GH_TOKEN)"
        if status in (403, 429) and ("rate limit" in msg.lower() or status == 429
                                     or _header(exc.headers, "x-ratelimit-remaining") == "0"):
            reset = _header(exc.headers, "x-ratelimit-reset")
            when = ""
            if reset and reset.isdigit():
                when = " (resets at " + datetime.fromtimestamp(int(reset), UTC).strftime(
                    "%H:%M:%SZ") + ")"
            return f"HTTP {status}: API rate limit exceeded{when}"
        return f"HTTP {status}" + (f": {msg}" if msg else "")
    return f"{type(exc).__name__}: {exc}"


# ----------------------------------------------------------------------------- forge

class Forge:
    """A repository on GitHub (or a GitHub-compatible API)."""

    def __init__(
        self,
        repo: str,
        *,
        token: str,
        api_url: str = DEFAULT_API_URL,
        retry: RetryPolicy | None = None,
        per_page: int = 100,
        throttle: bool = True,
        timeout: int = 30,
    ) -> None:
        from github import Auth, Github

        self.slug = repo
        self.api_url = api_url
        self.timeout = timeout
        self._token = token
        self.retry = retry or RetryPolicy()
        self.calls: list[str] = []  # "GET /repos/…" lines, for --dry-run and tests
        # Reads are serial and unthrottled; writes keep >= 1 s apart (GitHub's guidance
        # against secondary rate limits).  Tests turn the write pause off.
        kwargs: dict[str, Any] = {"seconds_between_requests": None,
                                  "seconds_between_writes": 1.0 if throttle else None}
        self._gh = Github(base_url=api_url, auth=Auth.Token(token), per_page=per_page,
                          retry=None, timeout=timeout, lazy=True, **kwargs)
        self._repo = self._gh.get_repo(repo)
        self._login: str | None = None
        self._permissions: dict[str, str] = {}

    def __repr__(self) -> str:  # never the token
        return f"Forge({self.slug!r}, api_url={self.api_url!r})"

    # -- plumbing -----------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], T], *, idempotent: bool = True) -> T:
        """Run ``fn`` with retries.  Non-idempotent calls (writes) are retried only
        on rate limiting, where GitHub guarantees the request was not processed."""
        from github.GithubException import GithubException

        self.calls.append(what)
        log.debug("forge: %s", what)
        attempt = 0
        while True:
            try:
                return fn()
            except Exception as exc:
                import requests

                if not isinstance(exc, GithubException | requests.exceptions.RequestException):
                    raise
                delay = _retry_delay(exc, attempt, self.retry, time.time())
                if delay is not None and not idempotent and not _is_rate_limit(exc):
                    delay = None
                attempt += 1
                if delay is None or attempt >= self.retry.attempts:
                    tail = f" after {attempt} attempts" if delay is not None else ""
                    raise ForgeError(
                        f"GitHub API {what} failed{tail}: {_describe_failure(exc)}",
                        hint=_hint_for(exc)) from None
                log.debug("forge: %s: %s; retrying in %.1fs", what, _describe_failure(exc),
                          delay)
                self.retry.sleep(delay)

    def _path(self, tail: str) -> str:
        return f"/repos/{self.slug}{tail}"

    # -- pull requests ------------------------------------------------------------
    def pull(self, number: int) -> PullInfo:
        def go() -> PullInfo:
            pr = self._repo.get_pull(number)
            head_repo = pr.head.repo
            return PullInfo(
                number=pr.number, state=pr.state, merged=bool(pr.merged), title=pr.title or "",
                head_ref=pr.head.ref, head_sha=pr.head.sha,
                head_repo=head_repo.full_name if head_repo is not None else None,
                base_ref=pr.base.ref, base_repo=pr.base.repo.full_name,
                labels=tuple(lb.name for lb in pr.labels), draft=bool(pr.draft),
                merge_commit_sha=pr.merge_commit_sha, html_url=pr.html_url or "",
                body=pr.body or "")

        return self._call(f"GET {self._path(f'/pulls/{number}')}", go)

    def pull_commits(self, number: int) -> list[PullCommit]:
        def go() -> list[PullCommit]:
            pr = self._repo.get_pull(number)
            return [PullCommit(c.sha, c.commit.message or "") for c in pr.get_commits()]

        return self._call(f"GET {self._path(f'/pulls/{number}/commits')} (paged)", go)

    def comments(self, number: int) -> list[Comment]:
        def go() -> list[Comment]:
            issue = self._repo.get_issue(number)
            return [Comment(id=c.id, body=c.body or "", author=c.user.login if c.user else "",
                            association=c.author_association or "NONE",
                            created_at=_iso(c.created_at), html_url=c.html_url or "",
                            updated_at=_iso(c.updated_at) if c.updated_at else "")
                    for c in issue.get_comments()]

        return self._call(f"GET {self._path(f'/issues/{number}/comments')} (paged)", go)

    def post_comment(self, number: int, body: str) -> Comment:
        def go() -> Comment:
            c = self._repo.get_issue(number).create_comment(body)
            return Comment(id=c.id, body=c.body or "", author=c.user.login if c.user else "",
                           association=c.author_association or "NONE",
                           created_at=_iso(c.created_at), html_url=c.html_url or "",
                           updated_at=_iso(c.updated_at) if c.updated_at else "")

        # Not retried on 5xx: a lost response could hide a posted comment; a re-run
        # re-reads the comments instead (idempotent resume).
        return self._call(f"POST {self._path(f'/issues/{number}/comments')}", go,
                          idempotent=False)

    def edit_comment(self, number: int, comment_id: int, body: str) -> None:
        """Replace the body of one issue comment of PR ``number`` (a sticky comment)."""

        def go() -> None:
            self._repo.get_issue(number).get_comment(comment_id).edit(body)

        # idempotent: the same PATCH twice leaves the same body
        self._call(f"PATCH {self._path(f'/issues/comments/{comment_id}')}", go)

    def reviews(self, number: int) -> list[ReviewRecord]:
        def go() -> list[ReviewRecord]:
            pr = self._repo.get_pull(number)
            return [ReviewRecord(id=r.id, body=r.body or "",
                                 author=r.user.login if r.user else "",
                                 commit_id=r.commit_id or "", state=r.state or "")
                    for r in pr.get_reviews()]

        return self._call(f"GET {self._path(f'/pulls/{number}/reviews')} (paged)", go)

    def create_review(self, number: int, *, sha: str, body: str,
                      comments: list[dict[str, Any]]) -> ReviewRecord:
        """One review (event COMMENT) on commit ``sha`` with line comments (GitHub's
        ``path``/``line``/``side``/``start_line`` shape)."""

        def go() -> ReviewRecord:
            pr = self._repo.get_pull(number)
            r = pr.create_review(commit=self._repo.get_commit(sha), body=body,
                                 event="COMMENT", comments=comments)  # type: ignore[arg-type]
            return ReviewRecord(id=r.id, body=r.body or "",
                                author=r.user.login if r.user else "",
                                commit_id=r.commit_id or sha, state=r.state or "")

        # Not retried on 5xx (a lost answer may hide a posted review); a re-run finds it
        # by its marker.
        return self._call(f"POST {self._path(f'/pulls/{number}/reviews')}", go,
                          idempotent=False)

    def label_events(self, number: int) -> list[LabelEvent]:
        """``labeled``/``unlabeled`` events of the PR, to know the labels of a past run."""

        def go() -> list[LabelEvent]:
            out: list[LabelEvent] = []
            for ev in self._repo.get_issue(number).get_events():
                if ev.event in ("labeled", "unlabeled") and ev.label is not None:
                    out.append(LabelEvent(ev.event, ev.label.name, _iso(ev.created_at)))
            return out

        return self._call(f"GET {self._path(f'/issues/{number}/events')} (paged)", go)

    # -- who may do what ---------------------------------------------------------
    def login(self) -> str:
        """The login of the token's user (``GET /user``)."""
        if self._login is None:
            self._login = self._call("GET /user", lambda: str(self._gh.get_user().login))
        return self._login

    def permission(self, login: str) -> str | None:
        """``login``'s permission on the repository: admin, write, read or none
        (``GET …/collaborators/{login}/permission``; maintain reports write, triage
        read).  None for a name that is not a GitHub login.  Cached per login."""
        if not LOGIN_RX.fullmatch(login):
            return None
        if login not in self._permissions:
            def go() -> str:
                from github.GithubException import UnknownObjectException

                try:
                    return str(self._repo.get_collaborator_permission(login))
                except UnknownObjectException:  # no such user: no rights
                    return "none"

            self._permissions[login] = self._call(
                f"GET {self._path(f'/collaborators/{login}/permission')}", go)
        return self._permissions[login]

    # -- workflow runs ------------------------------------------------------------
    def sweep_runs(self, branch: str, workflow: str = SWEEP_WORKFLOW) -> list[WorkflowRun]:
        """Completed ``pull_request`` runs of ``workflow`` on ``branch``, newest first."""

        def go() -> list[WorkflowRun]:
            wf = self._repo.get_workflow(workflow)
            runs = wf.get_runs(branch=branch, event="pull_request", status="completed")
            return [_run(r) for r in runs]

        return self._call(
            f"GET {self._path(f'/actions/workflows/{workflow}/runs')}"
            f"?event=pull_request&branch={branch}&status=completed (paged)", go)

    def run(self, run_id: int) -> WorkflowRun:
        return self._call(f"GET {self._path(f'/actions/runs/{run_id}')}",
                          lambda: _run(self._repo.get_workflow_run(run_id).complete()))

    def artifacts(self, run_id: int) -> list[Artifact]:
        def go() -> list[Artifact]:
            r = self._repo.get_workflow_run(run_id)
            return [Artifact(a.name, bool(a.expired)) for a in r.get_artifacts()]

        return self._call(f"GET {self._path(f'/actions/runs/{run_id}/artifacts')} (paged)", go)

    def run_artifacts(self, run_id: int) -> list[ArtifactInfo]:
        """Every artifact of the run, with its id and size (paged)."""

        def go() -> list[ArtifactInfo]:
            r = self._repo.get_workflow_run(run_id)
            return [ArtifactInfo(int(a.id), str(a.name), int(a.size_in_bytes or 0),
                                 bool(a.expired)) for a in r.get_artifacts()]

        return self._call(f"GET {self._path(f'/actions/runs/{run_id}/artifacts')} (paged)", go)

    def download_artifact(self, artifact: ArtifactInfo, dest: Path, *, max_bytes: int) -> None:
        """The artifact's zip archive into ``dest`` (at most ``max_bytes``).

        As GitHub documents it: ``GET …/actions/artifacts/{id}/zip`` answers 302 with a
        short-lived signed URL; that URL is fetched *without* the token (it is another
        host's), and never appears in a message (its signature is redacted)."""
        if artifact.size > max_bytes:
            raise ForgeError(f"artifact {artifact.name!r} is {artifact.size:,} bytes, over the "
                             f"{max_bytes:,}-byte download limit",
                             hint="raise --max-artifact-mib only for a run you trust")
        path = self._path(f"/actions/artifacts/{artifact.id}/zip")

        def go() -> None:
            # not through PyGithub: its debug log would print the redirect's Location
            location = _signed_location(self.api_url + path, self._token, self.timeout)
            _fetch_signed(location, dest, max_bytes, self.timeout)

        self._call(f"GET {path} (archive of {artifact.name!r}, {artifact.size:,} bytes)", go)

    # -- checks -------------------------------------------------------------------
    def check_runs(self, sha: str) -> list[CheckRun]:
        def go() -> list[CheckRun]:
            runs = self._repo.get_commit(sha).get_check_runs()
            return [CheckRun(id=c.id, name=c.name, status=c.status, conclusion=c.conclusion,
                             started_at=_iso(c.started_at)) for c in runs]

        return self._call(f"GET {self._path(f'/commits/{sha}/check-runs')} (paged)", go)

    def statuses(self, sha: str) -> list[CheckRun]:
        """Commit statuses of ``sha`` (e.g. codeowner-signoff-verify), as check-run records:
        pending → in_progress; success → success; failure/error → failure."""

        def go() -> list[CheckRun]:
            combined = self._repo.get_commit(sha).get_combined_status()
            out: list[CheckRun] = []
            for st in combined.statuses:
                done = st.state in ("success", "failure", "error")
                out.append(CheckRun(
                    id=st.id, name=st.context, status="completed" if done else "in_progress",
                    conclusion=("success" if st.state == "success" else "failure")
                    if done else None, started_at=_iso(st.updated_at or st.created_at)))
            return out

        return self._call(f"GET {self._path(f'/commits/{sha}/status')}", go)

    # -- merging ------------------------------------------------------------------
    def squash_merge(self, number: int, *, title: str, body: str, sha: str) -> str:
        """Squash-merge PR ``number`` if its head is still ``sha``; the merge SHA."""

        def go() -> str:
            pr = self._repo.get_pull(number)
            status = pr.merge(commit_title=title, commit_message=body,
                              merge_method="squash", sha=sha)
            if not status.merged:
                raise ForgeError(f"GitHub did not merge PR #{number}: {status.message}")
            return str(status.sha)

        return self._call(f"PUT {self._path(f'/pulls/{number}/merge')} (squash, sha={sha})", go,
                          idempotent=False)


def _signed_location(url: str, token: str, timeout: int) -> str:
    """The signed download URL an archive endpoint redirects to (302 ``Location``); a
    GithubException for an error answer (so rate limits and 5xx are retried)."""
    import requests
    from github.GithubException import GithubException

    try:
        resp = requests.get(url, allow_redirects=False, timeout=timeout, headers={
            "Authorization": f"token {token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "ixtool"})
    except requests.exceptions.Timeout:
        raise requests.exceptions.Timeout("the archive request timed out") from None
    except requests.exceptions.RequestException:
        raise requests.exceptions.ConnectionError("the archive request failed") from None
    location = resp.headers.get("location")
    if resp.status_code == 302 and location:
        parts = location.split("?", 1)
        if len(parts) == 2:
            REDACT.add(parts[1])
        return location
    try:
        data = resp.json() if resp.content else {}
    except ValueError:
        data = {}
    raise GithubException(resp.status_code if resp.status_code >= 400 else 502,
                          data if isinstance(data, dict) else {}, dict(resp.headers))


def _fetch_signed(url: str, dest: Path, max_bytes: int, timeout: int) -> None:
    """GET a pre-signed download URL without credentials into ``dest``, at most
    ``max_bytes``; transport errors are re-raised without the URL (it is a secret)."""
    from urllib.parse import urlsplit

    import requests

    parts = urlsplit(url)
    host = parts.hostname or "?"
    if parts.query:
        REDACT.add(parts.query)
    REDACT.add(url)
    if parts.scheme != "https":
        check_api_url(f"{parts.scheme}://{parts.netloc}")  # plain http: loopback only
    try:
        with requests.get(url, stream=True, timeout=timeout, allow_redirects=True,
                          headers={"Accept": "application/zip"}) as resp:
            if resp.status_code >= 400:
                raise ForgeError(f"the artifact download from {host} failed: HTTP "
                                 f"{resp.status_code}", hint="re-run; the signed URL expires "
                                 "after a minute")
            declared = resp.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise ForgeError(f"the artifact from {host} is {int(declared):,} bytes, over "
                                 f"the {max_bytes:,}-byte download limit")
            got = 0
            with open(dest, "wb") as f:
                for chunk in resp.iter_content(1 << 16):
                    got += len(chunk)
                    if got > max_bytes:
                        raise ForgeError(f"the artifact from {host} is larger than the "
                                         f"{max_bytes:,}-byte download limit")
                    f.write(chunk)
    except requests.exceptions.Timeout:
        raise requests.exceptions.Timeout(f"download from {host} timed out") from None
    except requests.exceptions.RequestException:
        raise requests.exceptions.ConnectionError(f"download from {host} failed") from None


def _run(r: Any) -> WorkflowRun:
    head_repo = r.head_repository
    numbers = tuple(p.number for p in (r.pull_requests or [])
                    if isinstance(p.number, int) and not isinstance(p.number, bool))
    return WorkflowRun(
        id=r.id, head_sha=r.head_sha or "", head_branch=r.head_branch or "", event=r.event or "",
        status=r.status or "", conclusion=r.conclusion, path=r.path or "",
        created_at=_iso(r.created_at), run_attempt=int(r.run_attempt or 1),
        html_url=r.html_url or "",
        head_repo=head_repo.full_name if head_repo is not None else None,
        pr_numbers=numbers)


def _hint_for(exc: Any) -> str | None:
    from github.GithubException import GithubException

    if isinstance(exc, GithubException):
        if exc.status == 401:
            return "the token is missing, expired or revoked"
        if exc.status == 404:
            return ("check --repo and the PR number or run id; private repositories need a "
                    "token with access")
        if exc.status in (403, 429):
            return "wait for the rate limit to reset, or use a token with a higher limit"
        if exc.status >= 500:
            return "GitHub is having problems; re-run later (the command resumes)"
    return "check the network connection and --api-url"


def _is_rate_limit(exc: Any) -> bool:
    from github.GithubException import GithubException

    if not isinstance(exc, GithubException):
        return False
    if exc.status == 429:
        return True
    text = str(exc.data).lower() if exc.data is not None else ""
    return exc.status == 403 and (_header(exc.headers, "retry-after") is not None
                                  or _header(exc.headers, "x-ratelimit-remaining") == "0"
                                  or "rate limit" in text)
