"""``ixtool review`` orchestration: gather what the other services compute about a change
(changelog gate and its fixes, config gate, policy check, launches, matrix, labels) and
return one :class:`~inferencex_tools.review.model.Review`; post it when asked.

The head is the checkout's ``HEAD`` commit (its working tree is what the traces read);
the base side comes from git at merge-base(BASE, HEAD).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.errors import InputError, IxtoolError, UsageError
from inferencex_tools.report.findings import Finding, Result, Severity
from inferencex_tools.report.inert import code, prose
from inferencex_tools.report.words import plural
from inferencex_tools.review import comments as C
from inferencex_tools.review import shape as S
from inferencex_tools.review.glance import arms, label_advice
from inferencex_tools.review.golden import from_launches, from_policy_rows, jobs_of, launch_k
from inferencex_tools.review.model import (
    REVIEW_MARKER,
    SUMMARY_MARKER,
    GoldenRow,
    LineComment,
    Review,
)
from inferencex_tools.sweep.arms import arm_label

if TYPE_CHECKING:
    from inferencex_tools.io.gitcat import GitReader
    from inferencex_tools.io.github import Forge, PullInfo
    from inferencex_tools.launch.render import RenderedJob

CHANGELOG = "perf-changelog.yaml"
AL_RULES = {"PO403": "AL mismatch", "PO406": "Curve mixing", "PO407": "AL of another K",
            "PO408": "AL of the other thinking mode", "PO409": "AL in the wrong unit"}
MAX_PROVEN = 8  # proven spec-decoding recipes rendered per SKU for the memory rule


@dataclass
class ReviewRequest:
    root: Path
    base: str | None = None
    pr: int | None = None
    repo: str | None = None  # OWNER/NAME
    labels: tuple[str, ...] | None = None  # None: unknown (no PR)
    body: str | None = None
    pr_comments: tuple[str, ...] = ()
    pr_url: str | None = None
    timeout: float = 60.0
    progress: Callable[[str], None] | None = None
    # the repository's adoption controls (settings, baseline) as ``ixtool ci gate`` applies
    # them, on a copy (the CLI's; None: findings as found)
    adopted: Callable[[Result], Result] | None = None
    al_audit: str | None = None  # the Markdown section of `ixtool al audit --markdown`


@dataclass
class _Ctx:
    req: ReviewRequest
    git: GitReader
    slug: str
    base: str
    merge_base: str
    head: str
    changed: list[str]
    head_cfg: dict[str, Any] = field(default_factory=dict)
    base_cfg: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    _added: dict[str, set[int]] = field(default_factory=dict)

    def added(self, path: str) -> set[int]:
        """Head line numbers of ``path`` that the change added or modified."""
        if path not in self._added:
            self._added[path] = self.git.added_lines(self.merge_base, self.head, path)
        return self._added[path]

    def say(self, msg: str) -> None:
        if self.req.progress:
            self.req.progress(msg)

    def head_text(self, path: str) -> str | None:
        if path not in self.sources:
            data, _ = self.git.blob(self.head, path)
            if data is None:
                return None
            self.sources[path] = data.decode("utf-8", "replace")
        return self.sources[path]


# ----------------------------------------------------------------------------- inputs

def _default_base(git: GitReader) -> str:
    from inferencex_tools.io.git import default_branch

    base = default_branch(git.resolve)
    if base is None:
        raise UsageError("no --base given and no default branch (origin/main, "
                         "origin/master, main or master) exists", hint="pass --base REF")
    return base


def _slug(req: ReviewRequest, git: GitReader) -> str:
    from inferencex_tools.changelog.links import repo_slug

    return repo_slug(req.repo, git.remote_slug)


def _configs_at(ctx: _Ctx, ref: str) -> dict[str, Any]:
    from inferencex_tools.io.layout import layout_at, rules_at
    from inferencex_tools.sweep.load import merge_masters

    parts = []  # located as the gate does: by the merge-base's workflows and settings
    for p in layout_at(ctx.git, ref, rules=rules_at(ctx.git, ctx.merge_base)).masters:
        data, _ = ctx.git.blob(ref, p)
        parts.append((p, data or b""))
    if not parts:
        return {}
    try:
        return dict(merge_masters(parts).data)
    except InputError:
        return {}


def _touched(ctx: _Ctx, new_entries: list[dict[str, Any]]) -> list[str]:
    """Config keys of the new changelog entries and keys whose config block changed."""
    from inferencex_tools.changelog.configkeys import resolve_items

    keys: list[str] = []
    names = list(ctx.head_cfg)
    for e in new_entries:
        items = [str(x) for x in e.get("config-keys") or []]
        for res in resolve_items(items, names):
            keys += [k for k in res.matches if k not in keys]
    for k, v in ctx.head_cfg.items():
        if k not in keys and ctx.base_cfg.get(k) != v:
            keys.append(k)
    return [k for k in keys if k in ctx.head_cfg]


# ----------------------------------------------------------------------------- review

def build_review(req: ReviewRequest) -> Review:
    from inferencex_tools.io.gitcat import GitReader

    started = time.monotonic()
    git = GitReader(req.root)
    req.root = git.root  # the traces and the configs are the repository's, not a subdir's
    try:
        _refuse_dirty(git)
        base = req.base or _default_base(git)
        head = git.resolve("HEAD")
        mb = git.merge_base(base, head)
        ctx = _Ctx(req, git, _slug(req, git), base, mb, head, git.changed(mb, head))
        review = _review(ctx)
    finally:
        git.close()
    review.seconds = round(time.monotonic() - started, 2)
    return review


def _refuse_dirty(git: GitReader) -> None:
    """The review is of the ``HEAD`` commit, and its traces read the checkout: a working
    tree that differs from ``HEAD`` would be half reviewed, so it is refused."""
    dirty = git.uncommitted()
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5
                                        else "")
        raise UsageError(f"the working tree differs from HEAD ({plural(len(dirty), 'path')}: "
                         f"{shown}); ixtool review checks the HEAD commit and its checkout, "
                         "and would not see these changes",
                         hint="commit them (or `git stash -u`) and re-run, or review a clean "
                         "checkout of the PR head")


def _review(ctx: _Ctx) -> Review:
    req = ctx.req
    pr_url = req.pr_url
    if pr_url is None and req.pr is not None:
        from inferencex_tools.changelog.links import pr_url as make_url

        pr_url = make_url(ctx.slug, req.pr)
    r = Review(repo=ctx.slug, pr=req.pr, pr_url=pr_url, base=ctx.base,
               merge_base=ctx.merge_base, head_sha=ctx.head, verdict="pass",
               al_audit=req.al_audit)
    ctx.head_cfg = _configs_at(ctx, ctx.head)
    ctx.base_cfg = _configs_at(ctx, ctx.merge_base)
    ctx.say("review: changelog")
    cl = _changelog(ctx)
    r.touched = _touched(ctx, cl.entries)
    spec_keys = [k for k in r.touched if S.is_spec(ctx.head_cfg[k])]
    rows, rendered = _gate_and_launches(ctx, r, spec_keys)
    _golden(ctx, r, spec_keys, rows, rendered)
    own = _launches(ctx, r, spec_keys, rendered)
    if req.adopted is not None:
        own = req.adopted(Result("review", findings=own)).findings
    r.findings = (r.gate.findings if r.gate is not None else []) + own
    r.comments, r.other_findings = _place(ctx, r, r.findings, cl)
    if req.labels is not None:
        r.labels = label_advice(list(req.labels), req.body, req.pr_comments)
    return r


def _gate_and_launches(ctx: _Ctx, r: Review, spec_keys: list[str]
                       ) -> tuple[list[dict[str, Any]], dict[str, list[RenderedJob]]]:
    """The gate (verdict, stages, its policy check's rows) beside the launch renders, then
    the matrix at a glance with the gate's sweep options."""
    from concurrent.futures import ThreadPoolExecutor

    ctx.say("review: the gate (changelog, configs, policy, matrix) and the launches")
    policy: list[Result] = []
    with ThreadPoolExecutor(max_workers=1) as pool:  # the traces mostly wait
        running = pool.submit(_gate, ctx, policy)
        rendered = _render(ctx, [(k, None) for k in r.touched])
        ok = [k for k in r.touched if any(j.server for j in rendered[k])]
        rendered.update(_render(ctx, _wanted(ctx, ok, spec_keys, proven=False)))
        if any(memory_of(j) for k in ok if k in spec_keys for j in rendered[k]):
            rendered.update(_render(ctx, _wanted(ctx, ok, spec_keys, proven=True)))
        outcome, gate_view = running.result()
    r.gate = gate_view
    r.preexisting = list(outcome.present_at_base)  # the gate's own split (ci.gate._configs)
    r.stages = dict(gate_view.info.get("stages", {}))
    r.verdict = "fail" if gate_view.exit_code() else "pass"
    _matrix(ctx, r, outcome)
    if not policy:
        return [], rendered
    for path, text in (policy[0].info.get("sources") or {}).items():
        ctx.sources.setdefault(path, text)
    return list(policy[0].info.get("rows") or []), rendered


@dataclass
class _Changelog:
    """The PR-mode analysis of the changelog and what ``--fix`` would write."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    base_raw: bytes | None = None
    head_raw: bytes | None = None
    fixed: bytes | None = None  # the whole fix (new entries moved to the end …)
    in_place: bytes | None = None  # the same fixes with every entry left where it is
    applied: list[str] = field(default_factory=list)


def _changelog(ctx: _Ctx) -> _Changelog:
    """The PR-mode changelog analysis (as the gate does it), and the fixed file."""
    from inferencex_tools.changelog.fix import fix_change, fix_in_place
    from inferencex_tools.changelog.validate import Options, analyze_change

    head_raw, _ = ctx.git.blob(ctx.head, CHANGELOG)
    if head_raw is None:
        return _Changelog()
    base_raw, _ = ctx.git.blob(ctx.merge_base, CHANGELOG)
    opts = Options(repo=ctx.slug, pr=ctx.req.pr, master_keys=list(ctx.head_cfg) or None)
    a = analyze_change(base_raw or b"", head_raw, CHANGELOG, opts,
                       base_label=f"{CHANGELOG}@{ctx.merge_base[:12]}")
    ctx.sources[CHANGELOG] = head_raw.decode("utf-8", "replace")
    out = _Changelog([e.data for e in a.new_entries if isinstance(e.data, dict)],
                     base_raw, head_raw)
    if CHANGELOG in ctx.changed:
        # without a PR number the gate judges in main mode, where 'XXX' is CL502 too:
        # no placeholder is suggested (the link's comment says why, _unknown_pr)
        known = ctx.req.pr is not None
        fix = fix_change(a, opts, placeholder=known)
        out.fixed, out.applied = fix.data, fix.applied
        if fix.data is not None:
            out.in_place = fix_in_place(a, opts, placeholder=known).data
    return out


def _gate(ctx: _Ctx, policy: list[Result]) -> tuple[Any, Result]:
    """The gate for this pair exactly as ``ixtool ci gate --base BASE --pr N`` runs it
    (the same stages, policy check, settings and baseline), and its result as the
    repository adopts it; the policy check's whole result goes to ``policy``."""
    from inferencex_tools.ci.gate import GateContext, GateRequest, gate, policy_result

    def stage(gctx: GateContext) -> list[Finding]:
        res = policy_result(gctx)
        if res is None:
            return []
        policy.append(res)
        return list(res.findings)

    req = ctx.req
    out = gate(GateRequest(base=ctx.base, head=ctx.head, pr=req.pr,
                           labels=tuple(req.labels or ()), repo=req.root,
                           repo_slug=ctx.slug, adopted=req.adopted), policy_stage=stage)
    view = req.adopted(out.result) if req.adopted is not None else out.result
    return out, view


def _matrix(ctx: _Ctx, r: Review, outcome: Any) -> None:
    """The matrix at a glance: the jobs the change's new entries start, with the sweep
    options of the gate's plan (its labels), as ``sweep from-changelog`` builds them."""
    from inferencex_tools.sweep.changelog import FromChangelogOptions
    from inferencex_tools.sweep.service import run_from_changelog

    if CHANGELOG not in ctx.changed:
        return  # no new entry: no sweep jobs
    s = outcome.decision.sweep
    opts = FromChangelogOptions(trim_conc=s.trim_conc, all_evals=s.all_evals,
                                evals_only=s.evals_only)
    try:
        res = run_from_changelog(ctx.merge_base, ctx.head, Path(CHANGELOG), opts,
                                 repo_path=ctx.req.root)
    except IxtoolError as exc:
        r.matrix_error = exc.message
        return
    rows: list[tuple[str, str, dict[str, Any]]] = []
    m = res.matrix
    for bucket in ("single_node", "multi_node"):
        for rs in (m.get(bucket) or {}).values():
            rows += [(res.plan.key_of(x), "throughput", x) for x in rs]
    for bucket in ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals"):
        rows += [(res.plan.key_of(x), "eval", x) for x in m.get(bucket) or []]
    r.arms = arms(rows)


def _golden(ctx: _Ctx, r: Review, keys: list[str], rows: list[dict[str, Any]],
            rendered: Mapping[str, list[RenderedJob]] | None = None) -> None:
    """The golden-AL table from the gate's policy rows, its job counts and arm names
    from the matrix at a glance (one number for each); a spec-decoding key the sweep
    runs but the change does not touch (no policy rows) from its rendered launches."""
    from inferencex_tools.policy.golden import store_at

    store: Any = store_at(ctx.req.root, ctx.base, git=ctx.git)  # what the gate judges with
    if store is None:
        from inferencex_tools.policy.store import open_store

        try:
            store = open_store(None, None, root=ctx.req.root)
        except IxtoolError:
            store = None
    more = [str(x.get("config-key")) for x in rows]
    for key in dict.fromkeys([*keys, *more]):
        if key in ctx.head_cfg and S.is_spec(ctx.head_cfg[key]):
            got = from_policy_rows(key, rows, store)
            if not got and rendered:
                got = from_launches(key, rendered.get(key, []), store,
                                    str(ctx.head_cfg[key].get("model-prefix")))
            r.golden += got
    if r.matrix_error is None and CHANGELOG in ctx.changed:
        jobs_of(r.golden, r.arms)


# ----------------------------------------------------------------------------- launches

def _pick(ctx: _Ctx, key: str, arms: frozenset[str] | None) -> list[Any]:
    """Rows to render for ``key``: one per arm (its first concurrency); with ``arms``,
    only one row: of the first arm named there, else of the key's first arm."""
    from inferencex_tools.launch.rows import SelectedRow, Selection
    from inferencex_tools.launch.rows import rows_for as launch_rows

    try:
        rows = launch_rows(ctx.req.root, Selection(key))
    except IxtoolError:
        return []
    picked: dict[int | None, SelectedRow] = {}
    for sel in rows:
        picked.setdefault(sel.arm, sel)
    if arms is None:
        return list(picked.values())
    for sel in picked.values():
        if arm_label(sel.row) in arms:
            return [sel]
    return list(picked.values())[:1]


Wanted = tuple[str, frozenset[str] | None]


def _render(ctx: _Ctx, wanted: list[Wanted]) -> dict[str, list[RenderedJob]]:
    """Rendered launches of every key wanted, a few at a time (each trace is a pair of
    sandboxed processes that mostly wait)."""
    from concurrent.futures import ThreadPoolExecutor

    from inferencex_tools.launch.service import render_row, runner_labels, workflows_of

    labels = runner_labels(ctx.req.root)
    workflows = workflows_of(ctx.req.root)  # the job environment, as `launch render` has it
    seen: set[str] = set()
    todo = []
    for key, only in wanted:
        if key not in seen:
            seen.add(key)
            todo += [(key, sel) for sel in _pick(ctx, key, only)]

    def one(item: tuple[str, Any]) -> RenderedJob | None:
        try:
            return render_row(ctx.req.root, item[1], labels, None, timeout=ctx.req.timeout,
                              workflows=workflows)
        except IxtoolError:
            return None

    with ThreadPoolExecutor(max_workers=4) as pool:
        jobs = list(pool.map(one, todo))
    out: dict[str, list[RenderedJob]] = {k: [] for k, _ in wanted}
    for (key, _), job in zip(todo, jobs, strict=True):
        if job is not None:
            out[key].append(job)
    return out


def _launch(job: RenderedJob, key: str, spec: bool, k: int | None = None) -> S.Launch | None:
    if job.server is None:
        return None
    return S.Launch(key, arm_label(job.row), job.script, tuple(job.server.argv),
                    dict(job.server.env), spec, k)


def memory_of(job: RenderedJob) -> bool:
    return job.server is not None and S.memory_fraction(job.server.argv) is not None


def _wanted(ctx: _Ctx, touched: list[str], spec_keys: list[str], *, proven: bool
            ) -> list[Wanted]:
    """Launches to compare with the touched keys' (one arm each, the same arm where they
    have it): their siblings, or (``proven``) the proven spec-decoding recipes on the SKU
    of the spec-decoding ones."""
    from inferencex_tools.launch.rows import arms_of

    wanted: list[Wanted] = []
    for key in touched:
        try:
            mine = frozenset(_arm_labels(ctx.head_cfg[key], arms_of))
        except (TypeError, KeyError, AttributeError):
            mine = frozenset()
        if proven:
            others = _proven(ctx, key) if key in spec_keys else []
        else:
            others = S.siblings(key, ctx.head_cfg)
        wanted += [(k, mine) for k in others if k not in touched]
    return wanted


def _arm_labels(cfg: dict[str, Any], arms_of: Callable[[dict[str, Any]], list[Any]]
                ) -> list[str]:
    out = []
    for arm in arms_of(cfg):
        e = arm.entry
        row = {"tp": e.get("tp"), "ep": e.get("ep"), "pp": e.get("pp"),
               "dcp-size": e.get("dcp-size"), "pcp-size": e.get("pcp-size"),
               "dp-attn": e.get("dp-attn"), "kv-offloading": e.get("kv-offloading")}
        out.append(arm_label(row))
    return out


def _launches(ctx: _Ctx, r: Review, spec_keys: list[str],
              rendered: Mapping[str, list[RenderedJob]]) -> list[Finding]:
    out: list[Finding] = []

    def jobs(key: str) -> list[RenderedJob]:
        return rendered.get(key, [])

    for key in r.touched:
        spec = key in spec_keys
        mine = jobs(key)
        ks = {job.script: _k(job) for job in mine}
        ours = [x for j in mine if (x := _launch(j, key, spec, ks.get(j.script)))]
        others: dict[str, list[S.Launch]] = {}
        for sib in S.siblings(key, ctx.head_cfg):
            sspec = S.is_spec(ctx.head_cfg[sib])
            others[sib] = [x for j in jobs(sib) if (x := _launch(j, sib, sspec, _k(j)))]
            if not others[sib] and jobs(sib) and ours:
                out += _unrendered(sib, jobs(sib))
        if not ours and mine:
            out += _unrendered(key, mine)
        deltas = []
        for theirs in others.values():
            pair = _pair(ours, theirs)
            if pair:
                deltas.append(S.diff(*pair))
        r.deltas += deltas
        for d in deltas:
            if d.ours_script:
                ctx.head_text(d.ours_script)
        out += S.delta_notes(deltas, ctx.sources)
        if spec and ours:
            out += _memory(ctx, key, ours, others, jobs)
    return out


def _unrendered(key: str, jobs: list[RenderedJob]) -> list[Finding]:
    """Why a launch could not be compared: the render's first error, as a note."""
    from inferencex_tools.policy.rules import SHAPE_DELTA

    errs = [f for j in jobs for f in j.findings if f.severity is Severity.ERROR]
    why = f"[{errs[0].rule}] {errs[0].message}" if errs else "no server launch recorded"
    return [SHAPE_DELTA.at(jobs[0].script or key, None, None,
                           f"{key}: launch not rendered, serve shape not compared: {why}",
                           severity=Severity.NOTE, data={"config_keys": [key]})]


def _k(job: RenderedJob) -> int | None:
    if job.server is None:
        return None
    return launch_k(job.server.tool, job.server.argv, job.server.env)


def _pair(ours: list[S.Launch], theirs: list[S.Launch]) -> tuple[S.Launch, S.Launch] | None:
    for o in ours:
        for t in theirs:
            if t.arm == o.arm:
                return o, t
    return (ours[0], theirs[0]) if ours and theirs else None


def _proven(ctx: _Ctx, key: str) -> list[str]:
    """Spec-decoding keys on the same GPU and framework that the base already has,
    unchanged (they ran their sweeps)."""
    return [k for k in S.same_sku_spec(key, ctx.head_cfg)
            if k in ctx.base_cfg and ctx.base_cfg.get(k) == ctx.head_cfg.get(k)][:MAX_PROVEN]


def _memory(ctx: _Ctx, key: str, ours: list[S.Launch], others: Mapping[str, list[S.Launch]],
            jobs: Callable[[str], list[RenderedJob]]) -> list[Finding]:
    proven = [x for k in _proven(ctx, key) for j in jobs(k)[:1] if (x := _launch(j, k, True))]
    non_spec = [x for k, ls in others.items() if not S.is_spec(ctx.head_cfg[k])
                for x in ls[:1]]
    out: list[Finding] = []
    for o in ours:
        if o.script:
            ctx.head_text(o.script)
        f = S.memory_warning(o, proven, non_spec, ctx.sources)
        if f is not None and not any(x.file == f.file and x.line == f.line for x in out):
            out.append(f)
    return out


# ----------------------------------------------------------------------------- placing

def _place(ctx: _Ctx, r: Review, findings: list[Finding], cl: _Changelog
           ) -> tuple[list[LineComment], list[Finding]]:
    """Findings → line comments on changed lines (suggestions first), the rest."""
    commentable = {path: ctx.added(path) for path in
                   {f.file for f in findings if f.line is not None} & set(ctx.changed)}
    comments = _changelog_comments(ctx, cl, [f for f in findings if f.file == CHANGELOG])
    covered = {(f.file, f.line, f.rule) for c in comments for f in findings
               if f.file == c.path and f.line is not None
               and (c.start_line or c.line) <= f.line <= c.line and f.rule in c.rules}
    suggested: set[tuple[str, int]] = set()
    rest_in: list[Finding] = []
    for f in findings:
        if (f.file, f.line, f.rule) in covered:
            continue
        if (f.file, f.line) in suggested and f.rule in AL_RULES:
            continue  # one suggestion per line: the first finding's
        sugg = _al_suggestion(ctx, r, f, commentable)
        if sugg:
            comments += sugg
            suggested.update((c.path, c.line) for c in sugg)
            continue
        rest_in.append(_unknown_pr(ctx, f))
    plain, rest = C.line_comments(rest_in, commentable)
    return comments + plain, rest


def _unknown_pr(ctx: _Ctx, f: Finding) -> Finding:
    """A new entry's link that is not this change's (CL502), on a review that does not
    know the PR number: what to write instead of a suggestion ('XXX' is CL502 here)."""
    from dataclasses import replace

    from inferencex_tools.changelog.links import pr_url
    from inferencex_tools.changelog.rules import LINK_PR

    if ctx.req.pr is not None or f.file != CHANGELOG or f.rule != LINK_PR.id:
        return f
    return replace(f, hint=(
        "The PR number is not known to this review (give --pr N, as CI's gate does), so "
        f"no link is suggested: write this PR's URL, {pr_url(ctx.slug, 'N')}; 'XXX' is "
        "rejected without a PR number."))


def _changelog_comments(ctx: _Ctx, cl: _Changelog, findings: list[Finding]
                        ) -> list[LineComment]:
    """Suggestions that turn the PR's changelog into what ``--fix`` writes, when applying
    all of them yields exactly that file; else the same fixes with the entries left where
    they are (a move to the end cannot be written on the PR's own lines: its finding says
    so in prose); else none."""
    if cl.head_raw is None or cl.fixed is None:
        return []
    commentable = ctx.added(CHANGELOG)
    why = "; ".join(cl.applied) or "safe fix"
    for target in (cl.fixed, cl.in_place):
        if target is None or target == cl.head_raw:
            continue
        comments, _ = C.suggestions(CHANGELOG, cl.head_raw, target, findings, commentable,
                                    why)
        if comments and C.apply(cl.head_raw, comments) == target and all(
                C.keeps_entries(cl.head_raw, c) and C.postable(c.suggestion or "")
                for c in comments):
            return comments
    return []


def _al_suggestion(ctx: _Ctx, r: Review, f: Finding, commentable: dict[str, set[int]]
                   ) -> list[LineComment]:
    """A pinned AL that is not the golden value of the draft launched → the golden value,
    on every line of the file that pins the same setting to the same value."""
    if f.rule not in AL_RULES or f.line is None or f.line not in commentable.get(f.file, ()):
        return []
    text = ctx.head_text(f.file)
    if text is None:
        return []
    for g in _golden_rows_of(r, f):
        m = re.search(r"(\d+(?:\.\d+)?)\s*$", g.seen or "")
        if m is None:
            continue
        old, new = m.group(1), f"{g.golden:g}"
        lines = C.value_lines(text, f.line, old)
        body = (f"**{AL_RULES[f.rule]}.** " + C.finding_line(f)
                + f"\n\nThe launched draft {code(g.draft or 'native')} at K={g.k}, "
                f"{prose(g.thinking or 'thinking mode undetermined')}: golden {new} in "
                f"{code(g.curve or '?')}.")
        sugg = C.value_suggestion(f.file, text, f.line, old, new, body, [f.rule])
        if sugg is None or f.line not in lines:
            continue
        return [sugg, *_same_value(f, text, [n for n in lines if n != f.line], old, new,
                                   commentable.get(f.file, set()), sugg)]
    return []


def _golden_rows_of(r: Review, f: Finding) -> list[GoldenRow]:
    """The throughput lines of the golden-AL table a pinned-AL finding is about."""
    keys = f.data.get("config_keys") or []
    return [g for g in r.golden if g.mode == "throughput" and g.golden is not None and g.seen
            and (not keys or g.key in keys)]


def _same_value(f: Finding, text: str, others: list[int], old: str, new: str,
                commentable: set[int], first: LineComment) -> list[LineComment]:
    """Suggestions for the other lines pinning the same value (their text says so), and
    what ``first`` says about them (one fix = every line that serves the value)."""
    assert f.line is not None
    out: list[LineComment] = []
    by_hand: list[int] = []
    for n in others:
        also = C.value_suggestion(
            f.file, text, n, old, new,
            f"**{AL_RULES[f.rule]}** (the same pinned value as line {f.line}): "
            f"{prose(old)} → {new}; commit it with the suggestion on line {f.line}.",
            [f.rule]) if n in commentable else None
        if also is None:
            by_hand.append(n)
        else:
            out.append(also)
    if out:
        first.body += (f"\n\nThe same value is pinned on line(s) "
                       f"{', '.join(str(c.line) for c in out)}: each has its suggestion; "
                       "commit them together (Add suggestion to batch).")
    if by_hand:
        first.body += (f"\n\nLine(s) {', '.join(map(str, by_hand))} pin the same value "
                       f"{prose(old)} outside the lines this PR changed: set them to {new} "
                       "as well.")
    return out


# ----------------------------------------------------------------------------- posting

@dataclass
class PostOutcome:
    review: str  # posted | exists | nothing
    summary: str  # created | edited | unchanged
    review_id: int | None = None
    comment_id: int | None = None
    calls: list[str] = field(default_factory=list)


BOT_MARKERS = (SUMMARY_MARKER, "<!-- recipe-reminder -->")


def pull_inputs(forge: Forge, number: int) -> tuple[PullInfo, list[str]]:
    """The PR (labels, body, head) and its comment bodies, without the bots' own (they
    quote the checklist phrase)."""
    return forge.pull(number), [c.body for c in forge.comments(number)
                                if not any(m in c.body for m in BOT_MARKERS)]


def post(forge: Forge, number: int, review: Review, summary: str, body: str) -> PostOutcome:
    """One review per head SHA (found by its marker), one sticky summary comment (found by
    its marker among the token user's comments, edited in place)."""
    me = forge.login()
    marker = REVIEW_MARKER.format(sha=review.head_sha)
    out = PostOutcome("nothing", "unchanged")
    if review.comments:
        done = [rv for rv in forge.reviews(number) if marker in rv.body and rv.author == me]
        if done:
            out.review, out.review_id = "exists", done[0].id
        else:
            rv = forge.create_review(number, sha=review.head_sha, body=body,
                                     comments=[c.api() for c in review.comments])
            out.review, out.review_id = "posted", rv.id
    mine = [c for c in forge.comments(number) if SUMMARY_MARKER in c.body and c.author == me]
    if not mine:
        out.comment_id = forge.post_comment(number, summary).id
        out.summary = "created"
    else:
        out.comment_id = mine[0].id
        if mine[0].body != summary:
            forge.edit_comment(number, mine[0].id, summary)
            out.summary = "edited"
    out.calls = list(forge.calls)
    return out


def check_head(info: PullInfo, head: str) -> None:
    if info.head_sha != head:
        raise UsageError(f"the checkout's HEAD {head[:12]} is not the PR head "
                         f"{info.head_sha[:12]}",
                         hint="check out the PR head (e.g. gh pr checkout N) and re-run")
