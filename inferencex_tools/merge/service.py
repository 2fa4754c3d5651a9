"""Orchestration of ``ixtool merge-with-reuse`` (spec §7, with G1/G8/G9/G13/G14 fixed).

Sequence: preflight (read-only, every problem reported at once) → plan →
confirmation → authorization comment → prepare one commit on the PR branch
(merge main, resolve/canonicalize the changelog) → push → wait for checks →
re-check the head → squash-merge with ixtool's own message.

Resumability: nothing is kept locally.  Every step derives "already done" from
the remote state — the comment in force pins the chosen run; the PR head is
ixtool's preparation commit for that run and contains main; the PR is merged —
so re-running after a crash at any point converges on the same end state without
duplicate comments or commits.  The work tree is a private git worktree that is
rebuilt from the remote on every run.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferencex_tools.errors import ConflictError, ForgeError, IxtoolError, UsageError
from inferencex_tools.io.github import CheckRun, Forge, PullCommit, PullInfo, WorkflowRun
from inferencex_tools.merge import reuse
from inferencex_tools.merge import rules as R
from inferencex_tools.report.findings import Finding, Result, Severity

STEPS = ("preflight", "comment", "merge", "canonicalize", "commit", "push", "checks",
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
    timeout: float = 1800.0
    remote: str = "origin"
    path: Path = field(default_factory=lambda: Path("."))
    api_url: str | None = None
    token: str | None = None  # default: $GITHUB_TOKEN / $GH_TOKEN


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
    confirm: Callable[[list[str]], bool] = _refuse
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
    comment_done: bool = False
    prepared: bool = False
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

    if req.pr < 1:
        raise UsageError(f"invalid PR number {req.pr}")
    if req.timeout <= 0:
        raise UsageError("--timeout must be positive")
    repo = GitRepo.open(req.path)
    slug = req.repo or repo.remote_slug(req.remote)
    if not slug:
        raise UsageError(f"cannot tell the GitHub repository from remote {req.remote!r}",
                         hint="pass --repo OWNER/NAME")
    check_slug(slug)
    token = req.token or token_from_env()
    retry = RetryPolicy(sleep=hooks.retry_sleep or time.sleep)
    forge = Forge(slug, token=token, api_url=api_url_from_env(req.api_url), retry=retry,
                  per_page=hooks.per_page, throttle=hooks.throttle)
    result = Result(command="merge-with-reuse")
    return Context(req=req, slug=slug, forge=forge, ws=Workspace(repo, req.remote),
                   hooks=hooks, result=result, where=f"{slug}#{req.pr}")


def run_merge(req: MergeRequest, hooks: Hooks | None = None) -> Result:
    hooks = hooks or Hooks()
    ctx = open_context(req, hooks)
    try:
        return _run(ctx)
    finally:
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
        ctx.add(R.PR_ALREADY_MERGED.at(ctx.where, None, None,
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
        raise Aborted("aborted at the confirmation prompt; nothing was changed")
    execute(ctx)
    return res


# ----------------------------------------------------------------------------- preflight

def preflight(ctx: Context) -> None:
    """Every read-only check, all problems collected (spec §7 steps 1–4, G1, G8, G9)."""
    pr, where, forge = ctx.pr, ctx.where, ctx.forge
    assert pr is not None
    dirty = ctx.ws.dirty()
    if dirty:
        shown = ", ".join(ln[3:] for ln in dirty[:5]) + (" …" if len(dirty) > 5 else "")
        ctx.add(R.DIRTY_TREE.at(str(ctx.ws.repo.root), None, None,
                                f"{len(dirty)} uncommitted change(s): {shown}"))
    if pr.state != "open":
        ctx.add(R.PR_NOT_OPEN.at(where, None, None, f"PR #{pr.number} is {pr.state}"))
    elif pr.draft:
        ctx.add(R.PR_NOT_OPEN.at(where, None, None,
                                 f"PR #{pr.number} is a draft: run-sweep.yml runs no checks "
                                 "on drafts, so the merge could never go green",
                                 hint="mark the PR ready for review first"))
    if pr.is_fork:
        ctx.add(R.PR_FORK.at(where, None, None,
                             f"PR #{pr.number} comes from {pr.head_repo or 'a deleted fork'}"))
    if pr.base_ref != "main":
        ctx.add(R.BASE_BRANCH.at(where, None, None,
                                 f"PR #{pr.number} targets {pr.base_ref!r}, not 'main'"))
    ctx.result.extend(reuse.label_findings(pr, where))
    ctx.commits = forge.pull_commits(pr.number)
    comments = forge.comments(pr.number)
    in_force = reuse.authorization(comments)
    run_id = ctx.req.run_id
    if run_id is None and in_force is not None and in_force.run_id is not None:
        run_id = in_force.run_id  # honour a maintainer's (or our earlier) pin — G8
        ctx.hooks.say(f"using run {run_id}, pinned by {in_force.comment.author}'s comment "
                      f"{in_force.comment.html_url or in_force.comment.id}")
    elif (ctx.req.run_id is not None and in_force is not None and in_force.run_id is not None
          and in_force.run_id != ctx.req.run_id):
        ctx.add(R.AUTHORIZATION_CONFLICT.at(
            where, None, None, f"{in_force.comment.author}'s comment pins run "
            f"{in_force.run_id}; --run-id {ctx.req.run_id} replaces it"))
    if not pr.is_fork:
        if len(ctx.commits) >= PR_COMMITS_CAP:  # the API list is truncated: ask git
            head_sha, base_sha = ctx.ws.fetch(pr.number, pr.base_ref)
            ctx.commits = [PullCommit(sha, msg)
                           for sha, msg in ctx.ws.commits_between(base_sha, head_sha)]
        pinned = forge.run(run_id) if run_id is not None else None
        runs = None if pinned is not None else forge.sweep_runs(pr.head_ref)
        events = forge.label_events(pr.number)
        choice = reuse.choose_run(
            pr, ctx.commits, runs, pinned, forge.artifacts, where,
            labels_of=lambda r: reuse.labels_at(pr.labels, events, r.created_at))
        ctx.result.extend(choice.findings)
        ctx.result.info["runs_considered"] = choice.considered
        ctx.run = choice.run
        if choice.run is not None:
            ctx.result.info.update(run_id=choice.run.id, run_head=choice.run.head_sha,
                                   artifacts=choice.artifacts)
            later = reuse.unbenchmarked(ctx.commits, choice.run.head_sha)
            if later:
                ctx.add(R.RUN_NOT_AT_HEAD.at(
                    where, None, None,
                    f"run {choice.run.id} benchmarked {choice.run.head_sha[:12]}; "
                    f"{len(later)} later commit(s) were not benchmarked: "
                    + ", ".join(c.sha[:12] for c in later[:5])))
            ctx.comment_done = reuse.pinned_to(comments, choice.run.id) is not None
        _changelog_preflight(ctx)


def _changelog_preflight(ctx: Context) -> None:
    """The PR-mode gate and an in-memory dry run of resolve/canonicalize (G1)."""
    from inferencex_tools.changelog.merge_ops import canonicalize, resolve_conflict
    from inferencex_tools.changelog.validate import Options, analyze_change

    pr, ws = ctx.pr, ctx.ws
    assert pr is not None
    head_sha, base_sha = ws.fetch(pr.number, pr.base_ref)
    ctx.head_sha, ctx.base_sha = head_sha, base_sha
    if head_sha != pr.head_sha:
        ctx.add(R.HEAD_MOVED.at(ctx.where, None, None,
                                f"the API reports head {pr.head_sha[:12]} but pull/{pr.number}"
                                f"/head fetched {head_sha[:12]}"))
        return
    name = reuse.CHANGELOG
    mb = ws.repo.merge_base(head_sha, base_sha)
    mb_raw = ws.repo.show(mb, name) or b""
    pr_raw = ws.repo.show(head_sha, name) or b""
    main_raw = ws.repo.show(base_sha, name) or b""
    if pr_raw == mb_raw:
        ctx.add(R.NO_CHANGELOG_CHANGE.at(name, None, None,
                                         f"PR #{pr.number} leaves {name} unchanged"))
        return
    opts = Options(repo=ctx.slug, pr=pr.number, master_keys=None)
    a = analyze_change(mb_raw, pr_raw, name, opts, base_label=f"{name}@merge-base")
    errors = [f for f in a.findings if f.severity is Severity.ERROR]
    if errors:
        ctx.result.extend(errors)
        ctx.add(R.CHANGELOG_GATE.at(name, errors[0].line, errors[0].column,
                                    f"{len(errors)} changelog error(s) on the PR branch; "
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
        ctx.add(R.CHANGELOG_UNMERGEABLE.at(name, None, None, exc.message))
    base_in_head = ws.is_ancestor(base_sha, head_sha)
    run = ctx.run
    ctx.prepared = bool(
        base_in_head and run is not None
        and reuse.prep_run_id(ws.commit_message(head_sha)) == run.id)


# ----------------------------------------------------------------------------- plan

def make_plan(ctx: Context) -> None:
    pr, run, slug = ctx.pr, ctx.run, ctx.slug
    assert pr is not None and run is not None
    p, c = ctx.plan, ctx.calls
    api = f"/repos/{slug}"
    p.append(f"source run: {run.id} ({run.html_url or 'run-sweep.yml'}) on "
             f"{run.head_sha[:12]}, artifacts: {', '.join(ctx.result.info.get('artifacts', []))}")
    if ctx.comment_done:
        p.append(f"1. authorization: done (the comment in force pins run {run.id})")
    else:
        p.append(f"1. post '{reuse.comment_body(run.id)}' on PR #{pr.number}")
        c.append(f"POST {api}/issues/{pr.number}/comments "
                 f"body={reuse.comment_body(run.id)!r}")
    if ctx.prepared:
        p.append(f"2. prepare: done (head {ctx.head_sha[:12]} is ixtool's commit for run "
                 f"{run.id} and contains {pr.base_ref})")
    else:
        merge = not ctx.ws.is_ancestor(ctx.base_sha, ctx.head_sha)
        p.append(f"2. prepare one [skip-sweep] commit on {pr.head_ref}: "
                 + (f"merge {pr.base_ref} ({ctx.base_sha[:12]}) resolving only "
                    f"{reuse.CHANGELOG}, " if merge else "")
                 + "canonicalize the changelog link (or an empty refresh commit)")
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
    p.append(f"5. re-check the head, then squash-merge as {title!r} with ixtool's message")
    c.append(f"PUT {api}/pulls/{pr.number}/merge merge_method=squash sha=<head>")


# ----------------------------------------------------------------------------- execution

def execute(ctx: Context) -> None:
    pr, run, hooks, res = ctx.pr, ctx.run, ctx.hooks, ctx.result
    assert pr is not None and run is not None
    # 1. authorization comment, pinned to the chosen run (G8)
    if not ctx.comment_done:
        posted = ctx.forge.post_comment(pr.number, reuse.comment_body(run.id))
        hooks.say(f"posted {posted.body!r} ({posted.html_url or posted.id})")
        if posted.association not in reuse.AUTHORIZED:
            ctx.add(R.NOT_AUTHORIZED.at(
                ctx.where, None, None,
                f"the comment was posted as {posted.author} ({posted.association}); CI "
                "ignores it, so main would re-run the full sweep — stopping"))
            return
    hooks.after_step("comment")
    # 2.–3. prepare and push
    head = ctx.head_sha if ctx.prepared else prepare_and_push(ctx)
    if ctx.failed:
        return
    res.info["prepared_head"] = head
    # 4. checks
    if not wait_for_checks(ctx, head):
        return
    hooks.after_step("checks")
    # 5. re-check the head, merge
    now = ctx.forge.pull(pr.number)
    if now.merged:
        res.info.update(merge_sha=now.merge_commit_sha, state="merged")
        return
    if now.head_sha != head:
        ctx.add(R.HEAD_MOVED.at(ctx.where, None, None,
                                f"PR head is now {now.head_sha[:12]}, expected {head[:12]}"))
        return
    hooks.after_step("recheck")
    title, body = reuse.squash_message(now, run, ctx.slug)
    bad = reuse.lint_message(f"{title}\n\n{body}")
    if bad:
        ctx.add(R.BODY_LINT.at(ctx.where, None, None,
                               f"refusing to merge: the message contains {', '.join(bad)}"))
        return
    try:
        sha = ctx.forge.squash_merge(pr.number, title=title, body=body, sha=head)
    except ForgeError as exc:
        ctx.add(R.MERGE_REFUSED.at(ctx.where, None, None, exc.message))
        return
    hooks.after_step("squash-merge")
    res.info.update(merge_sha=sha, state="merged")


def prepare_and_push(ctx: Context) -> str:
    """One commit on top of the PR head (merge / canonicalize / refresh), pushed."""
    from inferencex_tools.changelog.merge_ops import canonicalize, resolve_conflict

    pr, run, ws, hooks = ctx.pr, ctx.run, ctx.ws, ctx.hooks
    assert pr is not None and run is not None
    name = reuse.CHANGELOG
    ws.prepare_worktree(pr.number, ctx.head_sha)
    kind = "refresh"
    if not ws.is_ancestor(ctx.base_sha, ctx.head_sha):
        kind = "merge"
        attempt = ws.merge(ctx.base_sha)
        if not attempt.clean:
            others = [p for p in attempt.conflicted if p != name]
            if others:
                ctx.add(R.UNEXPECTED_CONFLICT.at(
                    ctx.where, None, None, "merging main conflicts in " + ", ".join(others)))
                return ""
            stages = [ws.stage(i, name) for i in (1, 2, 3)]
            if any(s is None for s in stages):
                ctx.add(R.CHANGELOG_UNMERGEABLE.at(name, None, None,
                                                   "a conflict stage of the changelog is "
                                                   "missing (added or deleted on one side)"))
                return ""
            try:
                out = resolve_conflict(stages[0] or b"", stages[1] or b"", stages[2] or b"",
                                       pr=pr.number, repo=ctx.slug, label=name)
            except ConflictError as exc:
                ctx.add(R.CHANGELOG_UNMERGEABLE.at(name, None, None, exc.message))
                return ""
            ws.write(name, out.data)
            hooks.say(f"resolved the {name} conflict: {out.message}")
    hooks.after_step("merge")
    main_raw = ws.repo.show(ctx.base_sha, name) or b""
    try:
        canon = canonicalize(main_raw, ws.read(name), pr=pr.number, repo=ctx.slug, label=name)
    except ConflictError as exc:
        ctx.add(R.CHANGELOG_UNMERGEABLE.at(name, None, None, exc.message))
        return ""
    if canon.changed:
        ws.write(name, canon.data)
        kind = "merge" if kind == "merge" else "canonicalize"
        hooks.say(f"canonicalized {name}: {canon.message}")
    hooks.after_step("canonicalize")
    sha: str = ws.commit(reuse.prep_message(pr, run.id, kind))
    hooks.after_step("commit")
    ok, detail = ws.push(sha, pr.head_ref, ctx.head_sha)
    if not ok:
        ctx.add(R.PUSH_REJECTED.at(ctx.where, None, None,
                                   f"push to {pr.head_ref} rejected: {detail or 'no detail'}"))
        return ""
    hooks.say(f"pushed {sha[:12]} to {pr.head_ref} ({kind})")
    hooks.after_step("push")
    return sha


def _latest(runs: list[CheckRun]) -> dict[str, CheckRun]:
    """The newest run per check name (by started_at, then id)."""
    out: dict[str, CheckRun] = {}
    for r in sorted(runs, key=lambda r: (r.started_at, r.id)):
        out[r.name] = r
    return out


def wait_for_checks(ctx: Context, head: str) -> bool:
    """Wait for check-changelog, then for every check run of ``head`` (spec §7 12–13)."""
    pr, hooks, req = ctx.pr, ctx.hooks, ctx.req
    assert pr is not None
    start = hooks.clock()
    phase = CHECK_CHANGELOG
    while True:
        elapsed = hooks.clock() - start
        now = ctx.forge.pull(pr.number)
        if now.head_sha not in (head, ctx.head_sha) or now.merged:
            if now.merged:
                ctx.result.info.update(merge_sha=now.merge_commit_sha, state="merged")
                return False
            ctx.add(R.HEAD_MOVED.at(ctx.where, None, None,
                                    f"PR head moved to {now.head_sha[:12]} while waiting for "
                                    f"checks of {head[:12]}"))
            return False
        latest = _latest(ctx.forge.check_runs(head) + ctx.forge.statuses(head))
        failed = [r for r in latest.values()
                  if r.status == "completed" and (r.conclusion or "") not in OK_CONCLUSIONS]
        gate = latest.get(CHECK_CHANGELOG)
        if phase == CHECK_CHANGELOG and gate is not None and gate.status == "completed":
            phase = "all"
        if failed and (phase != CHECK_CHANGELOG):
            ctx.add(R.CHECK_FAILED.at(ctx.where, None, None, "; ".join(
                f"{r.name} concluded {r.conclusion}" for r in failed)))
            return False
        pending = sorted(n for n, r in latest.items() if r.status != "completed")
        if phase == CHECK_CHANGELOG and gate is None:
            pending = [CHECK_CHANGELOG + " (not started)", *pending]
        if phase == "all" and not pending:
            hooks.progress(f"checks: all {len(latest)} passed after {elapsed:.0f}s")
            ctx.result.info["checks"] = {n: r.conclusion for n, r in sorted(latest.items())}
            return True
        if elapsed >= req.timeout:
            ctx.add(R.CHECK_TIMEOUT.at(ctx.where, None, None,
                                       f"after {elapsed:.0f}s still pending: "
                                       + ", ".join(pending)))
            return False
        hooks.progress(f"waiting for {'check-changelog' if phase != 'all' else 'checks'}: "
                       f"{elapsed:.0f}s elapsed; pending: {', '.join(pending)}")
        hooks.sleep(hooks.poll_interval)


def terminal_confirm(plan: list[str]) -> bool:
    """Ask on the terminal; without one, refuse (the CLI says to pass --yes)."""
    if not sys.stdin.isatty():
        raise UsageError("merge-with-reuse needs confirmation; pass --yes when not "
                         "running on a terminal")
    sys.stderr.write("Proceed? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")
