"""The golden-AL policy applied to one traced row (pure: row + trace + curves → findings)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from inferencex_tools.policy.curves import MODES, TOLERANCE, Curve, RegistryEntry
from inferencex_tools.policy.engines import (
    SpecFacts,
    decide_thinking,
    engine_of,
    facts_of,
    framework_engine,
)
from inferencex_tools.policy.resolve import Row
from inferencex_tools.policy.rules import (
    AL_MISMATCH,
    AL_RANGE,
    BAD_K,
    CURVE_MIXING,
    ENCODING,
    EVAL_SYNTHETIC,
    FIXED_SYNTHETIC,
    INCOMPLETE_KNOBS,
    MODE_UNDETERMINED,
    NO_CURVE,
    NO_DRAFT,
    NO_SERVER,
    NOT_CHECKED,
    NOT_FORCED,
    SAMPLING_UNOBSERVABLE,
    SANDBOX_EVENT,
    SANDBOX_STOPPED,
    TRACE_FAILED,
    UNLABELLED_DRAFT,
    WRONG_FRAMEWORK,
    WRONG_K,
    WRONG_MODE,
)
from inferencex_tools.policy.store import CurveStore
from inferencex_tools.report.findings import Rule
from inferencex_tools.sandbox import TraceResult

Emit = Callable[..., None]
UNIT = {"al": "AL", "al-1": "AL-1", "rate": "(AL-1)/K"}


@dataclass(frozen=True)
class Verdict:
    """One finding before aggregation over rows (``row`` is added to the message later)."""

    rule: Rule
    file: str
    line: int | None
    message: str
    hint: str | None = None
    data: tuple[tuple[str, str], ...] = ()  # extra machine-readable facts


@dataclass
class RowOutcome:
    row: Row
    script: str | None
    facts: list[SpecFacts]
    verdicts: list[Verdict]
    trace: TraceResult | None = None
    thinking: str | None = None
    expected: str | None = None
    registry_row: str | None = None
    family: str | None = None  # the runner family (launcher) this outcome is for
    notes: list[str] = field(default_factory=list)
    unchecked: str | None = None  # why this row has no verdict (coverage)
    static: bool = False  # read from a submitted recipe, not a traced server launch
    # --base: error verdicts the same row also has at the base (already on main)
    standing: list[Verdict] = field(default_factory=list)


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= TOLERANCE + 1e-9


def _in_unit(al: float, unit: str, k: int) -> float:
    return {"al": al, "al-1": al - 1, "rate": (al - 1) / k}[unit]


def locate(text: str, *needles: str | None) -> int | None:
    for needle in needles:
        if not needle:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            if needle in line and not line.lstrip().startswith("#"):
                return i
    return None


_MISSING = (
    re.compile(r"(?m)^.*?\b([A-Za-z_][A-Za-z0-9_]*): unbound variable"),
    re.compile(r"(?m)^.*?\b([A-Za-z_][A-Za-z0-9_]*): "
               r"(?:parameter null or not set|[^\n]*must be set)"),
    re.compile(r"(?m)^\s+- ([A-Za-z_][A-Za-z0-9_]*)\s*$"),
    re.compile(r"(?m)\b([A-Z][A-Z0-9_]+) (?:is not set|must be set|is required)"),
)


def missing_variables(text: str) -> list[str]:
    """Variables a failed script says it is missing (bash ``set -u``, ``${X:?}``, and the
    ``check_env_vars`` list)."""
    out: list[str] = []
    for rx in _MISSING:
        for m in rx.finditer(text):
            if m.group(1) not in out:
                out.append(m.group(1))
    return out


def failure_message(trace: TraceResult) -> tuple[str, tuple[tuple[str, str], ...]]:
    """PO301's message: why, the last traced line, the script's last stderr lines and
    the variables it reported missing; when the script said nothing on stderr, its last
    stdout lines (many recipes report a failure there — "Server died before becoming
    healthy" — after ``set +x`` hid the lines that led to it), last in the message:
    they are not part of the verdict's identity (:data:`STDOUT_PART`)."""
    reason = (f"timed out after {trace.seconds:.0f}s" if trace.timed_out
              else f"exit status {trace.returncode}")
    err = _last_lines(trace.stderr_tail)
    missing = missing_variables(trace.stderr_tail + "\n" + trace.stdout_tail)
    msg = f"trace {reason}; last traced line: {trace.last_line or '?'}"
    if err:
        msg += "; stderr: " + " | ".join(e[:200] for e in err)
    data: list[tuple[str, str]] = [("stderr", "\n".join(err))]
    if missing:
        msg += f"; missing variable{'s' if len(missing) > 1 else ''}: {', '.join(missing)}"
        data.append(("missing_variables", ",".join(missing)))
    out = [] if err else _last_lines(trace.stdout_tail)
    if out:
        msg += STDOUT_PART + " | ".join(o[:200] for o in out)
        data.append(("stdout", "\n".join(out)))
    return msg, tuple(data)


STDOUT_PART = "; stdout: "  # where PO301's stdout lines start (process ids, times: not identity)


def _last_lines(tail: str, n: int = 3) -> list[str]:
    return [ln.strip() for ln in tail.splitlines() if ln.strip() and not ln.startswith("+")][-n:]


def stopped_message(trace: TraceResult) -> tuple[str, tuple[tuple[str, str], ...]]:
    """PO310's message: which limit stopped the trace (or what was wrong with its
    ledger), the last traced line; ``data.limit`` is the kind (time, memory, …)."""
    why = trace.stopped_by or "?"
    kind = why.partition(":")[0]
    return (f"not checked: the sandbox stopped the trace ({why}); last traced line: "
            f"{trace.last_line or '?'}", (("limit", kind),))


def evaluate(row: Row, script: str, script_text: str, trace: TraceResult,
             store: CurveStore) -> RowOutcome:
    out = RowOutcome(row, script, [], [], trace)
    v = out.verdicts

    def at(rule: Rule, message: str, *needles: str | None, hint: str | None = None,
           data: tuple[tuple[str, str], ...] = ()) -> None:
        v.append(Verdict(rule, script, locate(script_text, *needles), message, hint, data))

    if trace.stopped_by is not None:  # no verdict from what the trace delivered
        msg, data = stopped_message(trace)
        at(SANDBOX_STOPPED, msg, data=data)
        out.unchecked = msg
        return out
    servers = [(rec, eng) for rec in trace.records if (eng := engine_of(rec))]
    if not trace.ok:
        _failed(row, trace, bool(servers), out, at)
    for ev in trace.events:
        if "timeout" in ev:
            continue
        at(SANDBOX_EVENT, f"sandbox: {ev}")
    if not servers:
        if trace.ok:
            at(NO_SERVER, "no vllm / sglang / trtllm-serve / ATOM launch was captured")
        return out
    want = framework_engine(str(row.config.get("framework")))
    for rec, eng in servers:
        f = facts_of(rec, eng)
        out.facts.append(f)
        if want and eng != want:
            at(WRONG_FRAMEWORK, f"config framework '{row.config.get('framework')}' but the "
               f"script launches {eng} ({f.server})", rec.argv[0])
        _policy(row, f, trace, store, out, at)
    return out


def _failed(row: Row, trace: TraceResult, launched: bool, out: RowOutcome, emit: Emit
            ) -> None:
    """A trace that did not run to its end: PO301, unless it failed only because a
    stubbed tool's output is missing (then "not checked", PO308, when it launched no
    server before: a launch it captured is still judged)."""
    from inferencex_tools.policy.unreproducible import missing_stub_output

    why = missing_stub_output(trace)
    if why is None:
        msg, data = failure_message(trace)
        emit(TRACE_FAILED, msg, data=data)
    elif not launched:
        out.unchecked = why
        step = (trace.last_line or "").split(": ", 1)[-1]
        emit(NOT_CHECKED, f"{row.key}: not checked: {why}", step or None,
             hint="nothing to fix in the recipe if the job has the network and its "
             "container: check this row by hand (ixtool launch render shows the step)")


def _policy(row: Row, f: SpecFacts, trace: TraceResult, store: CurveStore, out: RowOutcome,
            emit: Emit) -> None:
    raw_needle = f.raw.split("=", 1)[-1].split()[-1] if f.raw else None
    if not _applies(row, f, store, emit, raw_needle):
        return
    for issue in f.issues:
        emit(INCOMPLETE_KNOBS, issue, raw_needle)
    k = f.k
    if k is None or not 1 <= k <= 8:
        emit(BAD_K, f"K = {k} ({f.summary()})", "num_speculative_tokens", "NUM_SPEC")
        return
    if f.al is None:
        return
    _check_value(row, f, k, trace, store, out, emit, raw_needle)


def _applies(row: Row, f: SpecFacts, store: CurveStore, emit: Emit,
             needle: str | None) -> bool:
    """G-01/02/03/12: does the AL check apply to this launch (and report what is wrong
    before it)?"""
    spec_cfg = row.spec != "none"
    if spec_cfg and not f.has_spec:
        emit(NO_DRAFT, f"spec-decoding: {row.spec} in the config but {f.server} has no "
             "speculative config", f.server.split()[0])
        return False
    if not row.agentic:
        if f.synthetic and store.registry.exception_for(row.key) is None:
            emit(FIXED_SYNTHETIC, f"{f.raw} on a {row.scenario} point; acceptance must "
                 "be real outside agentic-coding", needle)
        return False
    if not f.has_spec:
        return False
    if not spec_cfg:
        emit(UNLABELLED_DRAFT, f"{f.summary()} but spec-decoding is {row.spec}", None)
    if row.eval_only:
        if f.synthetic:
            emit(EVAL_SYNTHETIC, f"{f.raw} reaches the server with EVAL_ONLY=true: the "
                 "eval would score committed drafts, not the model", needle)
        return False
    if not f.synthetic:
        emit(NOT_FORCED, f"{f.summary()}: throughput run without a pinned AL", "speculative")
        return False
    return True


def _curve_of(row: Row, f: SpecFacts, store: CurveStore, emit: Emit, needle: str | None,
              out_of_range: bool) -> tuple[RegistryEntry, Curve] | None:
    prefix = str(row.config.get("model-prefix"))
    entry = store.registry.match(prefix, f.method, f.draft, f.sample)
    if entry is None:
        if out_of_range:
            emit(AL_RANGE, _range_msg(f), needle)
            return None
        have = [f"{e.id} ({e.method}, {e.draft or ('any draft' if e.draft_any else 'native')})"
                for e in store.registry.for_prefix(prefix)]
        amb = store.registry.ambiguous.get((prefix, f.method or "", f.sample))
        emit(NO_CURVE, f"no registry row for {prefix} / {f.method} / draft "
             f"{f.draft or '(native)'} / sampling {f.sample or 'default'}"
             + (f"; registered for {prefix}: {', '.join(have)}" if have else "")
             + (f"; the curves {', '.join(amb)} cannot be told apart" if amb else ""),
             needle)
        return None
    curve, why = store.curve_for(entry)
    if curve is None:
        if out_of_range:
            emit(AL_RANGE, _range_msg(f), needle)
        emit(NO_CURVE, why or entry.label(), needle)
        return None
    return entry, curve


def _range_msg(f: SpecFacts) -> str:
    return (f"{f.raw} means AL {f.al:g}, outside [1, {(f.k or 0) + 1}] for K={f.k}")


def _check_value(row: Row, f: SpecFacts, k: int, trace: TraceResult, store: CurveStore,
                 out: RowOutcome, emit: Emit, needle: str | None) -> None:
    """G-04..G-10: the pinned AL against the curve of the launched draft."""
    assert f.al is not None
    out_of_range = not 1 - 1e-9 <= f.al <= k + 1 + 1e-9
    found = _curve_of(row, f, store, emit, needle, out_of_range)
    if found is None:
        return
    entry, curve = found
    prefix = str(row.config.get("model-prefix"))
    out.registry_row = entry.id
    th = decide_thinking(f, trace.records, store.registry.template_default(prefix), prefix)
    out.thinking = th.mode or "undetermined"
    modes = [th.mode] if th.mode else [m for m in MODES if m in curve.modes]
    if th.mode and th.mode not in curve.modes:
        emit(NO_CURVE, f"{entry.label()} has no {th.mode} row ({th.evidence})", needle)
        return
    targets = {m: curve.value(m, k) for m in modes}
    out.expected = ", ".join(f"{m} {t}" for m, t in targets.items())
    if th.mode is None:
        emit(MODE_UNDETERMINED, f"{th.evidence}; {entry.label()} K={k}: "
             + ", ".join(f"{m} {t}" for m, t in targets.items()), needle)
    if out_of_range:
        # an encoding slip (e.g. TRT given the AL itself) explains it best; else PO404
        if not _mismatch(f, k, th.mode, th.evidence, entry, curve, store, emit, needle,
                         encoding_only=True):
            emit(AL_RANGE, _range_msg(f), needle)
        return
    if any(_close(f.al, t) for t in targets.values()):
        return
    _mismatch(f, k, th.mode, th.evidence, entry, curve, store, emit, needle)


def _mismatch(f: SpecFacts, k: int, mode: str | None, evidence: str, entry: RegistryEntry,
              curve: Curve, store: CurveStore, e: Emit, needle: str | None, *,
              encoding_only: bool = False) -> bool:
    """Emit the most specific diagnosis of a wrong AL; False if none applied."""
    modes = [mode] if mode else [m for m in MODES if m in curve.modes]
    m0 = modes[0]
    target = curve.value(m0, k)
    assert target is not None
    want = _in_unit(target, f.unit, k)
    d = _Diagnosis(f, k, mode, modes, entry, curve, e, needle,
                   where=f"{entry.label()} {m0} K={k} = {target:.2f}",
                   fix=f"set {f.raw.split('=')[0].split()[0] if f.raw else 'the knob'} "
                       f"to {want:g}")
    if d.encoding_slip():
        return True
    if encoding_only:
        return False
    if d.other_mode(evidence) or d.other_k() or d.sibling_curve(store):
        return True
    e(AL_MISMATCH, f"{f.raw} means AL {f.al:g}; golden {d.where}"
      + ("" if mode else f" (mode undetermined; {', '.join(modes)} checked)"), needle,
      hint=d.fix)
    return True


def _head(draft: str | None, sample: str | None) -> str:
    return f"draft {draft or 'native'}, " + (f"{sample} sampling" if sample
                                             else "default sampling")


@dataclass
class _Diagnosis:
    """The candidate explanations of a wrong AL, most specific first (each emits and
    returns True when it applies)."""

    f: SpecFacts
    k: int
    mode: str | None
    modes: list[str]
    entry: RegistryEntry
    curve: Curve
    e: Emit
    needle: str | None
    where: str
    fix: str

    def encoding_slip(self) -> bool:
        """The engine's encoding (TRT minus one, ATOM rate/length, AL-1 in an AL engine)."""
        f, rv = self.f, self.f.raw_value
        for m in self.modes:
            t = self.curve.value(m, self.k)
            if t is None or rv is None:
                continue
            for u in ("al", "al-1", "rate"):
                if u != f.unit and _close(rv, _in_unit(t, u, self.k)):
                    self.e(ENCODING, f"{f.raw} is the golden value in {UNIT[u]} units, but "
                           f"{f.engine} takes {UNIT[f.unit]}: {self.where} → "
                           f"{_in_unit(t, f.unit, self.k):g}", self.needle, hint=self.fix)
                    return True
        return False

    def other_mode(self, evidence: str) -> bool:
        if not self.mode:
            return False
        other = "thinking_off" if self.mode == "thinking_on" else "thinking_on"
        if not _close(self.f.al, self.curve.value(other, self.k)):
            return False
        self.e(WRONG_MODE, f"AL {self.f.al:g} is the {other} value of {self.entry.label()} "
               f"K={self.k}, but the served traffic is {self.mode} ({evidence}); golden "
               f"{self.where}", self.needle, hint=self.fix)
        return True

    def other_k(self) -> bool:
        for m in self.modes:
            for k2, t2 in self.curve.modes.get(m, {}).items():
                if k2 != self.k and _close(self.f.al, t2):
                    self.e(WRONG_K, f"AL {self.f.al:g} is the {m} value for K={k2}, but the "
                           f"launch drafts K={self.k}; golden {self.where}", self.needle,
                           hint=self.fix)
                    return True
        return False

    def sampling_only(self, sib: RegistryEntry) -> bool:
        """``sib`` differs from the matched curve only in draft sampling, and the launch
        does not say which sampling it uses (engines without a sampling knob)."""
        return (not self.f.sample_known and sib.method == self.entry.method
                and sib.draft_sample_method != self.entry.draft_sample_method
                and sib.matches_draft(self.f.draft) and self.entry.matches_draft(self.f.draft))

    def sibling_curve(self, store: CurveStore) -> bool:
        """A sibling curve: another draft head (or sampling method) of the same model."""
        for sib in store.registry.for_prefix(self.entry.model_prefix):
            sc = store.curve_for(sib)[0] if sib.id != self.entry.id else None
            if sc is None or not any(_close(self.f.al, sc.value(m, self.k))
                                     for m in self.modes):
                continue
            if self.sampling_only(sib):
                self.e(SAMPLING_UNOBSERVABLE,
                       f"AL {self.f.al:g} is {sib.label()} K={self.k} "
                       f"({_head(sib.draft, sib.draft_sample_method)}); the {self.f.engine} "
                       f"launch names no draft sampling method, so ixtool cannot tell it "
                       f"from golden {self.where}", self.needle,
                       hint=f"if {self.f.engine} drafts with "
                       f"{sib.draft_sample_method or 'default'} sampling this is right; "
                       f"otherwise {self.fix}")
                return True
            self.e(CURVE_MIXING, f"AL {self.f.al:g} comes from {sib.label()} "
                   f"({_head(sib.draft, sib.draft_sample_method)}), but the launch drafts "
                   f"with {_head(self.f.draft, self.f.sample)}: golden {self.where}",
                   self.needle, hint=self.fix)
            return True
        return False
