"""Orchestration of ``ixtool merge-with-reuse`` (spec §7, with G1/G8/G9/G13/G14 fixed).

Sequence: preflight (read-only, every problem reported at once) → plan →
confirmation → build the one preparation commit locally (merge main,
resolve/canonicalize the changelog) → authorization comment (the FIRST write) →
push → wait for checks → re-check the head → squash-merge with ixtool's own
message.

Preflight checks everything a write could later trip over: the PR, its labels
and the source run (a sweep from this PR's head repository and branch on a commit
of the PR; ``pull_requests`` of a run is only a hint, GitHub empties it once the PR
moves on), that the head's PR content is what the run measured (apart from the
changelog's links and main's commits; else MR303 unless ``--allow-unbenchmarked``),
the token user's permission (write or admin, as the
authorization rule needs), the changelog gate and its merge with main, conflicts
outside the changelog (``git merge-tree``), the git identity ixtool will commit
with and push access to the PR branch (``git push --dry-run``).

Resumability: every step derives "already done" from the remote state and from
what ixtool recorded itself — the comment in force pins the chosen run and records
the commit being pushed; the PR head is a commit ixtool recorded (in its comment or
in ``refs/ixtool/pr-N/prepared``) AND checks out structurally as a preparation commit
(:mod:`inferencex_tools.ci.prepared`: a record or a message trailer alone proves
nothing); the PR is merged — so re-running after a crash at any point converges on
the same end state.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferencex_tools.ci.authorization import (
    AUTHORIZING,
    Authorization,
    authorization,
    prepared_in,
)
from inferencex_tools.ci.ids import MAX_PR_NUMBER, MAX_RUN_ID
from inferencex_tools.errors import ConflictError, ForgeError, IxtoolError, UsageError
from inferencex_tools.io.github import CheckRun, Comment, Forge, PullCommit, PullInfo, WorkflowRun
from inferencex_tools.io.gitops import access_hint
from inferencex_tools.merge import reuse
from inferencex_tools.merge.rules import (
    AL_MISMATCH_ALLOWED,
    AL_NOT_SERVED,
    AUTHORIZATION_CONFLICT,
    BASE_BRANCH,
    BODY_LINT,
    CANNOT_PUSH,
    CHANGELOG_GATE,
    CHANGELOG_UNMERGEABLE,
    CHECK_FAILED,
    CHECK_TIMEOUT,
    DIRTY_TREE,
    FAILED_RUN_REUSED,
    HEAD_MOVED,
    MERGE_REFUSED,
    NO_CHANGELOG_CHANGE,
    NO_GIT_IDENTITY,
    NOT_AUTHORIZED,
    PINNED_RUN_INVALID,
    PR_ALREADY_MERGED,
    PR_FORK,
    PR_NOT_OPEN,
    PUSH_REJECTED,
    RUN_NOT_AT_HEAD,
    UNBENCHMARKED_ALLOWED,
    UNEXPECTED_CONFLICT,
)
from inferencex_tools.report.findings import Finding, Result, Severity
from inferencex_tools.report.words import plural

STEPS = ("preflight", "merge", "canonicalize", "commit", "comment", "push", "checks",
         "recheck", "squash-merge")
OK_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})
CHECK_CHANGELOG = "check-changelog"
PR_COMMITS_CAP = 250  # GET /pulls/N/commits lists at most this many (G13)


class Aborted(IxtoolError):
    """The user declined at the confirmation prompt (nothing was changed)."""

    exit_code = 1


@dataclass
class MergeRequest:
    pr: int
    repo: str | None = None
    run_id: int | None = None
    dry_run: bool = False
    yes: bool = False
    allow_unbenchmarked: bool = False
    allow_failed_run: bool = False  # a pinned failed/cancelled run with complete results
    allow_al_mismatch: bool = False  # merge although forced ALs were not served (MR331)
    timeout: float = 1800.0
    remote: str = "origin"
    path: Path = field(default_factory=lambda: Path("."))
    api_url: str | None = None
    token: str | None = None  # default: GITHUB_TOKEN / GH_TOKEN of ``env``
    env: Mapping[str, str] | None = None  # the user's environment (None: this process's)


def _no_progress(_line: str) -> None:
    return None


def _no_hook(_step: str) -> None:
    return None


def _refuse(_plan: list[str]) -> bool:
    return False


@dataclass
class Hooks:
    """Everything time- or terminal-dependent, injectable for tests."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    poll_interval: float = 10.0
    progress: Callable[[str], None] = _no_progress  # the live line while waiting
    say: Callable[[str], None] = _no_progress  # one-off status lines (stderr)
    confirm: Callable[[list[str]], bool] = _refuse  # the CLI asks on the terminal
    after_step: Callable[[str], None] = _no_hook  # fault injection in tests
    retry_sleep: Callable[[float], None] | None = None  # forge backoff; None = time.sleep
    throttle: bool = True  # PyGithub's pauses between requests
    per_page: int = 100


@dataclass
class Context:
    req: MergeRequest
    slug: str
    forge: Forge
    ws: Any  # io.gitops.Workspace
    hooks: Hooks
    result: Result
    where: str = ""
    pr: PullInfo | None = None
    commits: list[PullCommit] = field(default_factory=list)
    run: WorkflowRun | None = None
    head_sha: str = ""
    base_sha: str = ""
    in_force: Authorization | None = None
    recorded: set[str] = field(default_factory=set)  # commits ixtool says it prepared
    later: list[str] = field(default_factory=list)  # unbenchmarked commits allowed through
    git: Any = None  # io.gitcat.GitReader of the user's repository (object queries)
    al_mismatch: list[str] = field(default_factory=list)  # jobs merged without their AL
    needs_merge: bool = False
    comment_done: bool = False
    prepared: bool = False  # the PR head is ixtool's preparation commit, containing main
    reuse_commit: str = ""  # a preparation commit made earlier, still to be pushed
    plan: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # writes still to make (the plan)

    def add(self, f: Finding) -> None:
        self.result.add(f)

    @property
    def failed(self) -> bool:
        return bool(self.result.errors)


# ----------------------------------------------------------------------------- entry

def open_context(req: MergeRequest, hooks: Hooks) -> Context:
    from inferencex_tools.changelog.links import check_slug
    from inferencex_tools.io.git import GitRepo
    from inferencex_tools.io.github import RetryPolicy, api_url_from_env, token_from_env
    from inferencex_tools.io.gitops import Workspace

    if not 1 <= req.pr <= MAX_PR_NUMBER:
        raise UsageError(f"invalid PR number {req.pr}",
                         hint=f"a PR number is between 1 and {MAX_PR_NUMBER}")
    if req.run_id is not None and not 1 <= req.run_id <= MAX_RUN_ID:
        raise UsageError(f"invalid run id {req.run_id}", hint="copy it from the run's URL")
    if req.timeout <= 0:
        raise UsageError("--timeout must be positive", hint="e.g. --timeout 1800")
    api_url = api_url_from_env(req.api_url, req.env)  # refuses plain http off loopback
    repo = GitRepo.open(req.path)
    slug = req.repo or repo.remote_slug(req.remote)
    if not slug:
        raise UsageError(f"cannot tell the GitHub repository from remote {req.remote!r}",
                         hint="pass --repo OWNER/NAME")
    check_slug(slug)
    token = req.token or token_from_env(req.env)
    retry = RetryPolicy(sleep=hooks.retry_sleep or time.sleep)
    forge = Forge(slug, token=token, api_url=api_url, retry=retry,
                  per_page=hooks.per_page, throttle=hooks.throttle)
    result = Result(command="merge-with-reuse")
    return Context(req=req, slug=slug, forge=forge,
                   ws=Workspace(repo, req.remote, user_env=req.env),
                   hooks=hooks, result=result, where=f"{slug}#{req.pr}")


def run_merge(req: MergeRequest, hooks: Hooks | None = None) -> Result:
    hooks = hooks or Hooks()
    ctx = open_context(req, hooks)
    try:
        return _run(ctx)
    finally:
        if ctx.git is not None:
            ctx.git.close()
        if not req.dry_run:
            with contextlib.suppress(IxtoolError):
                ctx.ws.discard_worktree(req.pr)


def _run(ctx: Context) -> Result:
    req, hooks, res = ctx.req, ctx.hooks, ctx.result
    res.checked.append(ctx.where)
    res.info.update(pr=req.pr, repo=ctx.slug, dry_run=req.dry_run)
    pr = ctx.forge.pull(req.pr)
    ctx.pr = pr
    if pr.merged:
        ctx.add(PR_ALREADY_MERGED.at(ctx.where, None, None,
                                     f"PR #{pr.number} is already merged as "
                                     f"{pr.merge_commit_sha}"))
        res.info["merge_sha"] = pr.merge_commit_sha
        res.info["state"] = "already-merged"
        return res
    preflight(ctx)
    hooks.after_step("preflight")
    res.info["preflight_calls"] = list(ctx.forge.calls)
    if ctx.failed:
        res.info["state"] = "refused"
        return res
    make_plan(ctx)
    res.info["plan"] = ctx.plan
    res.info["would_call"] = ctx.calls
    if req.dry_run:
        res.info["state"] = "dry-run"
        return res
    for line in ctx.plan:
        hooks.say(line)
    if not req.yes and not hooks.confirm(ctx.plan):
        raise Aborted("aborted at the confirmation prompt; nothing was changed",
                      hint="re-run and answer y, or pass --yes")
    execute(ctx)
    return res


# ----------------------------------------------------------------------------- preflight

def authorization_in_force(forge: Forge, number: int) -> tuple[Authorization | None,
                                                                list[Comment]]:
    """The PR's authorization under the rule ``ci plan`` uses, with the permission
    of each candidate author asked from the API; and the PR's comments."""
    comments = forge.comments(number)
    return authorization(comments, lambda c: forge.permission(c.author)), comments


def preflight(ctx: Context) -> None:
    """Every read-only check, all problems collected (spec §7 steps 1–4, G1, G8, G9)."""
    pr = ctx.pr
    assert pr is not None
    _check_checkout(ctx)
    _check_pull(ctx, pr)
    _check_rights(ctx)
    if pr.is_fork:
        return  # everything below needs the PR's branch in this repository
    ctx.head_sha, ctx.base_sha = ctx.ws.fetch(pr.number, pr.base_ref)
    from inferencex_tools.io.gitcat import GitReader

    ctx.git = GitReader(ctx.ws.repo.root)
    if ctx.head_sha != pr.head_sha:
        ctx.add(HEAD_MOVED.at(ctx.where, None, None,
                              f"the API reports head {pr.head_sha[:12]} but pull/{pr.number}"
                              f"/head fetched {ctx.head_sha[:12]}"))
        return
    _choose_source(ctx, pr)
    if ctx.run is not None:
        _check_benchmarked(ctx, ctx.run)
        _check_served_al(ctx, ctx.run)
    _changelog_preflight(ctx, pr)
    _merge_preflight(ctx)
    _prepared_state(ctx, pr)
    _authorization_state(ctx)
    _git_preflight(ctx, pr)


def _check_checkout(ctx: Context) -> None:
    dirty = ctx.ws.dirty()
    if dirty:
        shown = ", ".join(ln[3:] for ln in dirty[:5]) + (" …" if len(dirty) > 5 else "")
        ctx.add(DIRTY_TREE.at(str(ctx.ws.repo.root), None, None,
                              f"{len(dirty)} uncommitted change(s): {shown}"))


def _check_pull(ctx: Context, pr: PullInfo) -> None:
    where = ctx.where
    if pr.state != "open":
        ctx.add(PR_NOT_OPEN.at(where, None, None, f"PR #{pr.number} is {pr.state}"))
    elif pr.draft:
        ctx.add(PR_NOT_OPEN.at(where, None, None,
                               f"PR #{pr.number} is a draft: run-sweep.yml runs no checks "
                               "on drafts, so the merge could never go green",
                               hint="mark the PR ready for review first"))
    if pr.is_fork:
        ctx.add(PR_FORK.at(where, None, None,
                           f"PR #{pr.number} comes from {pr.head_repo or 'a deleted fork'}"))
    if pr.base_ref != "main":
        ctx.add(BASE_BRANCH.at(where, None, None,
                               f"PR #{pr.number} targets {pr.base_ref!r}, not 'main'"))
    ctx.result.extend(reuse.label_findings(pr, where))


def _check_rights(ctx: Context) -> None:
    """The token's user must be able to authorize (the comment must count) and merge."""
    login = ctx.forge.login()
    perm = ctx.forge.permission(login)
    ctx.result.info["token_user"] = {"login": login, "permission": perm}
    if perm not in AUTHORIZING:
        ctx.add(NOT_AUTHORIZED.at(
            ctx.where, None, None,
            f"the token belongs to {login}, whose permission on {ctx.slug} is "
            f"{perm or 'unknown'}: a /reuse-sweep-run comment by {login} would not count "
            "(write or admin is needed), so nothing is posted"))


def _choose_source(ctx: Context, pr: PullInfo) -> None:
    """The authorization in force, the PR's commits and the source run."""
    forge, ws = ctx.forge, ctx.ws
    ctx.in_force, comments = authorization_in_force(forge, pr.number)
    in_force = ctx.in_force
    run_id = _pinned_run(ctx, in_force)
    ctx.commits = forge.pull_commits(pr.number)
    if len(ctx.commits) >= PR_COMMITS_CAP:  # the API list is truncated: ask git
        ctx.commits = [PullCommit(sha, msg)
                       for sha, msg in ws.commits_between(ctx.base_sha, ctx.head_sha)]
    pinned = _pinned_run_record(ctx, run_id) if run_id is not None else None
    if run_id is not None and pinned is None:
        return
    if ctx.req.allow_failed_run and pinned is None:
        ctx.hooks.say("--allow-failed-run applies to a pinned run only (--run-id or a "
                      "maintainer's /reuse-sweep-run <id>); choosing among successful runs")
    runs = None if pinned is not None else forge.sweep_runs(pr.head_ref)
    events = forge.label_events(pr.number)
    choice = reuse.choose_run(
        pr, (c.sha for c in ctx.commits), runs, pinned, forge.artifacts, ctx.where,
        labels_of=lambda r: reuse.labels_at(pr.labels, events, r.created_at),
        allow_failed=ctx.req.allow_failed_run)
    ctx.result.extend(choice.findings)
    ctx.result.info["runs_considered"] = choice.considered
    ctx.run = choice.run
    if choice.run is None:
        return
    ctx.result.info.update(run_id=choice.run.id, run_head=choice.run.head_sha,
                           artifacts=choice.artifacts)
    if choice.run.conclusion != "success":
        ctx.add(FAILED_RUN_REUSED.at(
            ctx.where, None, None,
            f"run {choice.run.id} concluded {choice.run.conclusion}; its result artifacts "
            f"({', '.join(choice.artifacts)}) are reused under --allow-failed-run "
            "(named in the squash commit)"))
    # what ixtool says it prepared: its local state, the comment in force and the
    # token user's own comments (claims only: _prepared_state checks the commit)
    local = ws.recorded_prepared(pr.number)
    if local:
        ctx.recorded.add(local)
    if in_force is not None and in_force.prepared:
        ctx.recorded.add(in_force.prepared)
    login = forge.login()
    ctx.recorded.update(sha for c in comments if c.author == login
                        and (sha := prepared_in(c.body)) is not None)


def _pinned_run(ctx: Context, in_force: Authorization | None) -> int | None:
    """--run-id, else the run pinned by the authorization in force (G8), else None."""
    req = ctx.req
    pin = in_force.run_id if in_force is not None else None
    if req.run_id is None and pin is not None:
        assert in_force is not None
        ctx.hooks.say(f"using run {pin}, pinned by {in_force.author}'s comment "
                      f"{in_force.comment.html_url or in_force.comment.id}")
        return pin
    if req.run_id is not None and pin is not None and pin != req.run_id:
        assert in_force is not None
        ctx.add(AUTHORIZATION_CONFLICT.at(
            ctx.where, None, None, f"{in_force.author}'s comment pins run "
            f"{pin}; --run-id {req.run_id} replaces it"))
    return req.run_id


def _pinned_run_record(ctx: Context, run_id: int) -> WorkflowRun | None:
    """The pinned run from the API; a run that does not exist is MR302, not exit 2."""
    try:
        return ctx.forge.run(run_id)
    except ForgeError as exc:
        if "HTTP 404" not in exc.message:
            raise
    ctx.add(PINNED_RUN_INVALID.at(ctx.where, None, None,
                                  f"run {run_id} cannot be reused: it does not exist in "
                                  f"{ctx.slug}"))
    return None


def _check_benchmarked(ctx: Context, run: WorkflowRun) -> None:
    """Benchmarked means the head's PR content is what the run measured: the same
    changes against main, apart from the changelog's links and main's own commits
    (merge/content.py).  Anything else is MR303 naming the files and the commits."""
    from inferencex_tools.merge.content import compare

    pr = ctx.pr
    assert pr is not None
    diff = compare(ctx.git, run.head_sha, ctx.head_sha, ctx.base_sha, pr=pr.number,
                   repo=ctx.slug)
    ctx.result.info["benchmarked"] = diff.same
    if diff.same:
        return
    later = _commits_touching(ctx, run.head_sha, diff.files,
                              changelog=bool(diff.changelog))
    shown = ", ".join(sha[:12] for sha in later[:5]) + (" …" if len(later) > 5 else "")
    what = (f"run {run.id} benchmarked {run.head_sha[:12]}; the PR head "
            f"{ctx.head_sha[:12]} changes something else ({diff.describe()}), in "
            f"{len(later)} later commit(s): {shown}")
    ctx.result.info["unbenchmarked"] = later
    ctx.result.info["unbenchmarked_files"] = diff.files + (
        [reuse.CHANGELOG] if diff.changelog else [])
    if ctx.req.allow_unbenchmarked:
        ctx.later = later
        ctx.add(UNBENCHMARKED_ALLOWED.at(ctx.where, None, None,
                                         what + " (named in the squash commit)"))
    else:
        ctx.add(RUN_NOT_AT_HEAD.at(ctx.where, None, None, what))


def _commits_touching(ctx: Context, run_head: str, files: list[str], *,
                      changelog: bool) -> list[str]:
    """The commits after ``run_head`` (not in main) that change one of ``files`` (or
    the changelog) against their first parent; all of them when none does."""
    after = [sha for sha, _ in ctx.ws.commits_between(ctx.base_sha, ctx.head_sha, run_head)]
    wanted = set(files) | ({reuse.CHANGELOG} if changelog else set())
    touching = [sha for sha in after if wanted & set(
        ctx.git.delta(ctx.git.parents(sha)[0], sha) if ctx.git.parents(sha) else [])]
    return touching or after


def _check_served_al(ctx: Context, run: WorkflowRun) -> None:
    """The run about to be reused served the AL its throughput jobs forced
    (``ixtool al audit RUN_ID``, throughput jobs only, rows and launches of the run's
    head): MR330, or MR331 with --allow-al-mismatch."""
    from inferencex_tools.al.service import AuditRequest, audit_run
    from inferencex_tools.io.artifacts import Limits

    with ctx.ws.tree_at(run.head_sha) as tree:
        a = audit_run(AuditRequest(root=tree, artifacts=[], throughput_only=True),
                      ctx.forge, run.id, Limits(max_download=256 << 20))
    bad = [j.launch.label() for j in a.forced_failures]
    ctx.result.info["al_audit"] = {"run": run.id, "verdicts": a.result.info["verdicts"],
                                   "not_served": bad}
    if not bad:
        return
    shown = "; ".join(bad[:5]) + (f" … ({len(bad)} in all)" if len(bad) > 5 else "")
    what = (f"run {run.id}: {len(bad)} throughput job(s) did not serve the AL their launch "
            f"forced: {shown}")
    if ctx.req.allow_al_mismatch:
        ctx.al_mismatch = bad
        ctx.add(AL_MISMATCH_ALLOWED.at(ctx.where, None, None,
                                       what + " (named in the squash commit)"))
    else:
        ctx.add(AL_NOT_SERVED.at(ctx.where, None, None, what))


def _changelog_preflight(ctx: Context, pr: PullInfo) -> None:
    """The PR-mode gate and an in-memory dry run of resolve/canonicalize (G1)."""
    from inferencex_tools.changelog.merge_ops import canonicalize, resolve_conflict
    from inferencex_tools.changelog.validate import Options, analyze_change

    ws, name = ctx.ws, reuse.CHANGELOG
    head_sha, base_sha = ctx.head_sha, ctx.base_sha
    mb = ws.repo.merge_base(head_sha, base_sha)
    mb_raw = ws.repo.show(mb, name) or b""
    pr_raw = ws.repo.show(head_sha, name) or b""
    main_raw = ws.repo.show(base_sha, name) or b""
    if pr_raw == mb_raw:
        ctx.add(NO_CHANGELOG_CHANGE.at(name, None, None,
                                       f"PR #{pr.number} leaves {name} unchanged"))
        return
    opts = Options(repo=ctx.slug, pr=pr.number, master_keys=None)
    a = analyze_change(mb_raw, pr_raw, name, opts, base_label=f"{name}@merge-base")
    errors = [f for f in a.findings if f.severity is Severity.ERROR]
    if errors:
        ctx.result.extend(errors)
        ctx.add(CHANGELOG_GATE.at(name, errors[0].line, errors[0].column,
                                  f"{plural(len(errors), 'changelog error')} on the PR branch; "
                                  "nothing was posted or pushed"))
        ctx.result.info.setdefault("sources", {})[name] = pr_raw.decode("utf-8", "replace")
        return
    try:
        merged = pr_raw
        if main_raw != mb_raw:
            merged = resolve_conflict(mb_raw, pr_raw, main_raw, pr=pr.number,
                                      repo=ctx.slug, label=name).data
        canonicalize(main_raw, merged, pr=pr.number, repo=ctx.slug, label=name)
    except ConflictError as exc:
        ctx.add(CHANGELOG_UNMERGEABLE.at(name, None, None, exc.message))


def _merge_preflight(ctx: Context) -> None:
    """Merge main into the PR head in memory: a conflict outside the changelog (or a
    changelog conflict without all three versions) stops the run here (MR403/MR402)."""
    ws, name = ctx.ws, reuse.CHANGELOG
    ctx.needs_merge = not ws.is_ancestor(ctx.base_sha, ctx.head_sha)
    if not ctx.needs_merge:
        return
    mt = ws.merge_tree(ctx.head_sha, ctx.base_sha)
    others = sorted(p for p in mt.conflicts if p != name)
    if others:
        shown = ", ".join(others[:10]) + (" …" if len(others) > 10 else "")
        ctx.add(UNEXPECTED_CONFLICT.at(
            ctx.where, None, None,
            f"merging main ({ctx.base_sha[:12]}) into the PR head ({ctx.head_sha[:12]}) "
            f"conflicts in {len(others)} path(s) besides {name}: {shown}",
            data={"conflicts": others}))
    stages = mt.conflicts.get(name)
    if stages is not None and stages != {1, 2, 3}:
        ctx.add(CHANGELOG_UNMERGEABLE.at(name, None, None,
                                         f"{name} was added or deleted on one side; "
                                         "ixtool resolves only a three-way content conflict"))


def _prepared_state(ctx: Context, pr: PullInfo) -> None:
    """Is the head already ixtool's preparation commit, or is one waiting to be pushed?

    A commit counts as prepared when ixtool recorded it (its comment in force, its
    local ref) AND it checks out structurally (ci/prepared.py): on top of its
    parent it adds main and the canonical changelog link, nothing else.  The record
    alone is a claim anybody with write access can post."""
    from inferencex_tools.ci.prepared import preparation_problems

    ws = ctx.ws
    run = ctx.run

    def structural(sha: str) -> list[str]:
        return preparation_problems(ctx.git, sha, ctx.base_sha, pr=pr.number, repo=ctx.slug)

    if (ctx.head_sha in ctx.recorded and not ctx.needs_merge
            and (run is None or ctx.head_sha != run.head_sha)):
        problems = structural(ctx.head_sha)
        if not problems:
            ctx.prepared = True
            return
        ctx.result.info["not_prepared"] = problems
        ctx.hooks.say(f"the head {ctx.head_sha[:12]} is recorded as prepared but is not a "
                      f"preparation commit ({'; '.join(problems)}); preparing anew")
    local = ws.recorded_prepared(pr.number)
    if (local and local != ctx.head_sha and ws.parents(local)[:1] == [ctx.head_sha]
            and ws.is_ancestor(ctx.base_sha, local) and not structural(local)):
        ctx.reuse_commit = local  # built by an interrupted run, never pushed


def _authorization_state(ctx: Context) -> None:
    """Is ixtool's authorization already in force?  It is when the comment in force
    pins the chosen run (read the same way by the reference selector) and, when a
    commit is still to be pushed, records that commit: ``ci plan`` skips the sweep of
    a pushed head only for the commit the authorization records (or a comment newer
    than the push), so a new commit always needs its own record."""
    in_force, run = ctx.in_force, ctx.run
    if in_force is None or run is None or in_force.run_id != run.id:
        return
    if not reuse.reference_agrees(in_force.comment.body, run.id):
        return
    if ctx.prepared:
        ctx.comment_done = True
    elif ctx.reuse_commit:
        ctx.comment_done = in_force.prepared == ctx.reuse_commit


def _git_preflight(ctx: Context, pr: PullInfo) -> None:
    """The git identity of the commit ixtool will make and push access to the branch,
    both with the user's own configuration (what the writes will use)."""
    ws = ctx.ws
    if ctx.prepared:
        return
    if not ctx.reuse_commit:
        ident = ws.identity()
        if not ident.ok:
            ctx.add(NO_GIT_IDENTITY.at(
                str(ws.repo.root), None, None,
                f"git cannot tell who authors ixtool's commit: {ident.detail}",
                hint=identity_hint(ident.missing)))
        else:
            ctx.result.info["git_identity"] = ident.detail
    probe = ws.push_probe(ctx.head_sha, pr.head_ref)
    if not probe.ok:
        ctx.add(CANNOT_PUSH.at(
            ctx.where, None, None,
            f"`git push --dry-run {ws.remote} {pr.head_ref}` failed: {probe.detail}",
            hint=access_hint(probe.detail, ws.remote)))


def identity_hint(missing: list[str]) -> str:
    """A hint naming the identity settings to set (git never guesses them for ixtool)."""
    examples = {"user.name": "'Your Name'", "user.email": "you@example.com"}
    keys = missing or ["user.email"]
    return ("set " + " and ".join(keys) + " in your git configuration: "
            + "; ".join(f"git config --global {k} {examples.get(k, '…')}" for k in keys))


# ----------------------------------------------------------------------------- plan

def make_plan(ctx: Context) -> None:
    pr, run, slug = ctx.pr, ctx.run, ctx.slug
    assert pr is not None and run is not None
    p, c = ctx.plan, ctx.calls
    api = f"/repos/{slug}"
    p.append(f"source run: {run.id} ({run.html_url or 'run-sweep.yml'}) on "
             f"{run.head_sha[:12]}, artifacts: {', '.join(ctx.result.info.get('artifacts', []))}")
    if ctx.prepared:
        p.append(f"1. prepare: done (head {ctx.head_sha[:12]} is ixtool's recorded commit "
                 f"for run {run.id} and contains {pr.base_ref})")
    elif ctx.reuse_commit:
        p.append(f"1. prepare: done locally ({ctx.reuse_commit[:12]}, recorded by an "
                 "interrupted run)")
    else:
        p.append(f"1. build one [skip-sweep] commit on {ctx.head_sha[:12]} locally: "
                 + (f"merge {pr.base_ref} ({ctx.base_sha[:12]}) resolving only "
                    f"{reuse.CHANGELOG}, " if ctx.needs_merge else "")
                 + "canonicalize the changelog link (or an empty refresh commit)")
    if ctx.comment_done:
        p.append(f"2. authorization: done (the comment in force pins run {run.id})")
    else:
        p.append(f"2. post '{reuse.comment_body(run.id)}' on PR #{pr.number}"
                 + (" (recording the prepared commit)" if not ctx.prepared else ""))
        c.append(f"POST {api}/issues/{pr.number}/comments "
                 f"body={reuse.comment_body(run.id)!r}")
    if not ctx.prepared:
        p.append(f"3. push it to {ctx.req.remote}/{pr.head_ref} "
                 f"(only if the branch is still {ctx.head_sha[:12]})")
        c.append(f"git push --force-with-lease=refs/heads/{pr.head_ref}:{ctx.head_sha} "
                 f"{ctx.req.remote} <prepared>:refs/heads/{pr.head_ref}")
    p.append(f"4. wait for {CHECK_CHANGELOG}, then for every check run and commit status "
             f"(timeout {ctx.req.timeout:.0f}s, poll every {ctx.hooks.poll_interval:g}s)")
    c.append(f"GET {api}/commits/<head>/check-runs (paged, polled)")
    c.append(f"GET {api}/commits/<head>/status (polled)")
    c.append(f"GET {api}/pulls/{pr.number} (head re-check, polled)")
    title, _ = reuse.squash_message(pr, run, slug)
    p.append(f"5. re-check the head, then squash-merge as {title!r} with ixtool's message"
             + (f" naming {len(ctx.later)} unbenchmarked commit(s)" if ctx.later else ""))
    c.append(f"PUT {api}/pulls/{pr.number}/merge merge_method=squash sha=<head>")


# ----------------------------------------------------------------------------- execution

def execute(ctx: Context) -> None:
    pr, run, hooks, res = ctx.pr, ctx.run, ctx.hooks, ctx.result
    assert pr is not None and run is not None
    # 1. the preparation commit, built locally (no write yet)
    head = ctx.head_sha if ctx.prepared else (ctx.reuse_commit or build_commit(ctx, pr, run))
    if ctx.failed:
        return
    # 2. the authorization comment, pinned to the chosen run (G8) — the first write
    if not ctx.comment_done:
        body = reuse.comment_body(run.id, None if ctx.prepared else head)
        posted = ctx.forge.post_comment(pr.number, body)
        hooks.say(f"posted {reuse.comment_body(run.id)!r} "
                  f"({posted.html_url or posted.id})")
    hooks.after_step("comment")
    # 3. push
    if not ctx.prepared and not push_prepared(ctx, pr, head):
        return
    res.info["prepared_head"] = head
    # 4. checks
    if not wait_for_checks(ctx, head):
        return
    hooks.after_step("checks")
    # 5. re-check the head, merge
    squash_merge(ctx, pr, run, head)


def build_commit(ctx: Context, pr: PullInfo, run: WorkflowRun) -> str:
    """One commit on top of the PR head (merge / canonicalize / refresh), built in the
    private worktree and recorded as ixtool's own; not pushed."""
    from inferencex_tools.changelog.merge_ops import canonicalize

    ws, hooks, name = ctx.ws, ctx.hooks, reuse.CHANGELOG
    ws.prepare_worktree(pr.number, ctx.head_sha)
    kind = "refresh"
    if ctx.needs_merge:
        kind = "merge"
        if not _merge_main(ctx, pr):
            return ""
    hooks.after_step("merge")
    main_raw = ws.repo.show(ctx.base_sha, name) or b""
    try:
        canon = canonicalize(main_raw, ws.read(name), pr=pr.number, repo=ctx.slug, label=name)
    except ConflictError as exc:
        ctx.add(CHANGELOG_UNMERGEABLE.at(name, None, None, exc.message))
        return ""
    if canon.changed:
        ws.write(name, canon.data)
        kind = "merge" if kind == "merge" else "canonicalize"
        hooks.say(f"canonicalized {name}: {canon.message}")
    hooks.after_step("canonicalize")
    sha: str = ws.commit(reuse.prep_message(pr, run.id, kind))
    ws.record_prepared(pr.number, sha)
    hooks.say(f"prepared {sha[:12]} ({kind}) locally")
    hooks.after_step("commit")
    return sha


def _merge_main(ctx: Context, pr: PullInfo) -> bool:
    """``git merge`` main into the worktree; only the changelog may conflict (the
    preflight's merge-tree said so) and it is resolved by the changelog rules."""
    from inferencex_tools.changelog.merge_ops import resolve_conflict

    ws, name = ctx.ws, reuse.CHANGELOG
    attempt = ws.merge(ctx.base_sha)
    if attempt.clean:
        return True
    others = [p for p in attempt.conflicted if p != name]
    if others:
        ctx.add(UNEXPECTED_CONFLICT.at(
            ctx.where, None, None, "merging main conflicts in " + ", ".join(others)))
        return False
    stages = [ws.stage(i, name) for i in (1, 2, 3)]
    if any(s is None for s in stages):
        ctx.add(CHANGELOG_UNMERGEABLE.at(name, None, None,
                                         "a conflict stage of the changelog is "
                                         "missing (added or deleted on one side)"))
        return False
    try:
        out = resolve_conflict(stages[0] or b"", stages[1] or b"", stages[2] or b"",
                               pr=pr.number, repo=ctx.slug, label=name)
    except ConflictError as exc:
        ctx.add(CHANGELOG_UNMERGEABLE.at(name, None, None, exc.message))
        return False
    ws.write(name, out.data)
    ctx.hooks.say(f"resolved the {name} conflict: {out.message}")
    return True


def push_prepared(ctx: Context, pr: PullInfo, sha: str) -> bool:
    ok, detail = ctx.ws.push(sha, pr.head_ref, ctx.head_sha)
    if not ok:
        moved = "stale info" in detail or "fetch first" in detail or "rejected" in detail
        ctx.add(PUSH_REJECTED.at(
            ctx.where, None, None, f"push to {pr.head_ref} rejected: {detail or 'no detail'}",
            hint=None if moved else access_hint(detail, ctx.ws.remote)))
        return False
    ctx.hooks.say(f"pushed {sha[:12]} to {pr.head_ref}")
    ctx.hooks.after_step("push")
    return True


def squash_merge(ctx: Context, pr: PullInfo, run: WorkflowRun, head: str) -> None:
    res = ctx.result
    now = ctx.forge.pull(pr.number)
    if now.merged:
        res.info.update(merge_sha=now.merge_commit_sha, state="merged")
        return
    if now.head_sha != head:
        ctx.add(HEAD_MOVED.at(ctx.where, None, None,
                              f"PR head is now {now.head_sha[:12]}, expected {head[:12]}"))
        return
    ctx.hooks.after_step("recheck")
    title, body = reuse.squash_message(now, run, ctx.slug, ctx.later, head=head,
                                       failed_run=run.conclusion != "success",
                                       al_mismatch=ctx.al_mismatch)
    bad = reuse.lint_message(f"{title}\n\n{body}")
    if bad:
        ctx.add(BODY_LINT.at(ctx.where, None, None,
                             f"refusing to merge: the message contains {', '.join(bad)}"))
        return
    try:
        sha = ctx.forge.squash_merge(pr.number, title=title, body=body, sha=head)
    except ForgeError as exc:
        ctx.add(MERGE_REFUSED.at(ctx.where, None, None, exc.message))
        return
    ctx.hooks.after_step("squash-merge")
    res.info.update(merge_sha=sha, state="merged")


def _latest(runs: list[CheckRun]) -> dict[str, CheckRun]:
    """The newest run per check name (by started_at, then id)."""
    out: dict[str, CheckRun] = {}
    for r in sorted(runs, key=lambda r: (r.started_at, r.id)):
        out[r.name] = r
    return out


def _head_unchanged(ctx: Context, pr: PullInfo, head: str) -> bool:
    """The PR still points at ``head`` (or the fetched head) and is not merged."""
    now = ctx.forge.pull(pr.number)
    if now.merged:
        ctx.result.info.update(merge_sha=now.merge_commit_sha, state="merged")
        return False
    if now.head_sha not in (head, ctx.head_sha):
        ctx.add(HEAD_MOVED.at(ctx.where, None, None,
                              f"PR head moved to {now.head_sha[:12]} while waiting for "
                              f"checks of {head[:12]}"))
        return False
    return True


def check_state(latest: dict[str, CheckRun], phase: str) -> tuple[str, list[CheckRun],
                                                                   list[str]]:
    """(phase, failed, pending) of one poll: check-changelog first, then everything.
    A failure counts once check-changelog has completed (spec §7 12–13)."""
    gate = latest.get(CHECK_CHANGELOG)
    if phase == CHECK_CHANGELOG and gate is not None and gate.status == "completed":
        phase = "all"
    failed = [r for r in latest.values()
              if r.status == "completed" and (r.conclusion or "") not in OK_CONCLUSIONS]
    pending = sorted(n for n, r in latest.items() if r.status != "completed")
    if phase == CHECK_CHANGELOG and gate is None:
        pending = [CHECK_CHANGELOG + " (not started)", *pending]
    return phase, (failed if phase != CHECK_CHANGELOG else []), pending


def wait_for_checks(ctx: Context, head: str) -> bool:
    """Wait for check-changelog, then for every check run and status of ``head``."""
    pr, hooks, req = ctx.pr, ctx.hooks, ctx.req
    assert pr is not None
    start = hooks.clock()
    phase = CHECK_CHANGELOG
    while True:
        elapsed = hooks.clock() - start
        if not _head_unchanged(ctx, pr, head):
            return False
        latest = _latest(ctx.forge.check_runs(head) + ctx.forge.statuses(head))
        phase, failed, pending = check_state(latest, phase)
        if failed:
            ctx.add(CHECK_FAILED.at(ctx.where, None, None, "; ".join(
                f"{r.name} concluded {r.conclusion}" for r in failed)))
            return False
        if phase == "all" and not pending:
            hooks.progress(f"checks: all {len(latest)} passed after {elapsed:.0f}s")
            ctx.result.info["checks"] = {n: r.conclusion for n, r in sorted(latest.items())}
            return True
        if elapsed >= req.timeout:
            ctx.add(CHECK_TIMEOUT.at(ctx.where, None, None,
                                     f"after {elapsed:.0f}s still pending: "
                                     + ", ".join(pending)))
            return False
        hooks.progress(f"waiting for {'check-changelog' if phase != 'all' else 'checks'}: "
                       f"{elapsed:.0f}s elapsed; pending: {', '.join(pending)}")
        hooks.sleep(hooks.poll_interval)
