"""Verdicts on measured acceptance (pure).

* A throughput job whose launch forces an AL (synthetic acceptance): the measurement
  must equal the forced value within ``slack + sigmas·SE`` (SE from the counts, or the
  spread of the logging intervals when that is larger).  Anything else is AL201: the
  forced AL did not take effect.
* A real-verification job (an eval, or a launch without a synthetic knob): the
  measurement is compared with the golden curve point of the launched draft, thinking
  mode and K, in a band of ``band + sigmas·SE``.  When the measurement fits another
  cell (the other thinking mode, another K, a sibling curve of another draft head) and
  not the golden one, or when it lies more than ``far`` beyond the band, that is AL202
  naming the likely cause; just outside the band is AL203.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.al.measure import Measurement
from inferencex_tools.al.rules import (
    FORCED_NOT_SERVED,
    NO_GOLDEN,
    NO_VERDICT,
    NOT_MEASURED,
    OFF_GOLDEN,
    OUTSIDE_BAND,
)
from inferencex_tools.report.findings import Finding


@dataclass(frozen=True)
class Bands:
    """The tolerances (command-line options of ``ixtool al audit``)."""

    sigmas: float = 4.0  # standard errors allowed either way
    slack: float = 0.01  # forced AL: the engines' own rounding of a scheduled AL
    band: float = 0.03  # golden AL: what a real run may differ by beyond the noise
    far: float = 0.20  # golden AL: this far beyond the band is a warning


@dataclass(frozen=True)
class Cell:
    """A golden-curve value the measurement may match instead (for the diagnosis)."""

    what: str  # "the thinking_off value", "K=4", "minimaxm3-eagle3-gqa …"
    value: float
    cause: str  # the likely cause when it matches
    k: int | None = None  # the cell's K


@dataclass
class Launch:
    """What a job's launch requested, from the row's traced launch (``policy`` code)."""

    config_key: str
    entry: str
    tp: Any
    ep: Any
    conc: int
    mode: str  # throughput | eval
    agentic: bool
    multinode: bool
    script: str | None
    config_file: str
    engine: str | None = None
    method: str | None = None
    draft: str | None = None
    k: int | None = None
    has_spec: bool = False
    synthetic: bool = False
    forced: float | None = None
    forced_raw: str | None = None
    thinking: str | None = None
    thinking_evidence: str | None = None
    registry_row: str | None = None
    curve: str | None = None
    golden: float | None = None
    no_golden: str | None = None  # why there is no golden value
    cells: list[Cell] = field(default_factory=list)
    unchecked: str | None = None  # the policy check could not trace this row

    def label(self) -> str:
        return f"{self.config_key} [{self.entry} conc={self.conc} {self.mode}]"

    def to_dict(self) -> dict[str, Any]:
        return {
            "config-key": self.config_key, "entry": self.entry, "tp": self.tp, "ep": self.ep,
            "conc": self.conc, "mode": self.mode, "multinode": self.multinode,
            "engine": self.engine, "method": self.method, "draft": self.draft, "k": self.k,
            "thinking": self.thinking, "synthetic": self.synthetic, "forced": self.forced,
            "forced-setting": self.forced_raw, "registry-row": self.registry_row,
            "curve": self.curve, "golden": self.golden, "script": self.script,
        }


@dataclass
class Verdict:
    status: str  # ok | ERROR | WARNING | note | not measured | measured
    detail: str
    limit: float | None = None  # the tolerance/band used
    finding: Finding | None = None


def where(launch: Launch) -> tuple[str, dict[str, Any]]:
    data = {"config_keys": [launch.config_key],
            "rows": [{"key": launch.config_key, "conc": launch.conc, "mode": launch.mode,
                      "entry": launch.entry}]}
    return launch.script or launch.config_file, data


def _m(m: Measurement) -> str:
    counts = f" over {m.drafts:,.0f} drafts" if m.drafts else f" over {m.intervals} " \
        "log intervals"
    return f"measured AL {m.al:.3f} ± {m.se:.3f}{counts} ({m.source}: {m.file})"


def not_measured(launch: Launch, why: str) -> Verdict:
    if not launch.has_spec:
        return Verdict("not measured", why)
    file, data = where(launch)
    return Verdict("not measured", why, finding=NOT_MEASURED.at(
        file, None, None, f"{launch.label()}: not measured: {why}", data=data))


def judge(launch: Launch, m: Measurement, bands: Bands, artifact: str) -> Verdict:
    if launch.synthetic and launch.forced is not None:
        return _forced(launch, m, bands, artifact)
    if not launch.agentic:
        why = "real acceptance outside agentic-coding: no golden comparison (the curves " \
            "are AgentX's)"
        file, data = where(launch)
        return Verdict("measured", why, finding=NO_VERDICT.at(
            file, None, None, f"{launch.label()}: {_m(m)}; {why}", data=data))
    if launch.golden is None:
        file, data = where(launch)
        why = launch.no_golden or "no golden curve for this launch"
        return Verdict("measured", why, finding=NO_GOLDEN.at(
            file, None, None, f"{launch.label()}: {_m(m)}; {why}", data=data))
    return _real(launch, m, bands, artifact)


def _forced(launch: Launch, m: Measurement, bands: Bands, artifact: str) -> Verdict:
    assert launch.forced is not None
    tol = bands.slack + bands.sigmas * m.se
    d = m.al - launch.forced
    if abs(d) <= tol:
        return Verdict("ok", f"served the forced AL {launch.forced:g} "
                       f"(Δ {d:+.3f}, tolerance {tol:.3f})", tol)
    file, data = where(launch)
    data.update({"forced": launch.forced, "measured": round(m.al, 4), "se": round(m.se, 5),
                 "tolerance": round(tol, 4), "artifact": artifact})
    cause = _forced_cause(launch, m)
    msg = (f"{launch.label()}: the launch forces AL {launch.forced:g} "
           f"({launch.forced_raw or 'synthetic acceptance'}) but the server {_m(m)}: "
           f"Δ {d:+.3f}, tolerance {tol:.3f}; {cause}")
    return Verdict("ERROR", f"forced AL {launch.forced:g} not served (Δ {d:+.3f}, "
                   f"tolerance {tol:.3f}); {cause}", tol,
                   FORCED_NOT_SERVED.at(file, None, None, msg, data=data))


def _forced_cause(launch: Launch, m: Measurement) -> str:
    if launch.golden is not None and launch.golden != launch.forced and \
            abs(m.al - launch.golden) <= 0.01 + 4 * m.se:
        return (f"it served the golden value {launch.golden:g} instead: the launch's "
                "setting was overridden")
    if m.al <= 1.0 + 0.01 + 4 * m.se:
        return "nothing was accepted: the drafter is not running or every draft is rejected"
    return ("this looks like real verification: the synthetic-acceptance setting did not "
            f"take effect in {launch.engine or 'the engine'} (an image that ignores it, "
            "or a recipe/runner edit that dropped it)")


def _real(launch: Launch, m: Measurement, bands: Bands, artifact: str) -> Verdict:
    assert launch.golden is not None
    noise = bands.sigmas * m.se
    band = bands.band + noise
    d = m.al - launch.golden
    cell = f"golden {launch.golden:g} ({launch.registry_row} {launch.thinking or '?'} " \
            f"K={launch.k})"
    if abs(d) <= band:
        return Verdict("ok", f"within the band of {cell} (Δ {d:+.3f}, band {band:.3f})",
                       band)
    file, data = where(launch)
    data.update({"golden": launch.golden, "measured": round(m.al, 4), "se": round(m.se, 5),
                 "band": round(band, 4), "artifact": artifact})
    # a measurement that shows its draft length rules out the cells of other K
    fits = [c for c in launch.cells if abs(m.al - c.value) <= band
            and (m.k_seen is None or c.k is None or abs(c.k - m.k_seen) < 0.05)]
    if fits:
        best = min(fits, key=lambda c: abs(m.al - c.value))
        data["matches"] = {"cell": best.what, "value": best.value}
        msg = (f"{launch.label()}: {_m(m)} matches {best.what} ({best.value:g}), not the "
               f"{cell}: Δ {d:+.3f}, band {band:.3f}; likely cause: {best.cause}")
        return Verdict("WARNING", f"matches {best.what} ({best.value:g}), not {cell}; "
                       f"likely {best.cause}", band,
                       OFF_GOLDEN.at(file, None, None, msg, data=data))
    if abs(d) > band + bands.far:
        cause = _real_cause(m)
        msg = (f"{launch.label()}: {_m(m)} is far from the {cell}: Δ {d:+.3f}, band "
               f"{band:.3f}; likely cause: {cause}")
        return Verdict("WARNING", f"far from {cell} (Δ {d:+.3f}); likely {cause}", band,
                       OFF_GOLDEN.at(file, None, None, msg, data=data))
    msg = (f"{launch.label()}: {_m(m)} is outside the band of the {cell}: Δ {d:+.3f}, "
           f"band {band:.3f}")
    return Verdict("note", f"outside the band of {cell} (Δ {d:+.3f}, band {band:.3f})",
                   band, OUTSIDE_BAND.at(file, None, None, msg, data=data))


def _real_cause(m: Measurement) -> str:
    if m.al <= 1.05:
        return "a broken drafter (almost nothing is accepted)"
    return ("a draft head other than the curve's, a thinking mode other than the "
            "curve's, or a workload unlike the curve's (SPEED-Bench coding)")
