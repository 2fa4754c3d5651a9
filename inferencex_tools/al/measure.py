"""Measured acceptance length from what a benchmark job uploads (pure: bytes in, a
:class:`Measurement` or a reason out).

Sources (docs/al-audit.md has the facts and where they come from):

* **aiperf's ``server_metrics_export.json``** (``{"metrics": {FAMILY: {"type", "series":
  [{"labels", "stats": {"total", …}}]}}}``; a counter's ``stats.total`` is its increase
  over the profiling phase, summed here over every series (endpoints, engines)).
  vLLM's families ``vllm:spec_decode_num_drafts``, ``…_num_draft_tokens``,
  ``…_num_accepted_tokens`` and ``…_num_accepted_tokens_per_pos`` (label ``position``,
  0-based) give AL = 1 + accepted / drafts exactly, as the golden curves define it.
  TensorRT-LLM's ``trtllm_spec_decode_num_draft_tokens`` / ``…_num_accepted_tokens``
  give it with drafts = draft tokens / K.  SGLang exports only a gauge
  (``sglang:spec_accept_length``): its time average is a coarse fallback.
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

_FAMILIES = {
    "vllm": ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
             "vllm:spec_decode_num_accepted_tokens",
             "vllm:spec_decode_num_accepted_tokens_per_pos"),
    "trt": (None, "trtllm_spec_decode_num_draft_tokens",
            "trtllm_spec_decode_num_accepted_tokens", None),
}
_GAUGES = {"sglang": "sglang:spec_accept_length",
           "trt": "trtllm_spec_decode_acceptance_length"}


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
            return [s for s in series if isinstance(s, dict)]
    return None


def _total(series: dict[str, Any], family: str) -> float:
    stats = series.get("stats")
    v = stats.get("total") if isinstance(stats, dict) else None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise Invalid(f"{family}: a series without a numeric stats.total")
    return float(v)


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


def _spread(series: list[dict[str, Any]]) -> tuple[int, list[float]]:
    """Timeslice totals of a counter family, summed per slice index (for the spread)."""
    slices: dict[int, float] = {}
    for s in series:
        ts = s.get("timeslices")
        if not isinstance(ts, list):
            continue
        for i, t in enumerate(ts[:100_000]):
            v = t.get("total") if isinstance(t, dict) else None
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                slices[i] = slices.get(i, 0.0) + float(v)
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
    """The acceptance in an aiperf export for ``engine``; None when it has none (no such
    family); Invalid / ValueError for a malformed or impossible file."""
    doc = load_json(data)
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(metrics, dict):
        raise Invalid("no 'metrics' object (not an aiperf server_metrics_export.json)")
    drafts_f, tokens_f, acc_f, pos_f = _FAMILIES.get(engine, (None, None, None, None))
    acc = _family(metrics, acc_f)
    if acc is not None:
        tokens = _family(metrics, tokens_f)
        drafts = _family(metrics, drafts_f)
        draft_tokens = _sum(tokens, str(tokens_f)) if tokens else None
        if drafts:
            n = _sum(drafts, str(drafts_f))
        elif draft_tokens is not None and k:
            n = draft_tokens / k
        else:
            raise Invalid(f"{acc_f} without a drafts count (and no K to derive it)")
        accepted = _sum(acc, str(acc_f))
        spread = 0.0
        if drafts:
            m, d_sl = _spread(drafts)
            _, a_sl = _spread(acc)
            spread = _slice_se(d_sl, a_sl) if m else 0.0
        return from_counts("counters", file, drafts=n, accepted=accepted,
                           draft_tokens=draft_tokens, k=k,
                           per_pos_counts=_per_pos(_family(metrics, pos_f), str(pos_f), k),
                           intervals=len(acc), spread=spread)
    return _gauge(metrics, file, engine)


def _gauge(metrics: dict[str, Any], file: str, engine: str) -> Measurement | None:
    name = _GAUGES.get(engine)
    series = _family(metrics, name, variants=False)
    if not series:
        return None
    vals: list[tuple[float, float]] = []
    for s in series:
        st = s.get("stats")
        avg = st.get("avg") if isinstance(st, dict) else None
        std = st.get("std", 0.0) if isinstance(st, dict) else 0.0
        if isinstance(avg, int | float) and not isinstance(avg, bool) and math.isfinite(avg) \
                and avg > 0:
            vals.append((float(avg), float(std) if isinstance(std, int | float)
                         and not isinstance(std, bool) and math.isfinite(std) else 0.0))
    if not vals:
        return None
    al = sum(v for v, _ in vals) / len(vals)
    if not 1.0 - 1e-9 <= al <= 65:
        raise Invalid(f"{name} averages {al:g}, not an acceptance length")
    se = max(max(s for _, s in vals), ROUNDING)
    m = Measurement("gauge", file, al, se, intervals=len(vals))
    m.notes.append(f"{name}: the time average of a gauge, not counts (coarse)")
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
                    v = float(m.group(1))
                    if v > 0:  # 0.00: the interval had no speculative step
                        self.sglang.append(v)

    def _vllm(self, text: str) -> None:
        m = VLLM_LINE.search(text)
        if not m or len(self.vllm) >= 1_000_000:
            return
        rates: tuple[float, ...] = ()
        if m.group(4):
            try:
                rates = tuple(float(x) for x in m.group(4).split(",") if x.strip())
            except ValueError:
                rates = ()
        self.vllm.append((float(m.group(1)), int(m.group(2)[:16]), int(m.group(3)[:16]),
                          rates[:64]))


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
