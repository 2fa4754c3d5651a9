"""Measured acceptance length from what a benchmark job uploads (pure: bytes in, a
:class:`Measurement` or a reason out).

Sources (docs/al-audit.md has the facts and where they come from):

* **aiperf's ``server_metrics_export.json``** (``{"metrics": {FAMILY: {"type", "series":
  [{"labels", "stats": {"total", …}}]}}}``; a counter's ``stats.total`` is its increase
  over the profiling phase, summed here over every series (endpoints, engines)).
  vLLM's families ``vllm:spec_decode_num_drafts``, ``…_num_draft_tokens``,
  ``…_num_accepted_tokens`` and ``…_num_accepted_tokens_per_pos`` (label ``position``,
  0-based) give AL = 1 + accepted / drafts exactly, as the golden curves define it.
  SGLang's counters ``sglang:spec_verify_calls`` and ``sglang:generation_tokens``
  give Δgenerated / Δverify (SGLang's own acceptance length: completion tokens per
  verification call).  TensorRT-LLM's ``trtllm_spec_decode_num_draft_tokens`` /
  ``…_num_accepted_tokens`` give it with drafts = draft tokens / K; ATOM's
  ``atom:mtp_decode_steps`` (by ``accepted_tokens``) with its accepted/draft tokens.
  An engine's acceptance-length gauge is only a fallback (its error: the spread over
  √scrapes when aiperf says how many, else a wide band), noted as coarse.
* **vLLM's periodic log line** ``SpecDecoding metrics: Mean acceptance length: X,
  Accepted throughput: …, Drafted throughput: …, Accepted: A tokens, Drafted: D tokens,
  Per-position acceptance rate: r0, r1, …, Avg Draft acceptance rate: P%`` (one per
  logging interval and engine): drafts = D / K per line.
* **SGLang's decode log line** ``Decode batch… accept len: X, …`` (a ratio per
  ``decode_log_interval``, bonus token included): no counts, so the spread between
  lines gives the error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_COUNT = 1e15  # a counter beyond this is not a real benchmark's
MAX_LINE = 64 * 1024
MIN_LOG_LINES = 3  # SGLang ratios: fewer lines give no usable spread
ROUNDING = 0.005  # the log lines print two decimals


class Invalid(ValueError):
    """The numbers are there but cannot be true (a truncated or forged file)."""


@dataclass
class Measurement:
    """The acceptance a job's server reported."""

    source: str  # counters | log | gauge
    file: str  # artifact/path the numbers come from
    al: float
    se: float  # standard error of ``al`` (from the counts, or the spread of intervals)
    drafts: float | None = None  # verification steps
    accepted: float | None = None  # accepted draft tokens
    draft_tokens: float | None = None
    per_pos: tuple[float, ...] = ()  # acceptance rate per draft position (0-based)
    intervals: int = 0  # log lines / series read
    notes: list[str] = field(default_factory=list)
    k_seen: float | None = None  # draft tokens per draft, where the counts show it

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "file": self.file, "al": round(self.al, 4),
            "se": round(self.se, 5), "drafts": self.drafts, "accepted": self.accepted,
            "draft-tokens": self.draft_tokens,
            "per-position": [round(p, 4) for p in self.per_pos],
            "intervals": self.intervals, "notes": self.notes,
        }


# ----------------------------------------------------------------------------- counts

def _variance(mean: float, k_max: float, per_pos: tuple[float, ...]) -> float:
    """Variance of the accepted tokens of one draft.  With per-position acceptance
    (nested: a draft that accepts position i accepted every earlier one), E[X²] =
    Σ (2i+1)·p_i; without it, the largest variance a value in [0, K] with this mean can
    have (Bhatia–Davis)."""
    if per_pos:
        second = sum((2 * i + 1) * p for i, p in enumerate(per_pos))
        var = second - mean * mean
        if var >= -1e-9:
            return max(var, 0.0)
    return max(mean * (k_max - mean), 0.0)


def from_counts(source: str, file: str, *, drafts: float, accepted: float,
                draft_tokens: float | None, k: int | None,
                per_pos_counts: tuple[float, ...] = (), intervals: int = 0,
                spread: float = 0.0) -> Measurement:
    """AL = 1 + accepted / drafts, with its standard error; Invalid for impossible
    counts.  ``spread``: an error seen between intervals (the larger one is kept)."""
    for name, v in (("drafts", drafts), ("accepted", accepted),
                    ("draft tokens", draft_tokens), *(
                        (f"position {i}", c) for i, c in enumerate(per_pos_counts))):
        if v is not None and (not math.isfinite(v) or v < 0 or v > MAX_COUNT):
            raise Invalid(f"{name} = {v!r} is not a count")
    if drafts <= 0:
        raise Invalid("no drafts were verified (the drafts counter did not move)")
    mean = accepted / drafts
    k_max = float(k) if k else (draft_tokens / drafts if draft_tokens else mean)
    if draft_tokens is not None:
        if accepted > draft_tokens * (1 + 1e-9):
            raise Invalid(f"{accepted:,.0f} tokens accepted of {draft_tokens:,.0f} drafted")
        if draft_tokens < drafts * (1 - 1e-9):
            raise Invalid(f"{draft_tokens:,.0f} draft tokens for {drafts:,.0f} drafts")
    if k and mean > k * (1 + 1e-6):
        raise Invalid(f"{mean:.3f} tokens accepted per draft, more than K={k}")
    rates = tuple(c / drafts for c in per_pos_counts)
    if rates and abs(sum(per_pos_counts) - accepted) > max(1.0, accepted * 1e-3):
        raise Invalid(f"the per-position counts add up to {sum(per_pos_counts):,.0f}, "
                      f"not the {accepted:,.0f} accepted tokens")
    se = math.sqrt(_variance(mean, k_max, rates) / drafts)
    return Measurement(source, file, 1 + mean, max(se, spread), drafts=drafts,
                       accepted=accepted, draft_tokens=draft_tokens, per_pos=rates,
                       intervals=intervals,
                       k_seen=draft_tokens / drafts if draft_tokens is not None else None)


# ----------------------------------------------------------------------------- aiperf export

@dataclass(frozen=True)
class Counters:
    """The counter families an engine's ``/metrics`` page carries about acceptance (as
    aiperf exports them: the family name without ``_total``).  ``accepted``: accepted
    draft tokens; or ``generated``: every token a verification step produced (accepted
    drafts + the bonus token), so accepted = generated − drafts (SGLang's definition of
    the acceptance length: completion tokens per verification call)."""

    drafts: str | None
    draft_tokens: str | None = None
    accepted: str | None = None
    per_pos: str | None = None  # label ``position`` (0-based)
    generated: str | None = None
    # the drafts family counts verification steps by this label (the number of draft
    # tokens the step accepted): the per-position counts follow from it
    steps_by: str | None = None


_COUNTERS: dict[str, tuple[Counters, ...]] = {
    "vllm": (Counters("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                      "vllm:spec_decode_num_accepted_tokens",
                      "vllm:spec_decode_num_accepted_tokens_per_pos"),),
    "atom": (Counters("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                      "vllm:spec_decode_num_accepted_tokens",
                      "vllm:spec_decode_num_accepted_tokens_per_pos"),
             Counters("atom:mtp_decode_steps", "atom:mtp_draft_tokens",
                      "atom:mtp_accepted_tokens", steps_by="accepted_tokens")),
    "sglang": (Counters("sglang:spec_verify_calls", generated="sglang:generation_tokens"),),
    "trt": (Counters(None, "trtllm_spec_decode_num_draft_tokens",
                     "trtllm_spec_decode_num_accepted_tokens"),),
}
_GAUGES = {"sglang": "sglang:spec_accept_length",
           "trt": "trtllm_spec_decode_acceptance_length",
           "atom": "atom:mtp_average_tokens_per_forward"}


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def load_json(data: bytes) -> Any:
    """Untrusted JSON: ValueError for bad UTF-8, syntax, NaN/Infinity, depth."""
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("nested too deep") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _family(metrics: dict[str, Any], name: str | None, variants: bool = True
            ) -> list[dict[str, Any]] | None:
    """The series of a family (``name`` or ``name_total``: a live ``/metrics`` page and
    some exports name counters with the suffix); None when absent."""
    if name is None:
        return None
    for n in ((name, f"{name}_total") if variants else (name,)):
        entry = metrics.get(n)
        if isinstance(entry, dict):
            series = entry.get("series")
            if not isinstance(series, list):
                raise Invalid(f"{n}: 'series' is not a list")
            return [s for s in series if isinstance(s, dict)][:10_000]
    return None


def number(v: object, what: str, *, limit: float = MAX_COUNT) -> float:
    """``v`` as a float, or Invalid: a bool, a string, a non-finite value, a negative one
    or one beyond ``limit`` (a 400-digit JSON integer is an int Python cannot turn into
    a float) is not a number any real counter or gauge holds."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise Invalid(f"{what}: {str(v)[:40]!r} is not a number")
    if isinstance(v, int):
        if not 0 <= v <= limit:
            shown = f"{str(v)[:12]}… ({len(str(v))} digits)" if len(str(v)) > 20 else str(v)
            raise Invalid(f"{what} = {shown} is not a count (0 to {limit:.0e})")
        return float(v)
    if not math.isfinite(v) or not 0 <= v <= limit:
        raise Invalid(f"{what} = {v!r} is not a count (0 to {limit:.0e})")
    return v


def _total(series: dict[str, Any], family: str) -> float:
    stats = series.get("stats")
    v = stats.get("total") if isinstance(stats, dict) else None
    if v is None:
        raise Invalid(f"{family}: a series without a numeric stats.total")
    return number(v, f"{family} stats.total")


def _sum(series: list[dict[str, Any]], family: str) -> float:
    return sum(_total(s, family) for s in series)


def _per_pos(series: list[dict[str, Any]] | None, family: str, k: int | None
             ) -> tuple[float, ...]:
    if not series:
        return ()
    by_pos: dict[int, float] = {}
    for s in series:
        labels = s.get("labels")
        pos = labels.get("position") if isinstance(labels, dict) else None
        if not isinstance(pos, str | int) or not str(pos).isdigit() or int(str(pos)) > 64:
            raise Invalid(f"{family}: a series without a position label 0..64")
        by_pos[int(str(pos))] = by_pos.get(int(str(pos)), 0.0) + _total(s, family)
    n = max(by_pos) + 1
    if k is not None and n > k:
        raise Invalid(f"{family}: position {n - 1} recorded, but K={k}")
    return tuple(by_pos.get(i, 0.0) for i in range(n))


def _spread(series: list[dict[str, Any]], family: str) -> tuple[int, list[float]]:
    """Timeslice totals of a counter family, summed per slice index (for the spread).
    Invalid when a slice total is not a count, or when the slices of a series add up to
    more than its total: aiperf clamps a counter that went down to 0 (a reset, a
    restarted server), so the counts of such a series are not the profiling phase's."""
    slices: dict[int, float] = {}
    for s in series:
        ts = s.get("timeslices")
        if not isinstance(ts, list):
            continue
        got = 0.0
        for i, t in enumerate(ts[:100_000]):
            v = t.get("total") if isinstance(t, dict) else None
            if v is None:
                continue
            x = number(v, f"{family} timeslice {i} total")
            slices[i] = slices.get(i, 0.0) + x
            got += x
        total = _total(s, family)
        if got > total * (1 + 1e-6) + 1.0:
            raise Invalid(f"{family}: its timeslices add up to {got:,.0f}, more than the "
                          f"series total {total:,.0f}: the counter was reset during the "
                          "profiling phase (a restarted server)")
    return len(slices), [slices[i] for i in sorted(slices)]


def _slice_se(drafts: list[float], accepted: list[float]) -> float:
    """Standard error of the ratio of sums from per-slice counts (delta method)."""
    pairs = [(d, a) for d, a in zip(drafts, accepted, strict=False) if d > 0]
    m = len(pairs)
    if m < MIN_LOG_LINES:
        return 0.0
    d_sum = sum(d for d, _ in pairs)
    r = sum(a for _, a in pairs) / d_sum
    resid = sum((a - r * d) ** 2 for d, a in pairs)
    return math.sqrt(m / (m - 1) * resid) / d_sum


def from_export(data: bytes, file: str, engine: str, k: int | None) -> Measurement | None:
    """The acceptance in an aiperf export for ``engine``: its counters, else its gauge;
    None when it has neither; Invalid / ValueError for a malformed or impossible file."""
    doc = load_json(data)
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(metrics, dict):
        raise Invalid("no 'metrics' object (not an aiperf server_metrics_export.json)")
    for c in _COUNTERS.get(engine, ()):
        got = _counted(metrics, c, file, k)
        if got is not None:
            return got
    return _gauge(doc, metrics, file, engine)


def _counted(metrics: dict[str, Any], c: Counters, file: str, k: int | None
             ) -> Measurement | None:
    """AL from one set of counter families; None when the export lacks them."""
    acc = _family(metrics, c.accepted)
    gen = _family(metrics, c.generated)
    drafts = _family(metrics, c.drafts)
    if acc is None and (gen is None or drafts is None):
        return None
    tokens = _family(metrics, c.draft_tokens)
    draft_tokens = _sum(tokens, str(c.draft_tokens)) if tokens else None
    if drafts:
        n = _sum(drafts, str(c.drafts))
    elif draft_tokens is not None and k:
        n = draft_tokens / k
    else:
        raise Invalid(f"{c.accepted} without a drafts count (and no K to derive it)")
    spread = 0.0
    if acc is not None:
        accepted = _sum(acc, str(c.accepted))
        if drafts:
            m, d_sl = _spread(drafts, str(c.drafts))
            _, a_sl = _spread(acc, str(c.accepted))
            spread = _slice_se(d_sl, a_sl) if m else 0.0
    else:
        assert gen is not None and drafts is not None
        generated = _sum(gen, str(c.generated))
        if generated < n:
            raise Invalid(f"{c.generated} grew by {generated:,.0f}, less than the "
                          f"{n:,.0f} verification calls of {c.drafts}: each verification "
                          "produces at least one token")
        accepted = generated - n
        m, d_sl = _spread(drafts, str(c.drafts))
        _, g_sl = _spread(gen, str(c.generated))
        spread = _slice_se(d_sl, [g - d for g, d in zip(g_sl, d_sl, strict=False)]) \
            if m else 0.0
    per_pos = _per_pos(_family(metrics, c.per_pos), str(c.per_pos), k) if c.per_pos \
        else _by_steps(drafts, c, k)
    return from_counts("counters", file, drafts=n, accepted=accepted,
                       draft_tokens=draft_tokens, k=k, per_pos_counts=per_pos,
                       intervals=len(acc if acc is not None else drafts or []),
                       spread=spread)


def _by_steps(drafts: list[dict[str, Any]] | None, c: Counters, k: int | None
              ) -> tuple[float, ...]:
    """Per-position accepted counts from steps counted by accepted tokens (a step that
    accepted j drafts accepted positions 0..j-1)."""
    if not drafts or c.steps_by is None:
        return ()
    by: dict[int, float] = {}
    for s in drafts:
        labels = s.get("labels")
        j = labels.get(c.steps_by) if isinstance(labels, dict) else None
        if not isinstance(j, str | int) or not str(j).isdigit() or int(str(j)) > 64:
            raise Invalid(f"{c.drafts}: a series without a {c.steps_by} label 0..64")
        by[int(str(j))] = by.get(int(str(j)), 0.0) + _total(s, str(c.drafts))
    top = max(by)
    if k is not None and top > k:
        raise Invalid(f"{c.drafts}: steps that accepted {top} drafts, but K={k}")
    return tuple(sum(v for j, v in by.items() if j > i) for i in range(top))


def _samples(doc: dict[str, Any], series: dict[str, Any]) -> int | None:
    """How many distinct scrapes a gauge series averages: aiperf's
    ``summary.endpoint_info[endpoint].unique_updates`` of the series' endpoint (fetches
    that returned changed metrics); None when the export does not say."""
    summary = doc.get("summary")
    info = summary.get("endpoint_info") if isinstance(summary, dict) else None
    url = series.get("endpoint") or series.get("endpoint_url")
    if not isinstance(info, dict) or not isinstance(url, str):
        return None
    hits = [v for key, v in info.items() if isinstance(v, dict) and isinstance(key, str)
            and (key == url or url.endswith(key) or key.endswith(url)
                 or key in url)]
    if len(hits) != 1:
        return None
    try:
        n = number(hits[0].get("unique_updates"), "unique_updates", limit=1e9)
    except Invalid:
        return None
    return int(n) if n >= 1 else None


WIDE = 0.05  # the band of a gauge average whose sample count is unknown (AL units)


def _gauge(doc: dict[str, Any], metrics: dict[str, Any], file: str, engine: str
           ) -> Measurement | None:
    """The time average of the engine's acceptance-length gauge: a fallback.  Its
    standard error is the spread of the scraped values over √samples when aiperf says
    how many distinct scrapes it averaged; otherwise the spread itself, no less than
    :data:`WIDE` (a wide band), and a note says so."""
    name = _GAUGES.get(engine)
    series = _family(metrics, name, variants=False)
    if not series:
        return None
    vals: list[tuple[float, float, int | None]] = []
    for s in series:
        st = s.get("stats")
        if not isinstance(st, dict) or st.get("avg") is None:
            continue
        avg = number(st.get("avg"), f"{name} stats.avg", limit=65.0)
        std = number(st.get("std", 0.0), f"{name} stats.std", limit=65.0)
        if avg > 0:
            vals.append((avg, std, _samples(doc, s)))
    if not vals:
        return None
    al = sum(v for v, _, _ in vals) / len(vals)
    if not 1.0 - 1e-9 <= al <= 65:
        raise Invalid(f"{name} averages {al:g}, not an acceptance length")
    known = all(n is not None for _, _, n in vals)
    if known:
        se = math.sqrt(sum((sd / math.sqrt(n or 1)) ** 2 for _, sd, n in vals)) / len(vals)
        se = max(se, ROUNDING / 2)
        note = (f"{name}: the time average of a gauge over "
                f"{sum(n or 0 for _, _, n in vals):,} scrapes, not counts: the standard "
                "error is the spread of the scraped values over √scrapes")
    else:
        se = max(max(sd for _, sd, _ in vals), WIDE)
        note = (f"{name}: the time average of a gauge, not counts, and the export does not "
                "say how many scrapes it averages: the band is the gauge's whole spread "
                f"(at least {WIDE:g}), a wide band")
    m = Measurement("gauge", file, al, se, intervals=len(vals))
    m.notes.append(note)
    return m


# ----------------------------------------------------------------------------- logs

_NUM = r"([0-9]+(?:\.[0-9]+)?)"
VLLM_LINE = re.compile(
    r"SpecDecoding metrics: Mean acceptance length: " + _NUM + r", .*?"
    r"Accepted: ([0-9]+) tokens, Drafted: ([0-9]+) tokens"
    r"(?:, Per-position acceptance rate: ((?:[0-9.]+(?:, )?)*))?")
SGLANG_LINE = re.compile(r"Decode batch.*?accept len: " + _NUM)


@dataclass
class LogScan:
    """What a server log says about acceptance (several logs can be scanned into one)."""

    vllm: list[tuple[float, int, int, tuple[float, ...]]] = field(default_factory=list)
    sglang: list[float] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    long_lines: int = 0
    truncated: list[str] = field(default_factory=list)
    bad: int = 0  # acceptance lines whose numbers no server writes (hostile, corrupt)
    bad_why: str = ""

    def feed(self, lines: Iterable[bytes]) -> None:
        for raw in lines:
            if len(raw) > MAX_LINE:
                self.long_lines += 1
                continue
            if b"SpecDecoding metrics" in raw:
                self._vllm(raw.decode("utf-8", "replace"))
            elif b"accept len" in raw:
                m = SGLANG_LINE.search(raw.decode("utf-8", "replace"))
                if m and len(self.sglang) < 1_000_000:
                    v = self._num(m.group(1), "accept len", 65.0)
                    if v is not None and v > 0:  # 0.00: the interval had no spec step
                        self.sglang.append(v)

    def _num(self, text: str, what: str, limit: float = MAX_COUNT) -> float | None:
        """A number of a log line, or None (the line is counted as hostile)."""
        try:
            if len(text) > 24:
                raise Invalid(f"{what} has {len(text)} digits")
            return number(float(text) if "." in text else int(text), what, limit=limit)
        except (Invalid, ValueError) as exc:
            self.bad += 1
            self.bad_why = self.bad_why or str(exc)
            return None

    def _vllm(self, text: str) -> None:
        m = VLLM_LINE.search(text)
        if not m or len(self.vllm) >= 1_000_000:
            return
        rates: tuple[float, ...] = ()
        if m.group(4):
            parts = [x.strip() for x in m.group(4).split(",") if x.strip()][:65]
            got = [self._num(x, "a per-position rate", 1.0) for x in parts]
            if any(g is None for g in got):
                return
            rates = tuple(g for g in got if g is not None)
        al = self._num(m.group(1), "Mean acceptance length", 65.0)
        acc = self._num(m.group(2), "Accepted")
        drafted = self._num(m.group(3), "Drafted")
        if al is None or acc is None or drafted is None or len(rates) > 64:
            return
        self.vllm.append((al, int(acc), int(drafted), rates))


def lines(chunks: Iterable[bytes], limit: int = MAX_LINE) -> Iterator[bytes]:
    """Lines of a byte stream; a line longer than ``limit`` is yielded as one oversized
    marker (its tail is skipped) so memory stays bounded."""
    buf = b""
    skipping = False
    for chunk in chunks:
        buf += chunk
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            line, buf = buf[:i], buf[i + 1:]
            if skipping:
                skipping = False
                continue
            yield line
        if len(buf) > limit:
            if not skipping:
                yield buf[:limit + 1]
            skipping, buf = True, b""
    if buf and not skipping:
        yield buf


def from_logs(scan: LogScan, engine: str, k: int | None) -> Measurement | None:
    """The acceptance in scanned server logs; None when they hold no acceptance line."""
    file = ", ".join(scan.files[:3]) + (" …" if len(scan.files) > 3 else "")
    if scan.bad:
        raise Invalid(f"{scan.bad} acceptance line(s) hold numbers no server writes "
                      f"({scan.bad_why})")
    if scan.vllm and engine in ("vllm", "atom"):
        return _vllm_logs(scan, file, k)
    if scan.sglang and engine == "sglang":
        return _sglang_logs(scan, file)
    return None


def _vllm_logs(scan: LogScan, file: str, k: int | None) -> Measurement:
    drafts = accepted = tokens = 0.0
    pos: list[float] = []
    d_sl: list[float] = []
    a_sl: list[float] = []
    off = 0
    for al, acc, drafted, rates in scan.vllm:
        if k:
            n = drafted / k
        elif al > 1.005:
            n = acc / (al - 1)
        else:
            continue
        if n <= 0:
            continue
        if abs(1 + acc / n - al) > ROUNDING + 0.01:
            off += 1
        drafts += n
        accepted += acc
        tokens += drafted
        d_sl.append(n)
        a_sl.append(acc)
        for i, r in enumerate(rates):
            if i >= len(pos):
                pos.append(0.0)
            pos[i] += r * n
    if off > max(1, len(scan.vllm) // 20):
        raise Invalid(f"{off} of {len(scan.vllm)} SpecDecoding lines disagree with K={k}: "
                      "their drafted tokens imply another draft length")
    counts = tuple(pos) if pos and abs(sum(pos) - accepted) <= max(
        2.0, accepted * 0.01) else ()
    m = from_counts("log", file, drafts=drafts, accepted=accepted, draft_tokens=tokens,
                    k=k, per_pos_counts=_rescale(counts, accepted), intervals=len(d_sl),
                    spread=_slice_se(d_sl, a_sl))
    return m


def _rescale(counts: tuple[float, ...], accepted: float) -> tuple[float, ...]:
    """Per-position counts rebuilt from rounded rates, scaled to add up to ``accepted``."""
    s = sum(counts)
    return tuple(c * accepted / s for c in counts) if counts and s > 0 else ()


def _sglang_logs(scan: LogScan, file: str) -> Measurement:
    vals = scan.sglang
    m = len(vals)
    mean = sum(vals) / m
    if m < MIN_LOG_LINES:
        raise Invalid(f"only {m} 'accept len' line(s): too few to judge")
    if not 1 - 1e-9 <= mean <= 65:
        raise Invalid(f"accept len averages {mean:g}, not an acceptance length")
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (m - 1))
    out = Measurement("log", file, mean, max(sd / math.sqrt(m), ROUNDING / math.sqrt(m)),
                      intervals=m)
    out.notes.append("SGLang logs ratios, not counts: the error is the spread of the "
                     f"{m} intervals")
    return out


def combine(parts: list[Measurement], k: int | None) -> Measurement:
    """Several count-based measurements of one job (one export per aiperf run) as one."""
    if len(parts) == 1:
        return parts[0]
    drafts = [p.drafts or 0.0 for p in parts]
    n = max(len(p.per_pos) for p in parts)
    pos: tuple[float, ...] = ()
    if all(p.per_pos for p in parts):
        pos = tuple(sum(_at(p.per_pos, i) * d for p, d in zip(parts, drafts, strict=True))
                    for i in range(n))
    tokens = [p.draft_tokens for p in parts]
    total = sum(drafts)
    spread = math.sqrt(sum((d * p.se) ** 2 for p, d in zip(parts, drafts, strict=True)))
    return from_counts(parts[0].source, ", ".join(p.file for p in parts), drafts=total,
                       accepted=sum(p.accepted or 0.0 for p in parts),
                       draft_tokens=None if None in tokens else sum(t or 0.0 for t in tokens),
                       k=k, per_pos_counts=pos, intervals=sum(p.intervals for p in parts),
                       spread=spread / max(1.0, total))


def _at(values: tuple[float, ...], i: int) -> float:
    return values[i] if i < len(values) else 0.0
