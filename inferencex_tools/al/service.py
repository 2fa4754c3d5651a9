"""``ixtool al audit`` orchestration: artifacts → jobs → measurements → verdicts.

The launches come from the policy check of the repository at ``root`` (every row,
evals at every concurrency); each artifact is matched to its job by the name the
benchmark template gives it (``<prefix><RESULT_FILENAME>``); each job is measured from
its aiperf metrics export (counters) or, failing that, its server logs; the verdicts
are :mod:`.judge`'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.al.judge import Bands, Launch, Verdict, judge, not_measured, where
from inferencex_tools.al.launches import Named, launch_of, name_of
from inferencex_tools.al.measure import (
    LogScan,
    Measurement,
    combine,
    from_export,
    from_logs,
    lines,
)
from inferencex_tools.al.rules import (
    AMBIGUOUS_ARTIFACT,
    ARTIFACT_REFUSED,
    COARSE,
    MEASUREMENT_INVALID,
    ROOT_NOT_AT_HEAD,
    UNMATCHED_ARTIFACT,
)
from inferencex_tools.io.artifacts import READ_ERRORS, Artifact, Limits, Member, Refusal
from inferencex_tools.report.findings import Result

if TYPE_CHECKING:
    from inferencex_tools.io.github import Forge

METRICS_FILE = "server_metrics_export.json"
LOG_SUFFIXES = (".log", ".out")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")


@dataclass
class RunInfo:
    """The audited workflow run (API mode) or the artifact directory (offline)."""

    run_id: int | None = None
    head_sha: str | None = None
    url: str | None = None
    directory: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"run-id": self.run_id, "head-sha": self.head_sha, "url": self.url,
                "artifacts-dir": self.directory}


@dataclass
class AuditRequest:
    root: Path
    artifacts: Sequence[Artifact]
    run: RunInfo = field(default_factory=RunInfo)
    bands: Bands = field(default_factory=Bands)
    root_sha: str | None = None  # HEAD of root (compared with the run's head)
    registry: Path | None = None
    curves_dir: Path | None = None
    timeout: float = 60.0
    jobs: int = 2
    base: str | None = None  # the golden curves of this ref (default: the default branch)
    throughput_only: bool = False  # merge-with-reuse: only the forced-AL question
    isolate: bool | None = None  # the policy check's sandbox (None: the best available)
    allow_unsandboxed: bool = False  # trace without isolation when none is available
    launches: list[Named] | None = None  # precomputed (:func:`launches`), e.g. in tests
    keys: list[str] | None = None  # the config keys to trace (default: :func:`select`)
    refused: list[Refusal] = field(default_factory=list)  # artifacts not even downloaded
    # every artifact name of the run (API mode: the listing, most not downloaded): which
    # job ran is read from all of them
    seen: list[str] = field(default_factory=list)
    rows: list[Named] | None = None  # every row's names (default: :func:`row_names`)


@dataclass
class JobAudit:
    launch: Launch
    runner: str
    artifacts: list[str] = field(default_factory=list)
    measurement: Measurement | None = None
    verdict: Verdict | None = None

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict
        return {**self.launch.to_dict(), "runner": self.runner, "artifacts": self.artifacts,
                "measured": self.measurement.to_dict() if self.measurement else None,
                "verdict": v.status if v else None, "detail": v.detail if v else None,
                "limit": round(v.limit, 4) if v and v.limit is not None else None}


@dataclass
class Audit:
    result: Result
    jobs: list[JobAudit]
    run: RunInfo
    bands: Bands

    @property
    def forced_failures(self) -> list[JobAudit]:
        return [j for j in self.jobs if j.verdict is not None and j.verdict.status == "ERROR"]


# ----------------------------------------------------------------------------- matching

@dataclass
class _Match:
    named: Named
    runner: str
    raw: list[Artifact] = field(default_factory=list)
    logs: list[Artifact] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # every artifact of the job


@dataclass
class Assignment:
    """Artifacts → jobs (index of the launch, runner name), by the template's upload
    rules: an artifact several jobs could have uploaded under that name goes to the one
    the run's other artifacts show ran (an artifact only that job uploads: an eval-only
    job's ``eval_server_logs_…`` beside its ``agentic_…``); what stays open is
    ``ambiguous``."""

    jobs: dict[tuple[int, str], list[tuple[str, str]]] = field(default_factory=dict)
    ambiguous: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)

    def role(self, key: tuple[int, str], name: str) -> str | None:
        return next((r for n, r in self.jobs.get(key, []) if n == name), None)


def _candidates(names: Sequence[Named], artifact_names: Sequence[str]
                ) -> tuple[dict[str, dict[tuple[int, str], str]], list[str]]:
    """Every job (row index, runner) each artifact name fits, with its role; and the
    names that start like an artifact the audit reads but fit no job."""
    by_stem: dict[str, list[int]] = {}  # an upload's name before the runner → rows
    for i, n in enumerate(names):
        for u in n.uploads:
            rows = by_stem.setdefault(u.stem, [])
            if not rows or rows[-1] != i:
                rows.append(i)
    lengths = sorted({len(s) for s in by_stem})
    kinds = {u.kind for n in names for u in n.uploads if u.role != "other" and u.kind}
    cands: dict[str, dict[tuple[int, str], str]] = {}
    unmatched: list[str] = []
    for a in artifact_names:
        hits: dict[tuple[int, str], str] = {}
        for i in (i for n in lengths if n <= len(a) for i in by_stem.get(a[:n], ())):
            got = names[i].upload_of(a)
            if got is not None:
                hits.setdefault((i, got[0]), got[1])
        if hits:
            cands[a] = hits
        elif any(a.startswith(k) for k in kinds):
            unmatched.append(a)
    return cands, unmatched


def assign(names: Sequence[Named], artifact_names: Sequence[str]) -> Assignment:
    cands, unmatched = _candidates(names, artifact_names)
    out = Assignment(unmatched=unmatched)
    ran = {next(iter(h)) for h in cands.values() if len(h) == 1}
    for a, hits in cands.items():
        keys = list(hits)
        if len(keys) > 1:
            shown = [k for k in keys if k in ran]
            if len(shown) != 1:
                out.ambiguous[a] = shown or keys
                continue
            keys = shown
        out.jobs.setdefault(keys[0], []).append((a, hits[keys[0]]))
    return out


def _match(artifacts: Sequence[Artifact], seen: Sequence[str], names: list[Named],
           result: Result) -> dict[tuple[int, str], _Match]:
    """Artifacts → jobs (index of the launch, runner name); every job the names show
    ran, with the artifacts the audit reads (``seen``: every artifact name of the run,
    default: those of ``artifacts``)."""
    by_name = {a.name: a for a in artifacts}
    got = assign(names, list(dict.fromkeys([*seen, *by_name])))
    for name in got.unmatched:
        result.add(UNMATCHED_ARTIFACT.at(
            name, None, None, f"artifact {name!r} is no job of the sweep at --root "
            "(no row's RESULT_FILENAME, runner or mode fits it)"))
    for name, keys in got.ambiguous.items():
        labels = sorted({names[i].launch.label() + f" on {node}" for i, node in keys})
        result.add(AMBIGUOUS_ARTIFACT.at(
            name, None, None, f"artifact {name!r} fits {len(labels)} jobs of the sweep "
            f"({'; '.join(labels[:4])}) and no other artifact of the run shows which one "
            "uploaded it: not read"))
    jobs: dict[tuple[int, str], _Match] = {}
    for (i, node), arts in got.jobs.items():
        m = jobs.setdefault((i, node), _Match(names[i], node))
        for name, role in arts:
            m.names.append(name)
            a = by_name.get(name)
            if a is None:
                continue  # listed, not downloaded (nothing the audit reads)
            if role == "logs":
                m.logs.append(a)
            elif role == "raw":
                m.raw.append(a)
    return jobs


# ----------------------------------------------------------------------------- measuring

def _stream(a: Artifact, member: Member, result: Result) -> Iterator[bytes]:
    try:
        yield from a.chunks(member)
    except READ_ERRORS as exc:
        result.add(ARTIFACT_REFUSED.at(
            f"{a.name}/{member.path}", None, None,
            f"{a.name}/{member.path}: read stopped: {str(exc)[:300]}"))


def _metrics(m: _Match, launch: Launch, result: Result) -> Measurement | None:
    parts: list[Measurement] = []
    for a in m.raw:
        for mem in a.members():
            if mem.path.rsplit("/", 1)[-1] != METRICS_FILE:
                continue
            where = f"{a.name}/{mem.path}"
            try:
                data = a.read(mem, a.limits.max_json)
            except READ_ERRORS as exc:
                result.add(ARTIFACT_REFUSED.at(where, None, None,
                                               f"{where}: not read: {str(exc)[:300]}"))
                continue
            try:
                got = from_export(data, where, launch.engine or "", launch.k)
            except (ValueError, ArithmeticError) as exc:  # Invalid too: hostile numbers
                result.add(MEASUREMENT_INVALID.at(where, None, None,
                                                  f"{where}: {str(exc)[:300]}"))
                continue
            if got is not None:
                parts.append(got)
    if not parts:
        return None
    counted = [p for p in parts if p.drafts is not None]
    if counted:
        try:
            return combine(counted, launch.k)
        except (ValueError, ArithmeticError) as exc:
            result.add(MEASUREMENT_INVALID.at(counted[0].file, None, None, str(exc)))
            return None
    return parts[0]


def _log_members(a: Artifact) -> Iterator[Member]:
    for mem in a.members():
        low = mem.path.lower()
        if low.endswith(LOG_SUFFIXES):
            yield mem
        elif low.endswith(ARCHIVE_SUFFIXES):
            yield from (t for t in a.tar_members(mem) if t.path.lower().endswith(LOG_SUFFIXES))


def _logs(arts: list[Artifact], launch: Launch, result: Result) -> Measurement | None:
    scan = LogScan()
    for a in arts:
        for mem in _log_members(a):
            before = (len(scan.vllm), len(scan.sglang), scan.bad)
            scan.feed(lines(_stream(a, mem, result)))
            if (len(scan.vllm), len(scan.sglang), scan.bad) != before:
                scan.files.append(f"{a.name}/{mem.path}")
    try:
        return from_logs(scan, launch.engine or "", launch.k)
    except (ValueError, ArithmeticError) as exc:  # Invalid too: hostile numbers
        result.add(MEASUREMENT_INVALID.at(scan.files[0] if scan.files else arts[0].name,
                                          None, None, f"{launch.label()}: {exc}"))
        return None


def _job_logs(m: _Match, launch: Launch, result: Result) -> Measurement | None:
    """The server logs' acceptance: the job's log artifacts, else the logs in its
    results tree (the same file is often in both: never read twice)."""
    got = _logs(m.logs, launch, result) if m.logs else None
    return got if got is not None or not m.raw else _logs(m.raw, launch, result)


def _measure(m: _Match, launch: Launch, result: Result) -> tuple[Measurement | None, str]:
    if launch.mode == "throughput":
        got = _metrics(m, launch, result)
        if got is not None and got.source == "counters":
            return got, ""
        logs = _job_logs(m, launch, result)
        if logs is not None:
            return logs, ""
        if got is not None:
            return got, ""
    else:
        got = _job_logs(m, launch, result)
        if got is not None:
            return got, ""
    what = ("aiperf's server_metrics_export.json and the server logs"
            if launch.mode == "throughput" else "the server logs")
    return None, (f"{what} ({', '.join(a.name for a in m.raw + m.logs)}) carry no "
                  f"acceptance counters or lines {launch.engine or 'the engine'} writes")


# ----------------------------------------------------------------------------- the audit

def launches(req: AuditRequest, result: Result | None = None,
             keys: list[str] | None = None) -> list[Named]:
    """The launch and artifact name of every row (of ``keys``), from the policy check of
    ``req.root``."""
    from inferencex_tools.policy.service import (
        CheckRequest,
        check,
        repo_runners,
        repo_workflows,
    )

    checked = check(CheckRequest(root=req.root, registry=req.registry,
                                 curves_dir=req.curves_dir, timeout=req.timeout,
                                 jobs=req.jobs, all_evals=not req.throughput_only,
                                 isolate=req.isolate,
                                 allow_unsandboxed=req.allow_unsandboxed,
                                 config_keys=[_literal(k) for k in keys] if keys else None))
    if result is not None:
        result.info["policy"] = {"rows": len(checked.outcomes),
                                 "errors": len(checked.result.errors),
                                 "isolation": checked.result.info.get("isolation")}
    wf = repo_workflows(req.root)
    labels = repo_runners(req.root).labels or {}
    store = _judging_store(req, result) or checked.store
    assert store is not None  # a check without --base always judges with the curves
    steps = _upload_steps(req.root)
    return [name_of(o.row, o.family, wf, labels, launch_of(o, store), steps)
            for o in checked.outcomes]


def _judging_store(req: AuditRequest, result: Result | None) -> Any:
    """The golden curves as ``review`` and the gate judge a pull request with them: the
    base's (``req.base``, else the repository's default branch), so the audit of a run
    of a PR head names the registry row review names.  None (the checkout's own curves)
    for an explicit --registry, or without git or a default branch."""
    from inferencex_tools.errors import IxtoolError, UsageError
    from inferencex_tools.io.git import default_branch
    from inferencex_tools.io.gitcat import GitReader
    from inferencex_tools.policy.golden import store_at

    if req.registry is not None or req.curves_dir is not None:
        return None
    try:
        git = GitReader(req.root)
    except IxtoolError:
        return None
    try:
        base = req.base or default_branch(git.resolve)
        if base is None:
            return None
        store = store_at(git.root, base, git=git)
        if store is None and req.base is not None:
            raise UsageError(f"--base {req.base!r} does not resolve at {req.root}",
                             hint="give a branch, tag or commit of the repository")
    finally:
        git.close()
    if store is not None and result is not None:
        result.info["golden-curves"] = {"base": base, "registry": store.registry.file}
    return store


def _literal(key: str) -> str:
    """A config key as a glob that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in key)


def row_names(req: AuditRequest) -> list[Named]:
    """The artifact names of every row at ``req.root`` (no tracing; evals at every
    concurrency, so an eval job's artifacts are known as the eval's).  Empty without
    master configs (a repository the audit does not apply to)."""
    from inferencex_tools.errors import InputError
    from inferencex_tools.policy.service import (
        CheckRequest,
        repo_runners,
        repo_workflows,
        row_families,
    )

    try:
        rows = row_families(CheckRequest(root=req.root, all_evals=True))
    except InputError:
        return []
    wf = repo_workflows(req.root)
    labels = repo_runners(req.root).labels or {}
    steps = _upload_steps(req.root)
    return [name_of(row, fam, wf, labels, None, steps) for row, fam in rows]


def _upload_steps(root: Path) -> dict[str, Any]:
    from inferencex_tools.al.uploads import template_uploads
    from inferencex_tools.io.layout import workflow_files

    return template_uploads(workflow_files(root))


def _judged(n: Named, throughput_only: bool) -> bool:
    """Whether the audit judges ``n``'s job (merge-with-reuse: spec-decoding throughput
    jobs only)."""
    return not throughput_only or (not n.eval_only and n.spec != "none")


def select(names: Sequence[Named], artifact_names: Sequence[str], *,
           throughput_only: bool = False) -> tuple[list[str], set[str]]:
    """The config keys of the jobs the named artifacts show ran (to trace), and the
    names of the artifacts the audit reads (to download)."""
    got = assign(names, artifact_names)
    keys: set[str] = set()
    wanted: set[str] = set()
    for (i, _), arts in got.jobs.items():
        if not _judged(names[i], throughput_only):
            continue
        keys.add(names[i].launch.config_key)
        wanted.update(a for a, role in arts if role != "other")
    return sorted(keys), wanted


def _ident(n: Named) -> tuple[Any, ...]:
    la = n.launch
    return (la.config_key, la.entry, la.conc, la.mode, n.family)


def _judge_job(m: _Match, result: Result, bands: Bands) -> JobAudit:
    launch = m.named.launch
    job = JobAudit(launch, m.runner, sorted(m.names))
    if not launch.has_spec:
        why = launch.unchecked or ("the launch does not draft (no speculative decoding)"
                                   if launch.engine else "no server launch was captured")
        job.verdict = not_measured(launch, why)
        return job
    got, why = _measure(m, launch, result)
    job.measurement = got
    read = sorted(a.name for a in m.raw + m.logs) or job.artifacts
    job.verdict = judge(launch, got, bands, read[0]) if got is not None \
        else not_measured(launch, why)
    if job.verdict.finding is not None:
        result.add(job.verdict.finding)
    if got is not None and got.notes:
        file, data = where(launch)
        result.add(COARSE.at(file, None, None, f"{launch.label()}: measured AL "
                             f"{got.al:.3f} ± {got.se:.3f} ({got.source}: {got.file}): "
                             + "; ".join(got.notes), data=data))
    return job


def _refusals(req: AuditRequest, result: Result) -> None:
    """AL101 for what was not read."""
    for r in [*req.refused, *(r for a in req.artifacts for r in a.refused)]:
        where = f"{r.artifact}/{r.path}" if r.path else r.artifact
        result.add(ARTIFACT_REFUSED.at(where, None, None, f"{where}: {r.why}"))


def _inputs(req: AuditRequest, result: Result) -> tuple[list[Named], set[int]]:
    """Every job's names (traced launches for the keys the artifacts belong to, the
    other rows untraced: their artifacts are known, not judged) and the indexes of the
    ones judged."""
    if req.launches is not None:
        return req.launches, {i for i, n in enumerate(req.launches)
                              if _judged(n, req.throughput_only)}
    rows = req.rows if req.rows is not None else row_names(req)
    keys = req.keys if req.keys is not None else select(
        rows, req.seen or [a.name for a in req.artifacts],
        throughput_only=req.throughput_only)[0]
    traced = {_ident(n): n for n in (launches(req, result, keys) if keys else [])}
    mine = set(traced)
    names = [traced.pop(_ident(n), n) for n in rows]
    names += traced.values()  # a traced row the untraced list lacks (never, normally)
    judged = {i for i, n in enumerate(names)
              if _ident(n) in mine and _judged(n, req.throughput_only)}
    return names, judged


def audit(req: AuditRequest) -> Audit:
    result = Result("al audit")
    if req.run.head_sha and req.root_sha and req.root_sha != req.run.head_sha:
        result.add(ROOT_NOT_AT_HEAD.at(
            str(req.root), None, None,
            f"--root is at {req.root_sha[:12]}, the run benchmarked "
            f"{req.run.head_sha[:12]}: rows, launches and curves may differ from the run's"))
    names, judged = _inputs(req, result)
    matched = _match(req.artifacts, req.seen, names, result)
    jobs = [_judge_job(m, result, req.bands) for key, m in sorted(
        matched.items(), key=lambda kv: (kv[0][0], kv[0][1])) if key[0] in judged]
    _refusals(req, result)
    result.checked = [f"{len(req.seen or req.artifacts)} artifact(s) of "
                      + (f"run {req.run.run_id}" if req.run.run_id else
                         str(req.run.directory or "the run"))]
    counts: dict[str, int] = {}
    modes: dict[str, int] = {}
    for j in jobs:
        status = j.verdict.status if j.verdict else "?"
        counts[status] = counts.get(status, 0) + 1
        modes[j.launch.mode] = modes.get(j.launch.mode, 0) + 1
    result.info.update({
        "run": req.run.to_dict(), "jobs": [j.to_dict() for j in jobs], "verdicts": counts,
        "modes": modes,
        "bands": {"sigmas": req.bands.sigmas, "slack": req.bands.slack,
                  "band": req.bands.band, "far": req.bands.far},
        "artifacts": len(req.seen or req.artifacts)})
    return Audit(result, jobs, req.run, req.bands)


def audit_run(req: AuditRequest, forge: Forge, run_id: int, limits: Limits) -> Audit:
    """The audit of run ``run_id``: only the artifacts that belong to a row of ``req.root``
    are downloaded (zip archives in a temporary directory, read in place, removed)."""
    import tempfile

    from inferencex_tools.io.artifacts import download

    names = req.rows = row_names(req)
    if req.throughput_only and not any(_judged(n, True) for n in names):
        req.keys = []  # nothing forces an AL at this commit
        return audit(req)
    run = forge.run(run_id)
    req.run = RunInfo(run_id=run_id, head_sha=run.head_sha, url=run.html_url or None)
    infos = forge.run_artifacts(run_id)
    req.seen = [i.name for i in infos]
    keys, wanted = select(names, req.seen, throughput_only=req.throughput_only)
    req.keys = keys
    with tempfile.TemporaryDirectory(prefix="ixtool-artifacts-") as tmp:
        arts, refused = download(forge, [i for i in infos if i.name in wanted], Path(tmp),
                                 limits)
        req.artifacts, req.refused = arts, [*req.refused, *refused]
        try:
            return audit(req)
        finally:
            for a in arts:
                a.close()
