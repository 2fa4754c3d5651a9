"""``ixtool review`` orchestration: gather what the other services compute about a change
(changelog gate and its fixes, config gate, policy check, launches, matrix, labels) and
return one :class:`~inferencex_tools.review.model.Review`; post it when asked.

The head is the checkout's ``HEAD`` commit (its working tree is what the traces read);
the base side comes from git at merge-base(BASE, HEAD).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.errors import InputError, IxtoolError, UsageError
from inferencex_tools.report.findings import Finding, Severity
from inferencex_tools.review import comments as C
from inferencex_tools.review import shape as S
from inferencex_tools.review.glance import arm_label, arms, label_advice
from inferencex_tools.review.golden import from_policy_rows, launch_k
from inferencex_tools.review.model import (
    REVIEW_MARKER,
    SUMMARY_MARKER,
    LineComment,
    Review,
)

if TYPE_CHECKING:
    from inferencex_tools.io.gitcat import GitReader
    from inferencex_tools.io.github import Forge, PullInfo
    from inferencex_tools.launch.render import RenderedJob

CHANGELOG = "perf-changelog.yaml"
AL_RULES = {"PO403": "AL mismatch", "PO406": "curve mixing", "PO407": "AL of another K",
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
    policy: list[Finding] = field(default_factory=list)

    def adopt(self, findings: list[Finding]) -> list[Finding]:
        """The repository's adoption settings (``[tool.ixtool]`` / ``.ixtool.toml``:
        severities, disabled rules, per-path ignores) applied to ``findings``."""
        from inferencex_tools.io.settings import find_settings, relpath_from
        from inferencex_tools.report.adopt import apply_settings
        from inferencex_tools.report.findings import Result

        settings, _ = find_settings(self.req.root)
        res = Result("review", findings=list(findings))
        apply_settings(res, settings, relpath_from(self.req.root, self.req.root))
        return res.findings

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
    import re

    from inferencex_tools.io.layout import MASTER_RX
    from inferencex_tools.sweep.load import merge_masters

    parts = []
    for p in ctx.git.names(ref, "configs"):
        if re.fullmatch(MASTER_RX, p):
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
        base = req.base or _default_base(git)
        head = git.resolve("HEAD")
        mb = git.merge_base(base, head)
        ctx = _Ctx(req, git, _slug(req, git), base, mb, head, git.changed(mb, head))
        review = _review(ctx)
    finally:
        git.close()
    review.seconds = round(time.monotonic() - started, 2)
    return review


def _review(ctx: _Ctx) -> Review:
    req = ctx.req
    pr_url = req.pr_url
    if pr_url is None and req.pr is not None:
        from inferencex_tools.changelog.links import pr_url as make_url

        pr_url = make_url(ctx.slug, req.pr)
    r = Review(repo=ctx.slug, pr=req.pr, pr_url=pr_url, base=ctx.base,
               merge_base=ctx.merge_base, head_sha=ctx.head, verdict="pass")
    ctx.head_cfg = _configs_at(ctx, ctx.head)
    ctx.base_cfg = _configs_at(ctx, ctx.merge_base)
    ctx.say("review: changelog")
    cl_findings, cl_comments, new_entries = _changelog(ctx)
    r.touched = _touched(ctx, new_entries)
    spec_keys = [k for k in r.touched if S.is_spec(ctx.head_cfg[k])]
    from concurrent.futures import ThreadPoolExecutor

    ctx.say(f"review: policy check ({len(spec_keys)} spec-decoding key(s)), gate, matrix, "
            "launches")
    with ThreadPoolExecutor(max_workers=1) as pool:  # the traces mostly wait
        policy = pool.submit(_policy, ctx, spec_keys)
        gate_findings, stages = _gate(ctx)
        _matrix(ctx, r)
        rendered = _render(ctx, [(k, None) for k in r.touched])
        ok = [k for k in r.touched if any(j.server for j in rendered[k])]
        rendered.update(_render(ctx, _wanted(ctx, ok, spec_keys, proven=False)))
        if any(memory_of(j) for k in ok if k in spec_keys for j in rendered[k]):
            rendered.update(_render(ctx, _wanted(ctx, ok, spec_keys, proven=True)))
        ctx.policy, policy_rows, stages["policy"] = policy.result()
    stages.update(r.stages)  # the review's own matrix stage wins over the gate's
    r.stages = {n: stages.pop(n) for n in ("changelog", "configs", "policy", "matrix")
                if n in stages}
    r.stages.update(stages)
    findings: list[Finding] = cl_findings + [f for f in gate_findings if f.file != CHANGELOG]
    findings += ctx.policy
    _golden(ctx, r, spec_keys, policy_rows)
    findings += _launches(ctx, r, spec_keys, rendered)
    findings = ctx.adopt(findings)
    r.findings = findings
    r.verdict = "fail" if any(f.severity is Severity.ERROR for f in findings) else "pass"
    r.comments, r.other_findings = _place(ctx, r, findings, cl_comments)
    if req.labels is not None:
        r.labels = label_advice(list(req.labels), req.body, req.pr_comments)
    return r


def _changelog(ctx: _Ctx) -> tuple[list[Finding], list[LineComment], list[dict[str, Any]]]:
    """The PR-mode changelog analysis, and suggestions for what ``--fix`` would write."""
    from inferencex_tools.changelog.fix import fix_change
    from inferencex_tools.changelog.validate import Options, analyze_change

    head_raw, _ = ctx.git.blob(ctx.head, CHANGELOG)
    if head_raw is None:
        return [], [], []
    base_raw, _ = ctx.git.blob(ctx.merge_base, CHANGELOG)
    opts = Options(repo=ctx.slug, pr=ctx.req.pr, master_keys=list(ctx.head_cfg) or None)
    a = analyze_change(base_raw or b"", head_raw, CHANGELOG, opts,
                       base_label=f"{CHANGELOG}@{ctx.merge_base[:12]}")
    ctx.sources[CHANGELOG] = head_raw.decode("utf-8", "replace")
    entries = [e.data for e in a.new_entries if isinstance(e.data, dict)]
    if CHANGELOG not in ctx.changed:
        return list(a.findings), [], entries
    fix = fix_change(a, opts)
    if fix.data is None:
        return list(a.findings), [], entries
    commentable = C.added_lines(base_raw, head_raw)
    comments, _ = C.suggestions(CHANGELOG, head_raw, fix.data, ctx.adopt(list(a.findings)),
                                commentable,
                                "; ".join(fix.applied) or "safe fix")
    return list(a.findings), comments, entries


def _gate(ctx: _Ctx) -> tuple[list[Finding], dict[str, str]]:
    """The PR gate's plan, changelog and config stages (the policy stage runs below)."""
    from inferencex_tools.ci.gate import GateRequest, gate

    req = GateRequest(base=ctx.merge_base, head=ctx.head, pr=ctx.req.pr,
                      labels=tuple(ctx.req.labels or ()), repo=ctx.req.root,
                      repo_slug=ctx.slug, priority="none")
    try:
        out = gate(req, policy_stage=None)
    except IxtoolError as exc:
        return [], {"gate": f"error: {exc.message}"}
    stages = dict(out.result.info.get("stages", {}))
    stages.pop("plan", None)
    return list(out.result.findings), stages


def _matrix(ctx: _Ctx, r: Review) -> None:
    from inferencex_tools.sweep.changelog import FromChangelogOptions
    from inferencex_tools.sweep.service import run_from_changelog

    try:
        res = run_from_changelog(ctx.merge_base, ctx.head, Path(CHANGELOG),
                                 FromChangelogOptions(), repo_path=ctx.req.root)
    except IxtoolError as exc:
        r.matrix_error = exc.message
        r.stages["matrix"] = "error"
        return
    rows: list[tuple[str, str, dict[str, Any]]] = []
    m = res.matrix
    for bucket in ("single_node", "multi_node"):
        for rs in (m.get(bucket) or {}).values():
            rows += [(res.plan.key_of(x), "throughput", x) for x in rs]
    for bucket in ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals"):
        rows += [(res.plan.key_of(x), "eval", x) for x in m.get(bucket) or []]
    r.arms = arms(rows)
    r.stages["matrix"] = "ok"


def _policy(ctx: _Ctx, keys: list[str]) -> tuple[list[Finding], list[dict[str, Any]], str]:
    """The policy check of the touched spec-decoding keys: findings, verdict rows, stage."""
    if not keys:
        return [], [], "skipped"
    from inferencex_tools.policy.service import CheckRequest, run_check

    try:
        res = run_check(CheckRequest(root=ctx.req.root, config_keys=keys,
                                     timeout=ctx.req.timeout))
    except IxtoolError as exc:
        return [], [], f"error: {exc.message}"
    for path, text in (res.info.get("sources") or {}).items():
        ctx.sources.setdefault(path, text)
    return list(res.findings), list(res.info.get("rows") or []), "ok" if res.ok else "fail"


def _golden(ctx: _Ctx, r: Review, keys: list[str], rows: list[dict[str, Any]]) -> None:
    from inferencex_tools.policy.store import open_store

    store: Any = None
    try:
        store = open_store(None, None, root=ctx.req.root)
    except IxtoolError:
        store = None
    for key in keys:
        r.golden += from_policy_rows(key, rows, store)


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

def _place(ctx: _Ctx, r: Review, findings: list[Finding], cl_comments: list[LineComment]
           ) -> tuple[list[LineComment], list[Finding]]:
    """Findings → line comments on changed lines (suggestions first), the rest."""
    commentable: dict[str, set[int]] = {}
    for path in {f.file for f in findings if f.line is not None} & set(ctx.changed):
        head_raw, _ = ctx.git.blob(ctx.head, path)
        if head_raw is None:
            continue
        base_raw, _ = ctx.git.blob(ctx.merge_base, path)
        commentable[path] = C.added_lines(base_raw, head_raw)
    covered = {(f.file, f.line, f.rule) for c in cl_comments for f in findings
               if f.file == c.path and f.line is not None
               and (c.start_line or c.line) <= f.line <= c.line and f.rule in c.rules}
    comments = list(cl_comments)
    rest_in: list[Finding] = []
    for f in findings:
        if (f.file, f.line, f.rule) in covered:
            continue
        sug = _al_suggestion(ctx, r, f, commentable)
        if sug is not None:
            comments.append(sug)
            continue
        rest_in.append(f)
    plain, rest = C.line_comments(rest_in, commentable)
    comments += plain
    return comments, rest


def _al_suggestion(ctx: _Ctx, r: Review, f: Finding, commentable: dict[str, set[int]]
                   ) -> LineComment | None:
    """A pinned AL that is not the golden value of the draft launched → the golden value."""
    import re

    if f.rule not in AL_RULES or f.line is None or f.line not in commentable.get(f.file, ()):
        return None
    keys = f.data.get("config_keys") or []
    for g in r.golden:
        if g.mode != "throughput" or g.golden is None or not g.seen or (keys and g.key
                                                                        not in keys):
            continue
        m = re.search(r"(\d+(?:\.\d+)?)\s*$", g.seen)
        text = ctx.head_text(f.file)
        if m is None or text is None:
            continue
        new = f"{g.golden:g}"
        body = (f"**{AL_RULES[f.rule].capitalize()}.** " + C.finding_line(f)
                + f"\n\nThe launched draft `{g.draft or 'native'}` at K={g.k}, {g.thinking}: "
                f"golden {new} in `{g.curve}`.")
        sug = C.value_suggestion(f.file, text, f.line, m.group(1), new, body, [f.rule])
        if sug is not None:
            return sug
    return None


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
