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

from inferencex_tools.al.judge import Bands, Launch, Verdict, judge, not_measured
from inferencex_tools.al.launches import Named, launch_of, name_of
from inferencex_tools.al.measure import (
    Invalid,
    LogScan,
    Measurement,
    combine,
    from_export,
    from_logs,
    lines,
)
from inferencex_tools.al.rules import (
    ARTIFACT_REFUSED,
    MEASUREMENT_INVALID,
    ROOT_NOT_AT_HEAD,
    UNMATCHED_ARTIFACT,
)
from inferencex_tools.io.artifacts import READ_ERRORS, Artifact, Limits, Member, Refusal
from inferencex_tools.report.findings import Result

if TYPE_CHECKING:
    from inferencex_tools.io.github import Forge

# The artifacts of a benchmark job (the reference benchmark templates' upload names):
# prefix → (what it holds, the job mode it belongs to; None: either).
PREFIXES: tuple[tuple[str, str, str | None], ...] = (
    ("eval_server_logs_", "logs", "eval"),
    ("server_logs_", "logs", "throughput"),
    ("multinode_server_logs_", "logs", None),
    ("agentic_", "raw", None),
)
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
    throughput_only: bool = False  # merge-with-reuse: only the forced-AL question
    isolate: bool | None = None  # the policy check's sandbox (None: the best available)
    allow_unsandboxed: bool = False  # trace without isolation when none is available
    launches: list[Named] | None = None  # precomputed (:func:`launches`), e.g. in tests
    keys: list[str] | None = None  # the config keys to trace (default: :func:`select`)
    refused: list[Refusal] = field(default_factory=list)  # artifacts not even downloaded
    unmatched: list[str] = field(default_factory=list)  # job artifacts of no row (listed)


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


def _classify(name: str) -> tuple[str, str, str | None] | None:
    for prefix, role, mode in PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):], role, mode
    return None


def _match(artifacts: Sequence[Artifact], names: list[Named], result: Result
           ) -> dict[tuple[int, str], _Match]:
    """Artifacts → jobs (index of the launch, runner name)."""
    jobs: dict[tuple[int, str], _Match] = {}
    for a in artifacts:
        c = _classify(a.name)
        if c is None:
            continue
        rest, role, mode = c
        hits = [(i, n, node) for i, n in enumerate(names) if (node := n.matches(rest))]
        if mode is not None:
            hits = [h for h in hits if h[1].eval_only == (mode == "eval")]
        elif len({h[1].eval_only for h in hits}) > 1:  # either: the throughput job's
            hits = [h for h in hits if not h[1].eval_only]
        if not hits:
            result.add(UNMATCHED_ARTIFACT.at(
                a.name, None, None, f"artifact {a.name!r} is no job of the sweep at --root "
                "(no row's RESULT_FILENAME, runner or mode fits it)"))
            continue
        i, n, node = hits[0]
        m = jobs.setdefault((i, node), _Match(n, node))
        (m.logs if role == "logs" else m.raw).append(a)
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
            except ValueError as exc:  # Invalid too
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
        except Invalid as exc:
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
            before = (len(scan.vllm), len(scan.sglang))
            scan.feed(lines(_stream(a, mem, result)))
            if (len(scan.vllm), len(scan.sglang)) != before:
                scan.files.append(f"{a.name}/{mem.path}")
    try:
        return from_logs(scan, launch.engine or "", launch.k)
    except Invalid as exc:
        result.add(MEASUREMENT_INVALID.at(scan.files[0] if scan.files else arts[0].name,
                                          None, None, f"{launch.label()}: {exc}"))
        return None


def _measure(m: _Match, launch: Launch, result: Result) -> tuple[Measurement | None, str]:
    if launch.mode == "throughput":
        got = _metrics(m, launch, result)
        if got is not None and got.source == "counters":
            return got, ""
        logs = _logs(m.logs or m.raw, launch, result)
        if logs is not None:
            return logs, ""
        if got is not None:
            return got, ""
    else:
        got = _logs(m.logs or m.raw, launch, result)
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
    store = checked.store
    assert store is not None  # a check without --base always judges with the curves
    return [name_of(o.row, o.family, wf, labels, launch_of(o, store))
            for o in checked.outcomes]


def _literal(key: str) -> str:
    """A config key as a glob that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in key)


def row_names(req: AuditRequest) -> list[Named]:
    """The artifact names of every row at ``req.root`` (no tracing); with
    ``throughput_only``, of the spec-decoding throughput rows only.  None without master
    configs (a repository the audit does not apply to)."""
    from inferencex_tools.errors import InputError
    from inferencex_tools.policy.service import (
        CheckRequest,
        repo_runners,
        repo_workflows,
        row_families,
    )

    creq = CheckRequest(root=req.root, all_evals=not req.throughput_only)
    try:
        rows = row_families(creq)
    except InputError:
        return []
    wf = repo_workflows(req.root)
    labels = repo_runners(req.root).labels or {}
    names = [name_of(row, fam, wf, labels, None) for row, fam in rows]
    if req.throughput_only:  # the forced-AL question: spec-decoding throughput jobs only
        names = [n for n in names if not n.eval_only and n.spec != "none"]
    return names


def select(names: Sequence[Named], artifact_names: Sequence[str]) -> tuple[list[str], set[str]]:
    """The config keys whose rows the named artifacts belong to, and the names of the
    artifacts that belong to a row, so only those keys are traced and only those
    artifacts downloaded."""
    keys: set[str] = set()
    wanted: set[str] = set()
    for a in artifact_names:
        c = _classify(a)
        if c is None:
            continue
        hit = {n.launch.config_key for n in names if n.matches(c[0])}
        keys.update(hit)
        if hit:
            wanted.add(a)
    return sorted(keys), wanted


def _judge_job(m: _Match, result: Result, bands: Bands) -> JobAudit:
    launch = m.named.launch
    job = JobAudit(launch, m.runner, sorted(a.name for a in m.raw + m.logs))
    if not launch.has_spec:
        why = launch.unchecked or ("the launch does not draft (no speculative decoding)"
                                   if launch.engine else "no server launch was captured")
        job.verdict = not_measured(launch, why)
        return job
    got, why = _measure(m, launch, result)
    job.measurement = got
    job.verdict = judge(launch, got, bands, job.artifacts[0]) if got is not None \
        else not_measured(launch, why)
    if job.verdict.finding is not None:
        result.add(job.verdict.finding)
    return job


def _refusals(req: AuditRequest, result: Result) -> None:
    """AL101 for what was not read, AL103 for job artifacts of no row not downloaded."""
    for r in [*req.refused, *(r for a in req.artifacts for r in a.refused)]:
        where = f"{r.artifact}/{r.path}" if r.path else r.artifact
        result.add(ARTIFACT_REFUSED.at(where, None, None, f"{where}: {r.why}"))
    for name in req.unmatched:
        result.add(UNMATCHED_ARTIFACT.at(
            name, None, None, f"artifact {name!r} is no job of the sweep at --root (no "
            "row's RESULT_FILENAME, runner or mode fits it)"))


def _inputs(req: AuditRequest, result: Result) -> tuple[list[Named], list[Artifact]]:
    """The launches to match (traced for the keys the artifacts belong to) and the
    artifacts to read."""
    if req.launches is not None:
        names = req.launches
    else:
        keys = req.keys if req.keys is not None else \
            select(row_names(req), [a.name for a in req.artifacts])[0]
        names = launches(req, result, keys) if keys else []
    if not req.throughput_only:
        return names, list(req.artifacts)
    return ([n for n in names if not n.eval_only],
            [a for a in req.artifacts if (_classify(a.name) or ("", "", ""))[2] != "eval"])


def audit(req: AuditRequest) -> Audit:
    result = Result("al audit")
    if req.run.head_sha and req.root_sha and req.root_sha != req.run.head_sha:
        result.add(ROOT_NOT_AT_HEAD.at(
            str(req.root), None, None,
            f"--root is at {req.root_sha[:12]}, the run benchmarked "
            f"{req.run.head_sha[:12]}: rows, launches and curves may differ from the run's"))
    names, arts = _inputs(req, result)
    matched = _match(arts, names, result)
    jobs = [_judge_job(m, result, req.bands) for _, m in sorted(
        matched.items(), key=lambda kv: (kv[0][0], kv[0][1]))]
    _refusals(req, result)
    result.checked = [f"{len(req.artifacts)} artifact(s) of "
                      + (f"run {req.run.run_id}" if req.run.run_id else
                         str(req.run.directory or "the run"))]
    counts: dict[str, int] = {}
    for j in jobs:
        status = j.verdict.status if j.verdict else "?"
        counts[status] = counts.get(status, 0) + 1
    result.info.update({
        "run": req.run.to_dict(), "jobs": [j.to_dict() for j in jobs], "verdicts": counts,
        "bands": {"sigmas": req.bands.sigmas, "slack": req.bands.slack,
                  "band": req.bands.band, "far": req.bands.far},
        "artifacts": len(req.artifacts)})
    return Audit(result, jobs, req.run, req.bands)


def audit_run(req: AuditRequest, forge: Forge, run_id: int, limits: Limits) -> Audit:
    """The audit of run ``run_id``: only the artifacts that belong to a row of ``req.root``
    are downloaded (zip archives in a temporary directory, read in place, removed)."""
    import tempfile

    from inferencex_tools.io.artifacts import download

    names = row_names(req)
    if req.throughput_only and not names:  # nothing forces an AL at this commit
        req.keys = []
        return audit(req)
    run = forge.run(run_id)
    req.run = RunInfo(run_id=run_id, head_sha=run.head_sha, url=run.html_url or None)
    infos = forge.run_artifacts(run_id)
    keys, wanted = select(names, [i.name for i in infos])
    req.keys = keys
    req.unmatched = [i.name for i in infos if i.name not in wanted and _classify(i.name)]
    with tempfile.TemporaryDirectory(prefix="ixtool-artifacts-") as tmp:
        arts, refused = download(forge, [i for i in infos if i.name in wanted], Path(tmp),
                                 limits)
        req.artifacts, req.refused = arts, [*req.refused, *refused]
        try:
            return audit(req)
        finally:
            for a in arts:
                a.close()
