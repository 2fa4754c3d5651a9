"""What each job of a sweep launched, from the policy check's traced rows (no launch is
derived here: the engine, draft, K, forced AL and thinking mode are the ones
``ixtool policy check`` captured from the row's real launcher and script), and the name
its artifacts carry (``RESULT_FILENAME``, evaluated from the repository's own workflow
template for the row, with the runner's name left open).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inferencex_tools.al.judge import Cell, Launch
from inferencex_tools.policy.curves import MODES

if TYPE_CHECKING:
    from inferencex_tools.policy.check import RowOutcome
    from inferencex_tools.policy.curves import Curve, RegistryEntry
    from inferencex_tools.policy.engines import SpecFacts
    from inferencex_tools.policy.resolve import Row
    from inferencex_tools.policy.store import CurveStore

RUNNER_SENTINEL = "ixtoolrunnername0"
NODE_RX = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}?"
# A recipe fingerprint (hex) the matrix may carry: where the template writes a part of
# it into RESULT_FILENAME, any hex digits of that length match there
FINGERPRINT = "0123456789abcdef" * 4


@dataclass(frozen=True)
class Upload:
    """One artifact a job uploads: its name around the runner's name, and what the audit
    reads from it (``raw`` | ``logs`` | ``other``)."""

    stem: str
    tail: str
    role: str
    pattern: re.Pattern[str]
    kind: str  # the name before RESULT_FILENAME ("agentic_", "eval_server_logs_" …)


@dataclass(frozen=True)
class Named:
    """A launch, the RESULT_FILENAME of its job and the artifacts the job uploads."""

    launch: Launch
    stem: str  # RESULT_FILENAME before the runner's name
    tail: str  # … after it ("" in the reference template)
    nodes: tuple[str, ...]  # the runner names the job may have run on (empty: any)
    family: str | None
    eval_only: bool
    spec: str = "none"  # the row's spec-decoding setting
    uploads: tuple[Upload, ...] = ()

    def _node_ok(self, node: str) -> bool:
        if self.nodes:
            return node in self.nodes
        fam = self.family
        return fam is None or node == fam or node.startswith(f"{fam}_")

    def upload_of(self, name: str) -> tuple[str, str] | None:
        """(runner name, role) when ``name`` is one of this job's artifacts."""
        for u in self.uploads:
            if not name.startswith(u.stem):
                continue
            m = u.pattern.fullmatch(name, len(u.stem))
            if m is not None and self._node_ok(m.group("node")):
                return m.group("node"), u.role
        return None

    def matches(self, name: str) -> str | None:
        """The runner name if ``name`` is this job's RESULT_FILENAME."""
        if not name.startswith(self.stem) or not name.endswith(self.tail):
            return None
        node = name[len(self.stem):len(name) - len(self.tail)]
        if not re.fullmatch(NODE_RX, node):
            return None
        return node if self._node_ok(node) else None


def builtin_result_filename(matrix: Mapping[str, Any], env: Mapping[str, str],
                            node: str) -> str:
    """``RESULT_FILENAME`` as the reference benchmark template spells it (for a
    repository without that template), with ``_recipe-<16 hex>`` when the row carries a
    recipe fingerprint."""
    def g(key: str, default: str) -> str:
        v = env.get(key)
        return str(v) if v not in (None, "") else default

    disagg = str(matrix.get("disagg", False)).lower()
    fp = str(matrix.get("recipe-fingerprint") or "")
    return (f"{g('EXP_NAME', '?')}_{g('PRECISION', '?')}_{g('FRAMEWORK', '?')}_"
            f"tp{g('TP', '1')}-pp{g('PP_SIZE', g('PP', '1'))}-dcp{g('DCP_SIZE', '1')}-"
            f"pcp{g('PCP_SIZE', '1')}-ep{g('EP_SIZE', '1')}-dpa{g('DP_ATTENTION', 'false')}_"
            f"disagg-{disagg}_spec-{g('SPEC_DECODING', 'none')}_conc{g('CONC', '?')}_{node}"
            + (f"_recipe-{fp[:16]}" if fp else ""))


def _fingerprint_tail(plain: str, marked: str) -> str | None:
    """The regex of RESULT_FILENAME's part after the runner's name when the row carries
    a fingerprint (``marked``), if the template puts one there (else None)."""
    s1, _, t1 = plain.partition(RUNNER_SENTINEL)
    s2, _, t2 = marked.partition(RUNNER_SENTINEL)
    if s1 != s2 or t1 == t2:
        return None
    for n in range(len(FINGERPRINT), 3, -1):
        if FINGERPRINT[:n] in t2:
            a, _, b = t2.partition(FINGERPRINT[:n])
            return re.escape(a) + f"[0-9a-f]{{{n}}}" + re.escape(b)
    return re.escape(t2)


def _upload(name: str, role: str, rf_stem: str, rf_tail: str, fp_tail: str | None
            ) -> Upload | None:
    stem, sent, tail = name.partition(RUNNER_SENTINEL)
    if not sent:
        return None  # not a per-job name
    rest = tail[len(rf_tail):] if tail.startswith(rf_tail) else None
    tails = re.escape(tail)
    if rest is not None and fp_tail is not None:
        tails = f"(?:{re.escape(rf_tail)}|{fp_tail}){re.escape(rest)}"
    kind = stem[:len(stem) - len(rf_stem)] if stem.endswith(rf_stem) else stem
    return Upload(stem, tail, role, re.compile(f"(?P<node>{NODE_RX}){tails}"), kind)


def _job_uploads(wf: Any, row: Row, family: str, steps: Mapping[str, Any]
                 ) -> tuple[str, str | None, list[tuple[str, str]]]:
    """RESULT_FILENAME (runner left open), the fingerprint tail regex and the job's
    (artifact name, role) pairs, by the template that runs the row (else the reference
    template's rules)."""
    from inferencex_tools.al.uploads import BUILTIN, builtin_context, context, evaluated
    from inferencex_tools.policy.pipeline import PATHS, make_job
    from inferencex_tools.workflow import job_environment

    je = marked = None
    if wf is not None and row.matrix:
        je = job_environment(wf, row.matrix, node=RUNNER_SENTINEL, paths=PATHS)
        marked = job_environment(wf, {**row.matrix, "recipe-fingerprint": FINGERPRINT},
                                 node=RUNNER_SENTINEL, paths=PATHS)
    if je is not None and je.env.get("RESULT_FILENAME") and je.template in steps:
        rf = je.env["RESULT_FILENAME"]
        fp = _fingerprint_tail(rf, (marked.env if marked else {}).get(
            "RESULT_FILENAME", rf))
        return rf, fp, evaluated(steps[je.template],
                                 context(je.inputs, je.env, RUNNER_SENTINEL))
    job = make_job(wf, row, family, RUNNER_SENTINEL)
    rf = job.env.get("RESULT_FILENAME") or builtin_result_filename(
        row.matrix, job.env, RUNNER_SENTINEL)
    fp = _fingerprint_tail(rf, builtin_result_filename(
        {**row.matrix, "recipe-fingerprint": FINGERPRINT}, job.env, RUNNER_SENTINEL)) \
        if not row.matrix.get("recipe-fingerprint") else None
    ctx = builtin_context(row.matrix, job.env, eval_only=row.eval_only,
                          result_filename=rf, runner=RUNNER_SENTINEL)
    return rf, fp, evaluated(BUILTIN["multi" if row.multinode else "single"], ctx)


def name_of(row: Row, family: str | None, wf: Any, labels: Mapping[str, Any],
            launch: Launch | None, steps: Mapping[str, Any] | None = None) -> Named:
    """The artifact names of ``row``'s job on ``family`` (``launch`` may come later);
    ``steps``: the upload steps of the repository's templates (:func:`.uploads.
    template_uploads`)."""
    fam = family or ""
    rf, fp, pairs = _job_uploads(wf, row, fam, steps or {})
    stem, _, tail = rf.partition(RUNNER_SENTINEL)
    ups = tuple(u for n, role in pairs
                if (u := _upload(n, role, stem, tail, fp)) is not None)
    nodes = labels.get(str(row.config.get("runner")))
    mine = tuple(str(n) for n in nodes if str(n).split("_", 1)[0] == fam) \
        if isinstance(nodes, list) else ()
    return Named(launch or Launch(row.key, row.entry_label(), None, None, row.conc,
                                  "eval" if row.eval_only else "throughput", row.agentic,
                                  row.multinode, None, row.config_file),
                 stem, tail, mine, fam or None, row.eval_only, row.spec, ups)


def _spec_facts(o: RowOutcome) -> SpecFacts | None:
    """The launch that drafts (the decode worker of a disaggregated recipe), else the
    first server."""
    for f in o.facts:
        if f.has_spec:
            return f
    return o.facts[0] if o.facts else None


def launch_of(o: RowOutcome, store: CurveStore) -> Launch:
    row = o.row
    e = row.entry
    out = Launch(config_key=row.key, entry=row.entry_label(), tp=e.get("tp"),
                 ep=e.get("ep", 1), conc=row.conc,
                 mode="eval" if row.eval_only else "throughput", agentic=row.agentic,
                 multinode=row.multinode, script=o.script, config_file=row.config_file,
                 unchecked=o.unchecked)
    f = _spec_facts(o)
    if f is None:
        out.no_golden = o.unchecked or "no server launch was captured"
        return out
    out.engine, out.method, out.draft, out.k = f.engine, f.method, f.draft, f.k
    out.has_spec, out.synthetic = f.has_spec, f.synthetic
    if f.synthetic:
        out.forced, out.forced_raw = f.al, f.raw
    if f.has_spec:
        _golden(out, o, f, store)
    return out


def _golden(out: Launch, o: RowOutcome, f: SpecFacts, store: CurveStore) -> None:
    """The golden value of the launched draft, mode and K (the one lookup ``policy``
    and ``review`` use), and the other curve cells a measurement could match instead
    (the diagnosis of a mismatch)."""
    from inferencex_tools.policy.golden import lookup

    prefix = str(o.row.config.get("model-prefix"))
    got = lookup(store, prefix, f, o.trace.records if o.trace is not None else [])
    entry, curve = got.entry, got.curve
    if entry is None or curve is None:
        out.no_golden = got.why
        return
    out.registry_row, out.curve = entry.id, entry.curve
    out.thinking, out.thinking_evidence = got.mode, got.evidence
    out.golden, out.no_golden = got.value, got.why
    if got.k is None:
        return
    modes = [got.mode] if got.mode else [m for m in MODES if m in curve.modes]
    out.cells = _cells(entry, curve, got.mode, modes, got.k, f.draft,
                       [(sib, store.curve_for(sib)[0]) for sib in
                        store.registry.for_prefix(prefix) if sib.id != entry.id])


def _cells(entry: RegistryEntry, curve: Curve, mode: str | None, modes: list[str], k: int,
           draft: str | None, siblings: list[tuple[RegistryEntry, Curve | None]]
           ) -> list[Cell]:
    """The other curve cells a measurement could match: the other thinking mode, another
    K, a sibling curve (another draft head) at this K."""
    out: list[Cell] = []
    for m in MODES:
        v = curve.value(m, k)
        if v is not None and m != mode:
            out.append(Cell(f"the {m} value of {entry.id} K={k}", v,
                            f"the served traffic's thinking mode is {m}, not "
                            f"{mode or 'the one the launch shows'}", k))
    for m in modes:
        for k2, v in curve.modes.get(m, {}).items():
            if k2 != k:
                out.append(Cell(f"{entry.id} {m} K={k2}", v,
                                f"the server drafts K={k2}, not the launch's K={k}", k2))
    launched = draft or "the native head"
    for sib, sc in siblings:
        for m in modes:
            v = sc.value(m, k) if sc is not None else None
            if v is not None:
                out.append(Cell(
                    f"{sib.id} ({sib.curve}) {m} K={k}", v,
                    f"a draft/curve mismatch: the served draft head is "
                    f"{sib.draft or 'the native head'} ({sib.curve}), not the launched "
                    f"{launched}", k))
    return out
