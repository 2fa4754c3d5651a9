"""A small GitHub REST API double for ``merge-with-reuse`` tests (stdlib only).

It speaks the endpoints ixtool uses, with GitHub's payload shapes and
``Link``-header pagination, on 127.0.0.1 (port 0, threaded).  Pull-request heads,
commit lists and merges come from a REAL bare git repository (the ``origin`` the
tests clone and push to): a ``post-receive`` hook keeps ``refs/pull/N/head`` in
step with the PR branch, and the squash merge writes a real commit on ``main``.

Scenario knobs: ``faults`` (answer the next matching requests with an error),
``check_policy`` (check runs for a SHA as a function of how often they were
polled), ``on_request`` (callbacks, e.g. to push to the PR while ixtool waits).

GitHub behaviours it reproduces because ixtool must not rely on the opposite:

* a workflow run's ``pull_requests`` is **recomputed on every read**, not recorded
  when the run was made: the open pull requests of the run's own repository whose
  *current* head is the run's ``head_sha`` (``run_prs_by = "head_sha"``, what GitHub
  does in practice: the list empties once the PR head moves past the run's commit),
  or, as the REST reference words it, whose head SHA *or head branch* matches the run
  (``run_prs_by = "head_sha_or_branch"``).  Runs from another repository (forks) list
  none.  ``Run.prs`` pins a list for a scenario that needs one;
* ``GET …/actions/workflows/{id}/runs`` and ``GET …/actions/runs`` filter by
  ``branch``, ``event``, ``status`` (a status *or* a conclusion, as documented),
  ``head_sha`` and ``exclude_pull_requests``;
* ``GET …/pulls/{n}/commits`` lists at most 250 commits (``commits_cap``), oldest
  first, with their real parents and, as GitHub documents, the git author and committer
  (``commit.author`` / ``commit.committer``) and the GitHub accounts their e-mails belong
  to (``author`` / ``committer``: a user object, or null when ``accounts`` maps the e-mail
  to no login);
* ``GET …/collaborators/{login}/permission`` answers ``admin``/``write``/``read``/
  ``none`` (``maintain`` reports ``write``, ``triage`` reports ``read``), whatever the
  comment's ``author_association`` says.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "GitHub",
    "GIT_AUTHOR_EMAIL": "noreply@github.invalid",
    "GIT_COMMITTER_NAME": "GitHub",
    "GIT_COMMITTER_EMAIL": "noreply@github.invalid",
}

HOOK = """#!/bin/sh
# keep refs/pull/N/head equal to the PR branch, as GitHub does
while read n b; do
  git update-ref "refs/pull/$n/head" "refs/heads/$b" 2>/dev/null || true
done < ixtool-pr-map
"""

TS = "2026-08-{day:02d}T{h:02d}:{m:02d}:00Z"


def ts(n: int) -> str:
    """A deterministic ISO timestamp; larger n = later."""
    return TS.format(day=1 + n // 1440, h=(n // 60) % 24, m=n % 60)


def bare_git(bare: Path, *args: str, input_: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=bare, env=GIT_ENV, check=True,
                          capture_output=True, text=True, input=input_).stdout.strip()


@dataclass
class Fault:
    method: str
    path_rx: str
    status: int
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "Server Error"


@dataclass
class PR:
    number: int
    head_ref: str
    title: str
    labels: list[str]
    head_repo: str | None = None  # None: same repository; "other/fork" for a fork
    state: str = "open"
    merged: bool = False
    merge_commit_sha: str | None = None
    base_ref: str = "main"
    draft: bool = False
    events: list[tuple[str, str, int]] = field(default_factory=list)  # (event, label, ts n)
    body: str = ""


@dataclass
class Run:
    id: int
    head_sha: str
    head_branch: str
    conclusion: str | None = "success"
    status: str = "completed"
    event: str = "pull_request"
    path: str = ".github/workflows/run-sweep.yml"
    created: int = 0
    artifacts: list[tuple[str, bool]] = field(default_factory=lambda: [("results_bmk", False)])
    head_repo: str | None = None  # None: the fake's own repository
    prs: list[int] | None = None  # PRs the run lists; None: recomputed (FakeGitHub.run_prs)
    attempt: int = 1


def default_checks(sha: str, polls: int) -> list[dict[str, Any]]:
    """check-changelog runs first, then the reuse gate; all green after two polls."""
    gate = "in_progress" if polls == 0 else "completed"
    other = "in_progress" if polls < 2 else "completed"
    return [
        {"name": "check-changelog", "status": gate,
         "conclusion": "success" if gate == "completed" else None},
        {"name": "reuse-sweep-gate", "status": other,
         "conclusion": "success" if other == "completed" else None},
        {"name": "setup", "status": other,
         "conclusion": "skipped" if other == "completed" else None},
    ]


class FakeGitHub:
    def __init__(self, bare: Path, slug: str = "acme/bench", *, token: str = "tok-SECRET-123",
                 login: str = "maint", association: str = "MEMBER", max_page: int = 2) -> None:
        self.bare = bare
        self.slug = slug
        self.token = token
        self.login = login
        self.association = association
        # collaborator permissions (GET …/collaborators/{login}/permission); others: none
        self.permissions: dict[str, str] = {login: "write"}
        self.max_page = max_page
        self.prefix = ""  # "/api/v3" to act as GitHub Enterprise Server
        self.commits_cap = 250  # GitHub lists at most 250 commits of a PR
        self.accounts: dict[str, str] = {}  # e-mail → login (GitHub's verified e-mails)
        self.run_prs_by = "head_sha"  # or "head_sha_or_branch" (see the module docstring)
        self.lose_merge_response = False
        self.prs: dict[int, PR] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.runs: list[Run] = []
        self.faults: list[Fault] = []
        self.check_policy: Callable[[str, int], list[dict[str, Any]]] = default_checks
        self.check_polls: dict[str, int] = {}
        self.status_policy: Callable[[str, int], list[dict[str, Any]]] = lambda sha, n: []
        self.on_request: list[Callable[[str, str], None]] = []
        self.log: list[tuple[str, str, int]] = []  # (method, path, status)
        self.merges: list[dict[str, Any]] = []
        # pull-request reviews (ixtool review): number → review payloads (with "comments")
        self.reviews: dict[int, list[dict[str, Any]]] = {}
        # artifact archives (ixtool al audit, policy curves import): run id → artifact
        # name → zip bytes; ``GET …/actions/artifacts/{id}/zip`` answers 302 to a signed,
        # short-lived URL on another path of this server (``/_blobs/…?sig=…``), which must
        # be fetched WITHOUT the token (``blob_auth`` records any Authorization it got)
        self.archives: dict[int, dict[str, bytes]] = {}
        self.blob_sig = "sig-SECRET-" + os.urandom(6).hex()
        self.blob_auth: list[str] = []
        self.lock = threading.RLock()
        self._clock = 1000
        hook = bare / "hooks" / "post-receive"
        hook.write_text(HOOK)
        hook.chmod(0o755)
        (bare / "ixtool-pr-map").write_text("")
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.server.block_on_close = False  # keep-alive clients must not block stop()
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,),
                                       daemon=True)

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def api(self) -> str:
        """Root of the API URLs inside payloads (GitHub Enterprise: ``…/api/v3``)."""
        return self.url + self.prefix

    def start(self) -> FakeGitHub:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- state helpers -------------------------------------------------------------------
    def tick(self) -> str:
        self._clock += 1
        return ts(self._clock)

    def add_pr(self, pr: PR) -> None:
        self.prs[pr.number] = pr
        self.comments.setdefault(pr.number, [])
        lines = "".join(f"{p.number} {p.head_ref}\n" for p in self.prs.values())
        (self.bare / "ixtool-pr-map").write_text(lines)
        bare_git(self.bare, "update-ref", f"refs/pull/{pr.number}/head",
                 f"refs/heads/{pr.head_ref}")

    def add_comment(self, number: int, body: str, *, login: str = "someone",
                    association: str = "MEMBER", permission: str | None = None,
                    cid: int | None = None, created: str | None = None) -> dict[str, Any]:
        if permission is not None:
            self.permissions[login] = permission
        cid = cid or 9000 + sum(len(v) for v in self.comments.values()) + 1
        c = {"id": cid, "node_id": f"IC_{cid}", "body": body,
             "url": f"{self.api}/repos/{self.slug}/issues/comments/{cid}",
             "html_url": f"https://github.com/{self.slug}/pull/{number}#issuecomment-{cid}",
             "issue_url": f"{self.api}/repos/{self.slug}/issues/{number}",
             "user": {"login": login, "id": abs(hash(login)) % 10**6, "type": "User"},
             "created_at": created or self.tick(), "updated_at": created or ts(self._clock),
             "author_association": association}
        self.comments[number].append(c)
        return c

    def add_review(self, number: int, body: dict[str, Any], *, login: str) -> tuple[int,
                                                                                    Any]:
        """A review as GitHub makes it: every comment must sit on a line of the PR's diff
        (head side); a suggestion is a fenced block in a comment body."""
        pr = self.prs[number]
        sha = body.get("commit_id") or self.ref(f"refs/heads/{pr.head_ref}")
        diff = self.diff_lines(pr, sha)
        for c in body.get("comments") or []:
            lines = set(range(int(c.get("start_line") or c["line"]), int(c["line"]) + 1))
            if c.get("side", "RIGHT") != "RIGHT" or not lines <= diff.get(c["path"], set()):
                return 422, {"message": "Unprocessable Entity",
                             "errors": [f"Line could not be resolved: {c['path']}:{c['line']}"]}
        rid = 4000 + sum(len(v) for v in self.reviews.values()) + 1
        r = {"id": rid, "node_id": f"PRR_{rid}", "body": body.get("body", ""),
             "state": "COMMENTED" if body.get("event") == "COMMENT" else "PENDING",
             "commit_id": sha, "user": {"login": login, "id": 4242, "type": "User"},
             "html_url": f"https://github.com/{self.slug}/pull/{number}#pullrequestreview-"
                         f"{rid}",
             "pull_request_url": f"{self.api}/repos/{self.slug}/pulls/{number}",
             "submitted_at": self.tick(), "author_association": self.association,
             "comments": list(body.get("comments") or [])}
        self.reviews.setdefault(number, []).append(r)
        return 200, {k: v for k, v in r.items() if k != "comments"}

    def diff_lines(self, pr: PR, sha: str) -> dict[str, set[int]]:
        """Head-side line numbers inside the hunks of the PR's diff (zero context: the
        added lines), per path."""
        base = bare_git(self.bare, "merge-base", f"refs/heads/{pr.base_ref}", sha)
        out = bare_git(self.bare, "diff", "-U0", "--no-color", base, sha)
        lines: dict[str, set[int]] = {}
        path = ""
        for ln in out.splitlines():
            if ln.startswith("+++ "):
                path = ln[6:] if ln.startswith("+++ b/") else ""
            m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", ln)
            if m and path:
                start, n = int(m.group(1)), int(m.group(2) or 1)
                lines.setdefault(path, set()).update(range(start, start + n))
        return lines

    def find_comment(self, cid: int) -> tuple[int, dict[str, Any]] | None:
        for n, cs in self.comments.items():
            for c in cs:
                if c["id"] == cid:
                    return n, c
        return None

    def writes(self) -> list[tuple[str, str, int]]:
        return [e for e in self.log if e[0] != "GET"]

    def ref(self, name: str) -> str:
        return bare_git(self.bare, "rev-parse", name)

    def reuse_comments(self, number: int) -> list[str]:
        return [c["body"] for c in self.comments[number] if "/reuse-sweep-run" in c["body"]]

    # -- payloads ------------------------------------------------------------------------
    def _repo_payload(self, full: str) -> dict[str, Any]:
        owner, name = full.split("/")
        return {"id": abs(hash(full)) % 10**6, "name": name, "full_name": full,
                "owner": {"login": owner, "id": 1, "type": "Organization"},
                "url": f"{self.api}/repos/{full}", "html_url": f"https://github.com/{full}",
                "fork": full != self.slug, "private": False, "default_branch": "main"}

    def pr_payload(self, pr: PR) -> dict[str, Any]:
        head_sha = self.ref(f"refs/heads/{pr.head_ref}") if not pr.merged else \
            self.ref(f"refs/pull/{pr.number}/head")
        base_sha = self.ref(f"refs/heads/{pr.base_ref}")
        head_repo = pr.head_repo or self.slug
        return {
            "url": f"{self.api}/repos/{self.slug}/pulls/{pr.number}",
            "id": 100000 + pr.number, "node_id": f"PR_{pr.number}", "number": pr.number,
            "html_url": f"https://github.com/{self.slug}/pull/{pr.number}",
            "issue_url": f"{self.api}/repos/{self.slug}/issues/{pr.number}",
            "state": pr.state, "locked": False, "title": pr.title, "body": pr.body,
            "draft": pr.draft, "merged": pr.merged, "mergeable": True,
            "merge_commit_sha": pr.merge_commit_sha,
            "user": {"login": "author", "id": 7, "type": "User"},
            "labels": [{"id": i + 1, "node_id": f"L{i}", "name": n, "color": "ededed",
                        "default": False, "description": None,
                        "url": f"{self.api}/repos/{self.slug}/labels/{n}"}
                       for i, n in enumerate(pr.labels)],
            "head": {"label": f"{head_repo.split('/')[0]}:{pr.head_ref}", "ref": pr.head_ref,
                     "sha": head_sha, "repo": self._repo_payload(head_repo)},
            "base": {"label": f"{self.slug.split('/')[0]}:{pr.base_ref}", "ref": pr.base_ref,
                     "sha": base_sha, "repo": self._repo_payload(self.slug)},
            "author_association": "CONTRIBUTOR",
            "commits": len(self.pr_commits(pr)),  # every commit, however many are listed
        }

    def pr_commits(self, pr: PR) -> list[dict[str, Any]]:
        head = f"refs/pull/{pr.number}/head"
        out = bare_git(self.bare, "log", "--reverse",
                       "--format=%H %P%x00%an%x00%ae%x00%cn%x00%ce%x00%B%x01",
                       f"refs/heads/{pr.base_ref}..{head}") if not pr.merged else ""
        items = []
        for rec in out.split("\x01"):
            rec = rec.strip("\n")
            if not rec:
                continue
            shas, an, ae, cn, ce, msg = rec.split("\x00", 5)
            sha, *parents = shas.split()
            items.append({"sha": sha, "node_id": f"C_{sha[:8]}",
                          "url": f"{self.api}/repos/{self.slug}/commits/{sha}",
                          "html_url": f"https://github.com/{self.slug}/commit/{sha}",
                          "commit": {"message": msg.strip("\n"),
                                     "author": {"name": an, "email": ae, "date": ts(0)},
                                     "committer": {"name": cn, "email": ce, "date": ts(0)}},
                          "author": self.user(self.accounts.get(ae)),
                          "committer": self.user(self.accounts.get(ce)),
                          "parents": [{"sha": p, "url": f"{self.api}/repos/{self.slug}/"
                                       f"commits/{p}"} for p in parents]})
        return items

    def user(self, login: str | None) -> dict[str, Any] | None:
        """A GitHub user object (None stays None: no account)."""
        if login is None:
            return None
        return {"login": login, "id": abs(hash(login)) % 10**6, "type": "User",
                "url": f"{self.api}/users/{login}"}

    def run_prs(self, r: Run) -> list[int]:
        """The numbers a run's ``pull_requests`` lists NOW (recomputed on every read)."""
        if r.prs is not None:
            return list(r.prs)
        if (r.head_repo or self.slug) != self.slug:
            return []  # a run from another repository lists no pull request
        out = []
        for p in self.prs.values():
            if p.state != "open" or p.merged or (p.head_repo or self.slug) != self.slug:
                continue
            head = self.ref(f"refs/heads/{p.head_ref}")
            if head == r.head_sha or (self.run_prs_by == "head_sha_or_branch"
                                      and p.head_ref == r.head_branch):
                out.append(p.number)
        return out

    def list_runs(self, query: dict[str, str], workflow: str | None = None
                  ) -> list[dict[str, Any]]:
        """Runs newest first, filtered as ``GET …/actions/[workflows/{id}/]runs`` does."""
        def keep(r: Run) -> bool:
            if workflow is not None and not r.path.endswith("/" + workflow):
                return False
            status = query.get("status")
            return (("branch" not in query or r.head_branch == query["branch"])
                    and ("event" not in query or r.event == query["event"])
                    and ("head_sha" not in query or r.head_sha == query["head_sha"])
                    and (status is None or status in (r.status, r.conclusion)))

        runs = sorted((r for r in self.runs if keep(r)), key=lambda r: r.created,
                      reverse=True)
        bare = query.get("exclude_pull_requests") == "true"
        return [self.run_payload(r, with_prs=not bare) for r in runs]

    def run_payload(self, r: Run, *, with_prs: bool = True) -> dict[str, Any]:
        head_repo = self._repo_payload(r.head_repo or self.slug)
        numbers = self.run_prs(r) if with_prs else []
        pulls = []
        for n in numbers:
            p = self.prs.get(n)
            pulls.append({
                "url": f"{self.api}/repos/{self.slug}/pulls/{n}", "id": 100000 + n,
                "number": n,
                "head": {"ref": p.head_ref if p else r.head_branch, "sha": r.head_sha,
                         "repo": {"id": 1, "url": f"{self.api}/repos/{self.slug}",
                                  "name": self.slug.split("/")[1]}},
                "base": {"ref": p.base_ref if p else "main", "sha": "0" * 40,
                         "repo": {"id": 1, "url": f"{self.api}/repos/{self.slug}",
                                  "name": self.slug.split("/")[1]}}})
        return {"id": r.id, "name": "Run Sweep", "node_id": f"WFR_{r.id}",
                "head_repository": head_repo,
                "head_branch": r.head_branch, "head_sha": r.head_sha, "path": r.path,
                "run_number": r.id % 1000, "run_attempt": r.attempt, "event": r.event,
                "status": r.status, "conclusion": r.conclusion, "workflow_id": 42,
                "url": f"{self.api}/repos/{self.slug}/actions/runs/{r.id}",
                "html_url": f"https://github.com/{self.slug}/actions/runs/{r.id}",
                "created_at": ts(r.created), "updated_at": ts(r.created + 30),
                "pull_requests": pulls,
                "artifacts_url": f"{self.api}/repos/{self.slug}/actions/runs/{r.id}/artifacts"}

    def artifact_payloads(self, r: Run) -> list[dict[str, Any]]:
        zips = self.archives.get(r.id, {})
        names = [a[0] for a in r.artifacts]
        arts = list(r.artifacts) + [(n, False) for n in zips if n not in names]
        return [{"id": r.id * 10_000 + i, "node_id": f"A{i}", "name": n,
                 "size_in_bytes": len(zips[n]) if n in zips else 1024,
                 "expired": exp, "created_at": ts(r.created + 40),
                 "expires_at": ts(r.created + 50000),
                 "url": f"{self.api}/repos/{self.slug}/actions/artifacts/{r.id * 10_000 + i}",
                 "archive_download_url": f"{self.api}/repos/{self.slug}/actions/artifacts/"
                                         f"{r.id * 10_000 + i}/zip"}
                for i, (n, exp) in enumerate(arts)]

    def archive(self, aid: int) -> bytes | None:
        """The zip bytes of artifact ``aid`` (None: no such artifact or no archive)."""
        for r in self.runs:
            if aid // 10_000 == r.id:
                for p in self.artifact_payloads(r):
                    if p["id"] == aid:
                        return self.archives.get(r.id, {}).get(p["name"])
        return None

    def check_payloads(self, sha: str, *, first_page: bool = True) -> list[dict[str, Any]]:
        with self.lock:  # one poll = one listing, however many pages it has
            polls = self.check_polls.get(sha, 0)
            if first_page:
                self.check_polls[sha] = polls + 1
            else:
                polls = max(0, polls - 1)
        out = []
        for i, c in enumerate(self.check_policy(sha, polls)):
            cid = int(c.get("id", 5000 + i))
            out.append({"id": cid, "name": c["name"], "head_sha": sha, "node_id": f"CR{cid}",
                        "status": c["status"], "conclusion": c.get("conclusion"),
                        "started_at": c.get("started_at", ts(10)),
                        "completed_at": ts(20) if c["status"] == "completed" else None,
                        "url": f"{self.api}/repos/{self.slug}/check-runs/{cid}",
                        "html_url": f"https://github.com/{self.slug}/runs/{cid}",
                        "app": {"slug": "github-actions", "id": 15368}})
        return out

    # -- merge ---------------------------------------------------------------------------
    def squash(self, pr: PR, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        head = self.ref(f"refs/heads/{pr.head_ref}")
        if body.get("sha") and body["sha"] != head:
            return 409, {"message": "Head branch was modified. Review and try the merge again."}
        if body.get("merge_method") != "squash":
            return 405, {"message": "only squash merges in this fake"}
        main = self.ref(f"refs/heads/{pr.base_ref}")
        try:
            bare_git(self.bare, "merge-base", "--is-ancestor", main, head)
        except subprocess.CalledProcessError:
            return 405, {"message": "Pull Request is not mergeable"}
        tree = self.ref(f"{head}^{{tree}}")
        msg = f"{body.get('commit_title', pr.title)}\n\n{body.get('commit_message', '')}"
        sha = bare_git(self.bare, "commit-tree", tree, "-p", main, "-F", "-", input_=msg)
        bare_git(self.bare, "update-ref", f"refs/heads/{pr.base_ref}", sha, main)
        bare_git(self.bare, "update-ref", f"refs/pull/{pr.number}/head", head)
        pr.merged, pr.state, pr.merge_commit_sha = True, "closed", sha
        self.merges.append({"number": pr.number, "sha": sha, "message": msg})
        return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}


ROUTES: list[tuple[str, str, str]] = [
    ("GET", r"/user", "get_user"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/collaborators/(?P<login>[^/]+)/permission",
     "permission"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)", "get_pull"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/commits", "pull_commits"),
    ("PUT", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/merge", "merge"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)", "get_issue"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/comments", "list_comments"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/events", "list_events"),
    ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/comments", "post_comment"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/reviews", "list_reviews"),
    ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/reviews", "create_review"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<cid>\d+)", "get_comment"),
    ("PATCH", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<cid>\d+)", "edit_comment"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<wf>[^/]+)", "get_workflow"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<wf>[^/]+)/runs", "list_runs"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs", "list_repo_runs"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<id>\d+)", "get_run"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<id>\d+)/artifacts", "artifacts"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[0-9a-f]{40})/check-runs",
     "check_runs"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[0-9a-f]{40})/status", "status"),
    ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/artifacts/(?P<aid>\d+)/zip",
     "artifact_zip"),
]


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes; without this, Nagle + delayed
            # ACK add ~40 ms to every request
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None
                  ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-GitHub-Api-Version", "2022-11-28")
            self.send_header("X-RateLimit-Limit", "5000")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if "x-ratelimit-remaining" not in {k.lower() for k in (headers or {})}:
                self.send_header("X-RateLimit-Remaining", "4999")
            self.end_headers()
            with fake.lock:  # logged before the answer leaves: a client that got it sees it
                fake.log.append((self.command, self.path.split("?")[0], status))
            self.wfile.write(data)

        def _page(self, items: list[Any], wrap: str | None = None) -> None:
            u = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(u.query))
            per = min(int(q.get("per_page", 30)), fake.max_page, 100)
            page = int(q.get("page", 1))
            last = max(1, -(-len(items) // per))
            chunk = items[(page - 1) * per: page * per]
            links = []

            def link(p: int, rel: str) -> str:
                qq = dict(q, page=str(p))
                return f'<{fake.url}{u.path}?{urllib.parse.urlencode(qq)}>; rel="{rel}"'

            if page < last:
                links += [link(page + 1, "next"), link(last, "last")]
            if page > 1:
                links += [link(1, "first"), link(page - 1, "prev")]
            headers = {"Link": ", ".join(links)} if links else {}
            payload: Any = {"total_count": len(items), wrap: chunk} if wrap else chunk
            self._send(200, payload, headers)

        def _dispatch(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path.startswith("/_blobs/"):  # the signed archive URL: no token expected
                self.h_blob(path.rsplit("/", 1)[-1])
                return
            if path.startswith("/api/v3"):
                path = path[len("/api/v3"):]
            auth = self.headers.get("Authorization", "")
            if auth not in (f"token {fake.token}", f"Bearer {fake.token}"):
                self._send(401, {"message": "Bad credentials"})
                return
            for cb in list(fake.on_request):
                cb(self.command, path)
            with fake.lock:
                for f in fake.faults:
                    if f.times > 0 and f.method == self.command and re.fullmatch(f.path_rx,
                                                                                 path):
                        f.times -= 1
                        self._send(f.status, {"message": f.message}, f.headers)
                        return
            for method, rx, name in ROUTES:
                m = re.fullmatch(rx, path)
                if m and method == self.command:
                    if "repo" in m.groupdict() and m.group("repo") != fake.slug:
                        self._send(404, {"message": "Not Found"})
                        return
                    getattr(self, "h_" + name)(**{k: v for k, v in m.groupdict().items()
                                                  if k != "repo"})
                    return
            self._send(404, {"message": "Not Found", "documentation_url": "fake"})

        def do_GET(self) -> None:
            self._dispatch()

        def do_POST(self) -> None:
            self._dispatch()

        def do_PUT(self) -> None:
            self._dispatch()

        def do_PATCH(self) -> None:
            self._dispatch()

        def _body(self) -> dict[str, Any]:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b"{}"
            data: dict[str, Any] = json.loads(raw or b"{}")
            return data

        def _pr(self, n: str) -> PR | None:
            pr = fake.prs.get(int(n))
            if pr is None:
                self._send(404, {"message": "Not Found"})
            return pr

        # -- handlers --------------------------------------------------------------
        def h_get_user(self) -> None:
            self._send(200, {"login": fake.login, "id": 4242, "type": "User",
                             "url": f"{fake.api}/users/{fake.login}"})

        def h_permission(self, login: str) -> None:
            login = urllib.parse.unquote(login)
            role = fake.permissions.get(login, "none")
            # the role a collaborator was given → the permission the endpoint reports
            perm = {"maintain": "write", "triage": "read"}.get(role, role)
            self._send(200, {"permission": perm, "role_name": role,
                             "user": {"login": login, "id": abs(hash(login)) % 10**6,
                                      "type": "User"}})

        def h_get_pull(self, n: str) -> None:
            if (pr := self._pr(n)) is not None:
                self._send(200, fake.pr_payload(pr))

        def h_pull_commits(self, n: str) -> None:
            if (pr := self._pr(n)) is not None:
                self._page(fake.pr_commits(pr)[:fake.commits_cap])

        def h_merge(self, n: str) -> None:
            if (pr := self._pr(n)) is not None:
                if pr.merged:
                    self._send(405, {"message": "Pull Request is not mergeable"})
                    return
                status, payload = fake.squash(pr, self._body())
                if status == 200 and fake.lose_merge_response:
                    fake.lose_merge_response = False  # merged, but the answer is lost
                    self._send(502, {"message": "Bad Gateway"})
                    return
                self._send(status, payload)

        def h_get_issue(self, n: str) -> None:
            if (pr := self._pr(n)) is not None:
                p = fake.pr_payload(pr)
                self._send(200, {k: p[k] for k in ("id", "number", "title", "state",
                                                   "labels", "user", "html_url")}
                           | {"url": p["issue_url"], "pull_request": {"url": p["url"]}})

        def h_list_comments(self, n: str) -> None:
            if self._pr(n) is not None:
                self._page(list(fake.comments[int(n)]))

        def h_list_events(self, n: str) -> None:
            if (pr := self._pr(n)) is not None:
                self._page([{"id": 700 + i, "node_id": f"LE_{i}", "event": ev,
                             "url": f"{fake.api}/repos/{fake.slug}/issues/events/{700 + i}",
                             "actor": {"login": "lead", "id": 3, "type": "User"},
                             "commit_id": None, "commit_url": None, "created_at": ts(t),
                             "label": {"name": label, "color": "ededed"}}
                            for i, (ev, label, t) in enumerate(pr.events)])

        def h_post_comment(self, n: str) -> None:
            if self._pr(n) is not None:
                body = self._body().get("body", "")
                with fake.lock:
                    c = fake.add_comment(int(n), body, login=fake.login,
                                         association=fake.association)
                self._send(201, c)

        def h_list_reviews(self, n: str) -> None:
            if self._pr(n) is not None:
                self._page([{k: v for k, v in r.items() if k != "comments"}
                            for r in fake.reviews.get(int(n), [])])

        def h_create_review(self, n: str) -> None:
            if self._pr(n) is not None:
                with fake.lock:
                    status, payload = fake.add_review(int(n), self._body(), login=fake.login)
                self._send(status, payload)

        def h_get_comment(self, cid: str) -> None:
            found = fake.find_comment(int(cid))
            if found is None:
                self._send(404, {"message": "Not Found"})
                return
            self._send(200, found[1])

        def h_edit_comment(self, cid: str) -> None:
            found = fake.find_comment(int(cid))
            if found is None:
                self._send(404, {"message": "Not Found"})
                return
            if found[1]["user"]["login"] != fake.login:
                self._send(403, {"message": "Must have admin rights to Repository."})
                return
            with fake.lock:
                found[1]["body"] = self._body().get("body", "")
                found[1]["updated_at"] = fake.tick()
            self._send(200, found[1])

        def h_get_workflow(self, wf: str) -> None:
            self._send(200, {"id": 42, "name": "Run Sweep", "path": f".github/workflows/{wf}",
                             "state": "active",
                             "url": f"{fake.api}/repos/{fake.slug}/actions/workflows/42"})

        def _query(self) -> dict[str, str]:
            return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))

        def h_list_runs(self, wf: str) -> None:
            self._page(fake.list_runs(self._query(), urllib.parse.unquote(wf)),
                       "workflow_runs")

        def h_list_repo_runs(self) -> None:
            self._page(fake.list_runs(self._query()), "workflow_runs")

        def _run(self, id: str) -> Run | None:
            for r in fake.runs:
                if r.id == int(id):
                    return r
            self._send(404, {"message": "Not Found"})
            return None

        def h_get_run(self, id: str) -> None:
            if (r := self._run(id)) is not None:
                self._send(200, fake.run_payload(r))

        def h_artifacts(self, id: str) -> None:
            if (r := self._run(id)) is not None:
                self._page(fake.artifact_payloads(r), "artifacts")

        def h_status(self, sha: str) -> None:
            polls = max(0, fake.check_polls.get(sha, 1) - 1)
            sts = [{"id": 800 + i, "node_id": f"S{i}", "context": st["context"],
                    "state": st["state"], "description": st.get("description", ""),
                    "target_url": None, "avatar_url": None,
                    "url": f"{fake.api}/repos/{fake.slug}/statuses/{sha}",
                    "created_at": ts(10 + i), "updated_at": ts(10 + i),
                    "creator": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}}
                   for i, st in enumerate(fake.status_policy(sha, polls))]
            states = {st["state"] for st in sts}
            combined = ("failure" if states & {"failure", "error"} else
                        "pending" if "pending" in states or not sts else "success")
            self._send(200, {"state": combined, "sha": sha, "total_count": len(sts),
                             "statuses": sts,
                             "repository": fake._repo_payload(fake.slug),
                             "commit_url": f"{fake.api}/repos/{fake.slug}/commits/{sha}",
                             "url": f"{fake.api}/repos/{fake.slug}/commits/{sha}/status"})

        def h_check_runs(self, sha: str) -> None:
            q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
            first = q.get("page", "1") == "1"
            self._page(fake.check_payloads(sha, first_page=first), "check_runs")

        def h_artifact_zip(self, aid: str) -> None:
            if fake.archive(int(aid)) is None:
                self._send(404, {"message": "Not Found"})
                return
            self._send(302, {}, {"Location": f"{fake.url}/_blobs/{aid}?sig={fake.blob_sig}"
                                             "&se=2026-08-01T00%3A01%3A00Z"})

        def h_blob(self, aid: str) -> None:
            q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
            if self.headers.get("Authorization"):
                with fake.lock:
                    fake.blob_auth.append(self.headers["Authorization"])
            data = fake.archive(int(aid)) if aid.isdigit() else None
            if q.get("sig") != fake.blob_sig or data is None:
                self._send(403, {"message": "AuthenticationFailed"})
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with fake.lock:
                fake.log.append(("GET", "/_blobs/" + aid, 200))
            self.wfile.write(data)

    return Handler
