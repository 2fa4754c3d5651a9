"""``ixtool ci gate``: the whole PR gate in one process.

event → plan (the label policy) → changelog gate → config validation → policy check
→ matrix (+ queue priority, shards of row handles), with every YAML file parsed once
and the findings of all stages in one :class:`Result`; the decisions become outputs.

* The changelog is read at the merge-base and at the head and analysed once; its new
  entries drive the matrix.
* Master configs are split into top-level blocks (:mod:`inferencex_tools.sweep.blocks`):
  config validation checks the blocks the change touched, the matrix parses the
  blocks its entries select; a file that cannot be split safely is parsed whole.
* Trusted inputs come from the base side: the runner labels a row may name (its
  ``runs-on``) are those of ``configs/runners.yaml`` at the base, and the priority
  policy is ``configs/ci-priority.yaml`` at the base.  PR data never widens them.
* Job outputs stay small: the matrix goes to a file (an artifact), outputs carry row
  handles, and the total is checked against GitHub's 1 MB per job.

The policy stage is pluggable (:data:`PolicyStage`): by default it runs only when the
change touches recipe inputs, through the policy area's public function.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferencex_tools.ci import rules as R
from inferencex_tools.ci.labels import LABELS_FILE, ZERO_SHA, Decision, Facts, decide
from inferencex_tools.ci.outputs import output_pairs
from inferencex_tools.errors import GitError, InputError, IxtoolError, UsageError
from inferencex_tools.io.layout import Layout
from inferencex_tools.progress import ProgressFn
from inferencex_tools.report.findings import Finding, Result, Severity
from inferencex_tools.report.words import plural

PRIORITY_POLICY = "configs/ci-priority.yaml"
JOB_OUTPUT_LIMIT = 1_000_000  # bytes for all outputs of one job (GitHub, UTF-16 measured)


@dataclass
class GateRequest:
    event_path: Path | None = None
    event_name: str | None = None
    base: str | None = None
    head: str | None = None
    pr: int | None = None
    labels: tuple[str, ...] = ()
    repo: Path = Path(".")
    changelog: str = "perf-changelog.yaml"
    comments: Path | None = None
    repo_slug: str | None = None
    priority: str = "auto"  # auto (base ref's policy) | none | a file
    namespace: str = "local"
    criteria_json: str = ""
    matrix_out: Path | None = None
    max_shards: int = 4
    runner_allow: tuple[str, ...] = ()
    # the findings as the repository adopts them (settings, baseline): a copy, nothing
    # written; the gate's decisions and outputs count these (None: as found)
    adopted: Callable[[Result], Result] | None = None
    progress: ProgressFn | None = None  # the policy stage's tracing, phase by phase
    # a trace cache the policy stage reads (never writes: the head is untrusted)
    trace_cache: Path | None = None


@dataclass
class GateContext:
    """What the stages share (one git handle, blobs read once)."""

    repo: Any  # io.git.GitRepo
    decision: Decision
    base: str | None  # merge-base (pr) or range base: what the change changed
    head: str
    changed: list[str] = field(default_factory=list)
    blobs: Any = None  # _Blobs: the same (ref, path) reads for every stage
    progress: ProgressFn | None = None
    # the base revision itself (--base, the event's base SHA): the runner allow-list,
    # priority policy and golden curves that judge the change are its own, never those
    # of the fork point the PR chose (any earlier main commit)
    trusted: str | None = None
    # config findings the base has too (not the change's; see _configs)
    present: list[Finding] = field(default_factory=list)
    trace_cache: Path | None = None  # read only (GateRequest.trace_cache)
    # what the policy stage traced (``info["policy"]``: traces, the trace cache's counts)
    policy_info: dict[str, Any] = field(default_factory=dict)


PolicyStage = Callable[[GateContext], list[Finding]]


@dataclass
class GateOutcome:
    decision: Decision
    result: Result
    outputs: list[tuple[str, str]]
    matrix: dict[str, Any] | None = None
    # config findings the base has too: not the change's, not counted (review lists them)
    present_at_base: list[Finding] = field(default_factory=list)


class _Blobs:
    """Blob reads at refs, each (ref, path) read once through one ``git cat-file --batch``."""

    def __init__(self, repo: _Repo, rules_ref: str | None = None) -> None:
        self.repo = repo
        self._cache: dict[tuple[str, str], bytes | None] = {}
        self._layouts: dict[str, Layout] = {}
        # a PR context: the base's workflows and settings locate every revision's files
        self.rules_ref = rules_ref
        self._rules: Any = None

    def get(self, ref: str, path: str) -> bytes | None:
        key = (ref, path)
        if key not in self._cache:
            self._cache[key] = self.repo.show(ref, path)
        return self._cache[key]

    def names(self, ref: str, folder: str, pattern: str) -> list[str]:
        """Files directly in ``folder`` at ``ref`` matching ``pattern`` (full match)."""
        rx = re.compile(pattern)
        return [p for p in self.repo.reader.names(ref, folder) if rx.fullmatch(p)]

    def paths(self, ref: str, *folders: str) -> set[str]:
        """Every file path below ``folders`` at ``ref`` (one ``git ls-tree``)."""
        return self.repo.reader.paths(ref, *folders)

    def layout(self, ref: str) -> Layout:
        """Where ``ref`` keeps its master configs and runners.yaml (io.layout)."""
        if ref not in self._layouts:
            from inferencex_tools.io.layout import layout_at, rules_at

            if self.rules_ref is not None and self._rules is None:
                self._rules = rules_at(self.repo.reader, self.rules_ref)
            self._layouts[ref] = layout_at(self.repo.reader, ref, rules=self._rules)
        return self._layouts[ref]


def _pr_context(req: GateRequest, decision: Decision) -> bool:
    """A change judged against its base: what locates and judges its files is the base's."""
    return req.base is not None or decision.changelog_mode == "pr" or \
        decision.event == "merge_group"


def _layout_moved(blobs: _Blobs, head: str, result: Result) -> None:
    """CI603 when the head's own workflows and settings would locate other files than the
    base's (which the gate follows in a PR context: docs/security.md)."""
    from inferencex_tools.io.layout import layout_at

    if blobs.rules_ref is None:
        return
    used = blobs.layout(head)
    own = layout_at(blobs.repo.reader, head)
    if (own.masters, own.runners) != (used.masters, used.runners):
        result.add(R.LAYOUT_MOVED.at(
            LABELS_FILE, None, None,
            f"the change would read {own.describe()}; this gate read {used.describe()} "
            "(located by the base revision's workflows and settings)"))


def _stage(result: Result, stages: dict[str, str], name: str, fn: Callable[[], Any],
           progress: ProgressFn | None = None) -> Any:
    """Run one stage; an input error becomes a finding of that stage, never a crash."""
    if progress is not None:
        progress(0, None, f"{name} stage")
    before = len(result.findings)
    try:
        out = fn()
    except IxtoolError as exc:
        result.add(R.GATE_STAGE.at(LABELS_FILE, None, None, f"{name}: {exc.message}",
                                   hint=exc.hint))
        stages[name] = "error"
        return None
    n = len(result.findings) - before
    stages[name] = f"{n} finding(s)" if n else "ok"
    return out


# ---------------------------------------------------------------------------- plan

def _plan(req: GateRequest, repo: Any) -> tuple[Decision, str]:
    from inferencex_tools.ci import service as plan_service
    from inferencex_tools.ci.event import facts_from_payload

    if req.event_path is not None:
        if not req.event_name:
            raise UsageError("--event needs the event name",
                             hint="pass --event-name or set $GITHUB_EVENT_NAME")
        payload = plan_service._read_json(req.event_path, "event payload")
        facts = facts_from_payload(req.event_name, payload)
        source = str(req.event_path)
    else:
        if req.base is None:
            raise UsageError("ci gate needs --event PATH or --base REF",
                             hint="in a workflow: --event \"$GITHUB_EVENT_PATH\"")
        facts = Facts(event="pull_request", action="synchronize",
                      labels=frozenset(req.labels), pr_number=req.pr,
                      base_sha=repo.resolve(req.base), head_sha=repo.resolve(req.head or "HEAD"),
                      ref="refs/heads/local")
        source = f"{req.base}..{req.head or 'HEAD'}"
    facts, extra = _local_facts(facts, repo, req.changelog)
    if facts.repo is None and req.repo_slug:
        facts = replace(facts, repo=req.repo_slug)
    facts, _auth = plan_service.checked_facts(facts, req.comments, repo.root)
    decision = decide(facts)
    if not decision.noop:
        decision = replace(decision, findings=(*decision.findings, *extra))
    return decision, source


def _local_facts(facts: Facts, repo: Any, changelog: str) -> tuple[Facts, list[Finding]]:
    """Head message and changelog change from the clone (as ``ci plan``), one git handle."""
    from inferencex_tools.ci.event import with_local_facts

    if facts.head_sha is None:
        return facts, []
    try:
        head = repo.resolve(facts.head_sha)
        message: str | None = repo.message(head)
        if facts.event == "pull_request" and facts.base_sha:
            base: str | None = repo.merge_base(facts.base_sha, head)
        else:
            base = facts.base_sha if facts.base_sha not in (None, "", ZERO_SHA) else None
        changed = None if base is None else repo.show(base, changelog) != repo.show(
            head, changelog)
    except GitError as exc:
        return facts, [R.HEAD_UNAVAILABLE.at(
            LABELS_FILE, None, None, f"cannot inspect the event's commits locally: {exc}")]
    return with_local_facts(facts, head_message=message, changelog_changed=changed), []


class _Repo:
    """The gate's git handle (io.gitcat); the gate never moves a ref."""

    def __init__(self, path: Path) -> None:
        from inferencex_tools.io.gitcat import GitReader

        self.reader = GitReader(path)
        self._mb: dict[tuple[str, str], str] = {}

    @property
    def root(self) -> Path:
        return self.reader.root

    def resolve(self, ref: str) -> str:
        return self.reader.resolve(ref)

    def message(self, ref: str) -> str:
        return self.reader.message(ref)

    def merge_base(self, a: str, b: str) -> str:
        key = (self.resolve(a), self.resolve(b))
        if key not in self._mb:
            self._mb[key] = self.reader.merge_base(*key)
        return self._mb[key]

    def show(self, ref: str, path: str) -> bytes | None:
        return self.reader.blob(ref, path)[0]

    def remote_slug(self, remote: str) -> str | None:
        return self.reader.remote_slug(remote)


# ----------------------------------------------------------------------- changelog

def _slug(req: GateRequest, repo: Any) -> str:
    from inferencex_tools.changelog.links import repo_slug

    return repo_slug(req.repo_slug, repo.remote_slug)


def _master_paths(blobs: _Blobs, ref: str) -> list[str]:
    return list(blobs.layout(ref).masters)


@dataclass
class _NoEntries:
    """The changelog analysis of a repository without a changelog: no new entry (the
    matrix it decides is empty)."""
    new_entries: list[Any] = field(default_factory=list)


def _changelog(req: GateRequest, ctx: GateContext, blobs: _Blobs, masters: list[str],
               result: Result) -> Any:
    from inferencex_tools.changelog.configkeys import top_level_keys
    from inferencex_tools.changelog.validate import (
        Options,
        analyze_change,
        fold_history_quirks,
        validate_standalone,
    )

    d = ctx.decision
    head_raw = blobs.get(ctx.head, req.changelog)
    if head_raw is None and ctx.base is not None and blobs.get(ctx.base, req.changelog) is None:
        # not the change's: the repository had none before it either (it deletes none)
        result.add(R.NO_CHANGELOG.at(req.changelog, None, None,
                                     f"{req.changelog} exists at neither the base "
                                     f"{ctx.base[:12]} nor the head {ctx.head[:12]}: the "
                                     "changelog stage has nothing to judge"))
        return _NoEntries()
    if head_raw is None:
        raise InputError(f"{req.changelog} does not exist at {ctx.head[:12]}",
                         hint="check --changelog (a path inside the repository)")
    keys: list[str] = []
    for p in masters:
        keys += top_level_keys((blobs.get(ctx.head, p) or b"").decode("utf-8", "replace"),
                               source=p)
    opts = Options(repo=_slug(req, ctx.repo), pr=d.pr_number if d.changelog_mode == "pr"
                   else None, master_keys=keys or None)
    if d.changelog_mode == "standalone" or ctx.base is None:
        cl = validate_standalone(head_raw, req.changelog, opts)
        folded = fold_history_quirks(cl.findings, listed=False)  # history: nothing to act on
        result.extend(folded.findings)
        if folded.quirks:
            result.info["unlisted"] = folded.summary(listing=None)
        result.info.setdefault("sources", {})[req.changelog] = cl.text or ""
        return None
    base_raw = blobs.get(ctx.base, req.changelog) or b""
    a = analyze_change(base_raw, head_raw, req.changelog, opts,
                       base_label=f"{req.changelog}@{ctx.base[:12]}")
    result.extend(a.findings)
    result.info.setdefault("sources", {})[req.changelog] = a.head.text or ""
    result.info["new_entries"] = [e.number for e in a.new_entries]
    return a


# -------------------------------------------------------------------------- configs

def _configs(ctx: GateContext, blobs: _Blobs, masters: list[str], result: Result) -> None:
    """Config validation of the change: the blocks it touched — every block when it
    reaches what a block reads besides its own text (runners.yaml, a path added or
    removed under benchmarks/ or runners/, a launcher) — at the head, and the blocks of
    the same keys at the base, wherever the base keeps them (runners.yaml always).  A head
    finding the base has too is not the change's
    (:func:`inferencex_tools.report.adopt.split_known`, the rule ``config validate
    --base`` and ``review`` apply; the master configs are one namespace, so a key that
    moved between files keeps its findings): it goes to :attr:`GateContext.present`.  The
    change's own findings are then judged by the base's contract
    (:func:`inferencex_tools.sweep.contract.judge`)."""
    from inferencex_tools.report.adopt import split_known

    every = ctx.base is None or _reaches_every_block(ctx, blobs)
    head_files, base_files, touched = _config_files(ctx, blobs, masters, every)
    result.info["touched_config_keys"] = touched
    if not head_files:
        return
    head = _validated(ctx, blobs, ctx.head, head_files)
    if ctx.base is None:
        result.extend(head)
        return
    base = _validated(ctx, blobs, ctx.base, base_files)
    new, ctx.present = split_known(head, base, _one_namespace(ctx, blobs))
    result.extend(_by_contract(ctx, blobs, new, base if every else None))
    if ctx.present:
        result.info["known_at_base"] = len(ctx.present)


# (path, text, [(reduced line, original line)]) of one master config, as validated
_Side = list[tuple[str, str, list[tuple[int, int]]]]


def _config_files(ctx: GateContext, blobs: _Blobs, masters: list[str], every: bool
                  ) -> tuple[_Side, _Side, list[str]]:
    """The master-config text validated at the head and at the base, and the keys whose
    blocks the change touched.  The base side holds the blocks of the keys the head side
    validates, from whichever base file holds them (every block when ``every``; a file
    that cannot be split, whole)."""
    from inferencex_tools.changelog.configkeys import top_level_keys
    from inferencex_tools.sweep import blocks as B

    head_side: _Side = []
    touched_keys: list[str] = []
    keys: set[str] = set()
    for p in masters:
        head = (blobs.get(ctx.head, p) or b"").decode("utf-8", "replace")
        base_b = blobs.get(ctx.base, _counterpart(blobs, ctx.base, p)) if ctx.base else None
        base = base_b.decode("utf-8", "replace") if base_b is not None else None
        t = None if every else B.touched(head, base)
        if t is None:  # every block, or a file that cannot be split
            head_side.append((p, head, []))
            keys.update(top_level_keys(head, source=p))
            continue
        blocks_, _ = t
        if not blocks_:
            continue
        touched_keys += [b.key for b in blocks_]
        keys.update(b.key for b in blocks_)
        head_side.append((p, *_reduced(blocks_)))
    return head_side, _base_side(ctx, blobs, None if every else keys), touched_keys


def _base_side(ctx: GateContext, blobs: _Blobs, keys: set[str] | None) -> _Side:
    """The base's master configs as validated against the head side: the blocks of
    ``keys`` in each base file (None: every block)."""
    from inferencex_tools.sweep import blocks as B

    out: _Side = []
    if ctx.base is None:
        return out
    for p in blobs.layout(ctx.base).masters:
        raw = blobs.get(ctx.base, p)
        if raw is None:
            continue
        text = raw.decode("utf-8", "replace")
        split = B.split(text) if keys is not None else None
        if keys is None or split is None:
            out.append((p, text, []))
            continue
        picked = [b for b in split if b.key in keys]
        if picked:
            out.append((p, *_reduced(picked)))
    return out


def _one_namespace(ctx: GateContext, blobs: _Blobs) -> Callable[[str], str]:
    """Finding files as compared with the base: the master configs of either side are
    one namespace of config keys (a key moved to another file keeps its findings)."""
    assert ctx.base is not None
    masters = set(blobs.layout(ctx.head).masters) | set(blobs.layout(ctx.base).masters)
    return lambda p: "(master configs)" if p in masters else p


def _by_contract(ctx: GateContext, blobs: _Blobs, new: list[Finding],
                 base_all: list[Finding] | None) -> list[Finding]:
    """The change's own config findings judged by the base's contract
    (:mod:`inferencex_tools.sweep.contract`); ``base_all``: the base's findings on every
    entry when already known (else validated here, only when an error has a contract)."""
    from inferencex_tools.sweep import contract as C
    from inferencex_tools.sweep.validate import vocabulary

    if not any(C.contract_of(f) and f.severity is Severity.ERROR for f in new):
        return new
    assert ctx.base is not None
    if base_all is None:
        base_all = _validated(ctx, blobs, ctx.base, _base_side(ctx, blobs, None),
                              references=False)
    changed = [(p, _text(blobs, ctx.base, p), _text(blobs, ctx.head, p))
               for p in ctx.changed if p.endswith(".py")]
    return C.judge(new, base_all, C.generator_fields(changed, vocabulary() | {
        x for f in new for x in f.data.get("fields", ())}))


def _text(blobs: _Blobs, ref: str, path: str) -> str | None:
    raw = blobs.get(ref, path)
    return raw.decode("utf-8", "replace") if raw is not None else None


def _validated(ctx: GateContext, blobs: _Blobs, ref: str, files: _Side, *,
               references: bool = True) -> list[Finding]:
    """``config validate`` of ``files`` at ``ref`` (runners.yaml, scripts and launchers of
    that revision, its layout of single-node scripts; config keys not at the base are
    new), at their lines in the files; ``references`` False: no script or recipe checks."""
    from inferencex_tools.sweep.validate import (
        MasterFile,
        ValidateInput,
        folders_of,
        script_dirs,
        validate,
    )

    rpath = blobs.layout(ref).runners
    runners = blobs.get(ref, rpath)
    paths = blobs.paths(ref, "benchmarks", "runners") if references else set()
    base_keys = _base_keys(ctx, blobs) if ctx.base else None
    res = validate(ValidateInput(
        masters=[MasterFile(p, text.encode()) for p, text, _ in files],
        runners=(MasterFile(blobs.layout(ctx.head).runners, runners)
                 if runners is not None else None),
        exists=paths.__contains__ if paths else None,
        base_keys=base_keys,
        scripts=_launch_scripts(blobs, ref, paths) if paths else None,
        script_dirs=script_dirs(folders_of(paths)) if paths else None,
        positions=ref == ctx.head))  # the base's findings are matched without lines
    spans = {p: s for p, _, s in files}
    return [_remap(f, spans.get(f.file) or []) for f in res.findings]


def _base_keys(ctx: GateContext, blobs: _Blobs) -> set[str]:
    """The config keys of the base's master configs."""
    from inferencex_tools.changelog.configkeys import top_level_keys

    assert ctx.base is not None
    keys: set[str] = set()
    for p in blobs.layout(ctx.base).masters:
        raw = blobs.get(ctx.base, p)
        if raw is not None:
            keys.update(top_level_keys(raw.decode("utf-8", "replace"), source=p))
    return keys


def _reaches_every_block(ctx: GateContext, blobs: _Blobs) -> bool:
    """Can the change alter the findings of a block it did not touch?  Blocks read,
    besides their own text, runners.yaml, which paths exist under benchmarks/ and
    runners/, and the launchers (where multinode recipes come from)."""
    from inferencex_tools.sweep.recipes import is_launch_script

    assert ctx.base is not None
    head, base = blobs.layout(ctx.head), blobs.layout(ctx.base)
    if head.runners != base.runners or head.config_dir != base.config_dir:
        return True
    changed = set(ctx.changed)
    if head.runners in changed:
        return True
    reach = [p for p in changed if p.startswith(("benchmarks/", "runners/"))]
    if not reach:
        return False
    before = blobs.paths(ctx.base, "benchmarks", "runners")
    after = blobs.paths(ctx.head, "benchmarks", "runners")
    return any(is_launch_script(p) or (p in before) != (p in after) for p in reach)


def _counterpart(blobs: _Blobs, ref: str, path: str) -> str:
    """The master config of ``ref`` that corresponds to ``path`` (the same file name in
    that revision's config folder: a change may move the folder)."""
    name = path.rsplit("/", 1)[-1]
    return next((p for p in blobs.layout(ref).masters if p.rsplit("/", 1)[-1] == name), path)


def _launch_scripts(blobs: _Blobs, ref: str, paths: set[str]) -> dict[str, str]:
    """The launchers' text at ``ref`` (where multinode recipes come from)."""
    from inferencex_tools.sweep.recipes import follow_git_symlinks, is_launch_script

    out: dict[str, str] = {}
    for p in sorted(paths):
        if is_launch_script(p):
            raw = blobs.get(ref, p)
            if raw is not None:
                out[p] = raw.decode("utf-8", "replace")
    return follow_git_symlinks(out)


def _reduced(blocks_: list[Any]) -> tuple[str, list[tuple[int, int]]]:
    """The touched blocks as one document, with (reduced line, original line) spans."""
    text, cursor, spans = "", 1, []
    for b in blocks_:
        spans.append((cursor, b.line))
        body = b.text if b.text.endswith("\n") else b.text + "\n"
        text += body
        cursor += body.count("\n")
    return text, spans


def _remap(f: Finding, spans: list[tuple[int, int]]) -> Finding:
    """A finding on the reduced document, at its line in the real file."""
    if not spans or f.line is None:
        return f
    start, orig = max((s for s in spans if s[0] <= f.line), default=spans[0])
    return replace(f, line=orig + (f.line - start))


# --------------------------------------------------------------------------- policy

def default_policy_stage(ctx: GateContext) -> list[Finding]:
    """The policy check of the change: the policy area's incremental check (the same
    code as ``ixtool policy check --base``, which decides what the change can reach) on
    the gate's own git reader."""
    res = policy_result(ctx)
    if res is None:
        return []
    ctx.policy_info.update({k: res.info[k] for k in ("traces", "unique-traces",
                                                     "trace-cache", "isolation")
                            if k in res.info})
    ctx.policy_info["rows"] = [[r.get(k) for k in ("config-key", "entry", "conc", "mode",
                                                   "family")]
                               for r in res.info.get("rows") or [] if isinstance(r, dict)]
    return list(res.findings)


def policy_result(ctx: GateContext) -> Result | None:
    """The whole result of the policy check :func:`default_policy_stage` runs (findings
    and ``info``: its verdict rows, the traced keys); None without a base (nothing to
    compare).  ``ixtool review`` builds its golden-AL table from the gate's own check
    through it."""
    if ctx.base is None:
        return None
    from inferencex_tools.policy import service as policy_service

    return policy_service.run_check(policy_service.CheckRequest(
        root=ctx.repo.root, base=ctx.trusted or ctx.base, head=ctx.head,
        git=ctx.repo.reader, progress=ctx.progress,
        trace_cache=ctx.trace_cache, trace_cache_write=False))


# --------------------------------------------------------------------------- matrix

def _snapshot(ctx: GateContext, blobs: _Blobs, masters: list[str], ref: str,
              entries: list[dict[str, Any]]) -> Any:
    """Configs at ``ref`` for the keys the entries select (blocks), runners.yaml."""
    from inferencex_tools.sweep import blocks as B
    from inferencex_tools.sweep.changelog import Snapshot, resolve_entry_keys
    from inferencex_tools.sweep.load import merge_masters, parse_runners
    from inferencex_tools.sweep.service import validate_for_generation

    masters = _master_paths(blobs, ref)  # this ref's own layout
    texts = [(p, (blobs.get(ref, p) or b"").decode("utf-8", "replace")) for p in masters]
    runners = blobs.layout(ref).runners
    runners_raw = blobs.get(ref, runners)
    if runners_raw is None:
        raise InputError(f"no {runners} at {ref[:12]}",
                         hint=f"the revision needs {runners}; check --base")
    try:
        split = B.split_files(texts)
        all_keys = [b.key for _, blocks in split for b in blocks]
        wanted: set[str] = set()
        for e in entries:
            wanted.update(resolve_entry_keys(list(e.get("config-keys") or []), all_keys))
        # keys outside the selection stay known (for globs) but unparsed
        configs = B.configs_of(split, wanted, {p: t.encode() for p, t in texts})
    except B.Unsplittable:
        configs = merge_masters([(p, t.encode()) for p, t in texts])
    validate_for_generation(configs)
    return Snapshot(configs, parse_runners(runners_raw, f"{runners}@{ref[:12]}"))


def _trusted_ref(ctx: GateContext) -> str | None:
    """The revision whose runners.yaml and priority policy apply: the base revision
    itself; without one the head only outside a PR (a push's head is the branch itself),
    else none (fail closed: a PR's own runners.yaml never allow-lists a label)."""
    if ctx.trusted is not None:
        return ctx.trusted
    return None if ctx.decision.changelog_mode == "pr" else ctx.head


def _allowed_runners(ctx: GateContext, blobs: _Blobs, extra: tuple[str, ...]) -> set[str]:
    from inferencex_tools.io.yamlio import load_safe

    ref = _trusted_ref(ctx)
    labels: set[str] = set(extra)
    if ref is None:
        return labels
    runners = blobs.layout(ref).runners
    raw = blobs.get(ref, runners)
    if raw is not None:
        from inferencex_tools.sweep.load import runners_document

        data = runners_document(load_safe(raw, source=f"{runners}@{ref[:12]}"))
        if isinstance(data, dict) and isinstance(data.get("labels"), dict):
            labels.update(str(k) for k in data["labels"])
    return labels


def _priority(req: GateRequest, ctx: GateContext, blobs: _Blobs, matrix: dict[str, Any]
              ) -> dict[str, Any]:
    from inferencex_tools.ci.priority import Context, annotate, parse_policy, parse_string_list
    from inferencex_tools.io.yamlio import load_safe

    if req.priority == "none":
        return matrix
    if req.priority == "auto":
        ref = _trusted_ref(ctx)
        path = f"{blobs.layout(ref).config_dir}/{PRIORITY_POLICY.rsplit('/', 1)[-1]}" \
            if ref is not None else ""
        raw = blobs.get(ref, path) if ref is not None else None
        if raw is None or ref is None:
            return matrix
        label = f"{path}@{ref[:12]}"
        policy = parse_policy(load_safe(raw, source=label), label)
    else:
        from inferencex_tools.ci.priority_service import load_policy

        policy = load_policy(req.priority)
    d = ctx.decision
    pctx = Context(event_name=d.event, labels=frozenset(d.labels) | frozenset(d.policy_labels),
                   namespace=req.namespace, pr_number=d.pr_number,
                   criteria=parse_string_list(req.criteria_json, "--criteria-json"))
    out: dict[str, Any] = annotate(matrix, policy, pctx)
    return out


def _matrix(req: GateRequest, ctx: GateContext, blobs: _Blobs, masters: list[str],
            analysis: Any, result: Result) -> dict[str, Any] | None:
    from inferencex_tools.sweep.changelog import FromChangelogOptions, build_matrix
    from inferencex_tools.sweep.generate import generate_matrix

    if analysis is None:
        raise InputError("the matrix needs the changelog range (no base revision)",
                         hint="give --base REF, or run on a pull_request, push or merge_group "
                         "event")
    entries = [e.data for e in analysis.new_entries if isinstance(e.data, dict)]
    s = ctx.decision.sweep
    opts = FromChangelogOptions(trim_conc=s.trim_conc, all_evals=s.all_evals,
                                evals_only=s.evals_only)
    head = _snapshot(ctx, blobs, masters, ctx.head, entries)
    base = (_snapshot(ctx, blobs, masters, ctx.base, entries)
            if ctx.base and any(e.get("append-only") for e in entries) else None)
    if base is not None and ctx.base is not None:  # append-only compares whole configs
        from inferencex_tools.sweep.load import merge_masters

        for snap, ref in ((head, ctx.head), (base, ctx.base)):
            snap.configs = merge_masters([(p, blobs.get(ref, p) or b"")
                                          for p in _master_paths(blobs, ref)])
    matrix = build_matrix(entries, head, base, opts, generate_matrix,
                          base_ref=ctx.base or "", head_ref=ctx.head)
    allowed = _allowed_runners(ctx, blobs, req.runner_allow)
    _check_runners(matrix, allowed, result)
    return _priority(req, ctx, blobs, matrix)


def _check_runners(matrix: dict[str, Any], allowed: set[str], result: Result) -> None:
    """Every row's runner label must be on the trusted allow-list (base runners.yaml)."""
    from inferencex_tools.ci.shards import _buckets

    bad: dict[str, int] = {}
    for _, rows in _buckets(matrix):
        for row in rows:
            label = row.get("runner") if isinstance(row, dict) else None
            if not isinstance(label, str) or label not in allowed:
                bad[str(label)] = bad.get(str(label), 0) + 1
    for label, n in sorted(bad.items()):
        result.add(R.RUNNER_NOT_ALLOWED.at(
            LABELS_FILE, None, None,
            f"{plural(n, 'sweep row')} name runner label {label!r}, which is not in the base "
            "revision's configs/runners.yaml: no job is started on it"))


# --------------------------------------------------------------------------- outputs

def _errors(req: GateRequest, result: Result) -> int:
    """Error findings after the repository's adoption settings (a disabled rule, a
    finding known in the baseline, do not fail the gate)."""
    return len((req.adopted(result) if req.adopted else result).errors)


def _adopted_decision(req: GateRequest, d: Decision) -> Decision:
    """The plan's decision with its findings as the repository adopts them."""
    if req.adopted is None or not d.findings:
        return d
    view = req.adopted(Result(command="ci gate", findings=list(d.findings)))
    return replace(d, findings=tuple(view.findings))


def _shard_outputs(matrix: dict[str, Any] | None, d: Decision, max_shards: int,
                   result: Result, errors: int) -> list[tuple[str, str]]:
    from inferencex_tools.ci.shards import make_shards

    empty = [("jobs", "0"), ("shard-count", "0"), ("canary-row", "[]")] + [
        (f"shard-{i}", "[]") for i in range(1, max_shards + 1)]
    if matrix is None or errors:
        return empty
    sh = make_shards(matrix, max_shards=max_shards, canary=d.sweep.canary)
    result.extend(sh.findings)
    pairs = [("jobs", str(sh.total)), ("shard-count", str(sum(1 for s in sh.shards if s))),
             ("canary-row", json.dumps(sh.canary, separators=(",", ":")))]
    pairs += [(f"shard-{i}", json.dumps(s, separators=(",", ":")))
              for i, s in enumerate(sh.shards, 1)]
    return pairs


def output_size(pairs: list[tuple[str, str]]) -> int:
    """Bytes the outputs take as GitHub measures them (UTF-16)."""
    return sum(len(k.encode("utf-16-le")) + len(v.encode("utf-16-le")) for k, v in pairs)


# ----------------------------------------------------------------------------- gate

def gate(req: GateRequest, policy_stage: PolicyStage | None = default_policy_stage
         ) -> GateOutcome:
    repo = _Repo(req.repo)
    try:
        return _gate(req, repo, policy_stage)
    finally:
        repo.reader.close()


def _gate(req: GateRequest, repo: _Repo, policy_stage: PolicyStage | None) -> GateOutcome:
    decision, source = _plan(req, repo)
    result = Result(command="ci gate", checked=[source])
    result.extend(decision.findings)
    stages: dict[str, str] = {"plan": "ok"}
    matrix: dict[str, Any] | None = None
    present: list[Finding] = []
    if not decision.noop:
        head = repo.resolve(decision.diff_head or req.head or "HEAD")
        base = decision.diff_base if decision.diff_base not in (None, "", ZERO_SHA) else None
        trusted = None
        if base is not None:
            try:
                trusted = repo.resolve(base)
                base = (repo.merge_base(trusted, head) if decision.changelog_mode == "pr"
                        else trusted)
            except GitError as exc:
                result.add(R.HEAD_UNAVAILABLE.at(LABELS_FILE, None, None,
                                                 f"base revision unavailable: {exc}"))
                base = trusted = None
        blobs = _Blobs(repo, base if _pr_context(req, decision) else None)
        ctx = GateContext(repo=repo, decision=decision, base=base, head=head, blobs=blobs,
                          trusted=trusted, progress=req.progress,
                          trace_cache=req.trace_cache)
        if base is not None:
            ctx.changed = _changed_paths(repo, base, head)
        masters = _master_paths(blobs, head)
        _layout_moved(blobs, head, result)
        analysis = None
        if decision.changelog_gate:
            analysis = _stage(result, stages, "changelog", lambda: _changelog(
                req, ctx, blobs, masters, result), req.progress)
            _stage(result, stages, "configs", lambda: _configs(ctx, blobs, masters, result),
                   req.progress)
            present = ctx.present
        else:
            stages["changelog"] = stages["configs"] = "skipped"
        if decision.policy_check and policy_stage is not None:
            _stage(result, stages, "policy", lambda: result.extend(policy_stage(ctx)),
                   req.progress)
            if ctx.policy_info:
                result.info["policy"] = ctx.policy_info
        else:
            stages["policy"] = "skipped"
        sweep_ok = decision.sweep.run and not _errors(req, result)
        if sweep_ok:
            matrix = _stage(result, stages, "matrix", lambda: _matrix(
                req, ctx, blobs, masters, analysis, result), req.progress)
        else:
            stages["matrix"] = "skipped"
        if matrix is not None and req.matrix_out is not None:
            from inferencex_tools.io.files import atomic_write

            atomic_write(req.matrix_out, (json.dumps(matrix) + "\n").encode())
    outputs = _outputs(req, decision, result, stages, matrix)
    decision = _adopted_decision(req, decision)  # the summary and explanation agree
    result.info["decision"] = decision.to_dict()
    result.info["stages"] = stages
    result.info["skipped"] = _why_skipped(req, decision, result, stages,
                                          no_policy=policy_stage is None)
    result.info["outputs"] = {k: v for k, v in outputs if k != "decision"}
    return GateOutcome(decision, result, outputs, matrix, present)


def _why_skipped(req: GateRequest, d: Decision, result: Result, stages: dict[str, str], *,
                 no_policy: bool) -> dict[str, str]:
    """Why each skipped stage did not run (``matrix skipped`` alone says nothing)."""
    why: dict[str, str] = {}
    for name in (n for n, state in stages.items() if state == "skipped"):
        if name in ("changelog", "configs"):
            why[name] = f"a {d.event} event runs no changelog gate"
        elif name == "policy":
            why[name] = ("--no-policy" if no_policy and d.policy_check
                         else f"a {d.event} event runs no policy check")
        elif not d.sweep.run:
            why[name] = d.sweep.reason or f"a {d.event} event runs no sweep"
        else:
            n = _errors(req, result)
            why[name] = f"{plural(n, 'error')} in the stages before it" if n else "no sweep"
    return why


def _outputs(req: GateRequest, decision: Decision, result: Result, stages: dict[str, str],
             matrix: dict[str, Any] | None) -> list[tuple[str, str]]:
    errors = _errors(req, result)
    pairs = [(k, v) for k, v in output_pairs(_adopted_decision(req, decision))
             if k not in ("errors", "sweep")]
    sweep = decision.sweep.run and errors == 0 and matrix is not None
    pairs += [("sweep", "true" if sweep else "false"), ("errors", str(errors)),
              ("gate", "fail" if errors else "pass"),
              ("stages", json.dumps(stages, separators=(",", ":"))),
              ("matrix-file", str(req.matrix_out) if matrix is not None and req.matrix_out
               else "")]
    pairs += _shard_outputs(matrix if sweep else None, decision, req.max_shards, result,
                            errors)
    size = output_size(pairs)
    if size > JOB_OUTPUT_LIMIT:
        result.add(R.OUTPUT_LIMIT.at(LABELS_FILE, None, None,
                                     f"the gate's outputs take {size:,} bytes, over GitHub's "
                                     f"{JOB_OUTPUT_LIMIT:,} per job"))
        pairs = [(k, "[]" if k.startswith("shard-") or k == "canary-row" else v)
                 for k, v in pairs]
        pairs = [(k, "fail" if k == "gate" else v) for k, v in pairs]
    result.info["output_bytes"] = output_size(pairs)
    return pairs


def _changed_paths(repo: _Repo, base: str, head: str) -> list[str]:
    try:
        return repo.reader.changed(base, head)
    except GitError:
        return []
