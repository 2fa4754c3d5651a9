"""``ixtool policy golden``: the golden AL for one cell, in every engine's unit (G-11)."""

from __future__ import annotations

from dataclasses import dataclass

from inferencex_tools.errors import UsageError
from inferencex_tools.policy.curves import RegistryEntry
from inferencex_tools.policy.store import CurveStore


@dataclass(frozen=True)
class EngineValue:
    engine: str
    setting: str
    value: float


@dataclass(frozen=True)
class GoldenAnswer:
    entry: RegistryEntry
    mode: str
    k: int
    al: float
    source_run: str | None
    values: tuple[EngineValue, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "registry-row": self.entry.id,
            "curve": self.entry.curve,
            "model-key": self.entry.model_key,
            "draft": self.entry.draft,
            "method": self.entry.method,
            "mode": self.mode,
            "k": self.k,
            "al": self.al,
            "source-run": self.source_run,
            "engines": [
                {"engine": v.engine, "setting": v.setting, "value": v.value} for v in self.values
            ],
        }


def engine_values(al: float, k: int) -> tuple[EngineValue, ...]:
    """The golden AL spelled for each engine (AL counts the bonus token)."""
    return (
        EngineValue("vllm", "synthetic_acceptance_length (with rejection_sample_method: "
                    "synthetic)", round(al, 6)),
        EngineValue("sglang", "SGLANG_SIMULATE_ACC_LEN", round(al, 6)),
        EngineValue("trt", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS (AL-1)", round(al - 1, 6)),
        EngineValue("atom", "--spec-decode-acceptance-length", round(al, 6)),
        EngineValue("atom", "--spec-decode-acceptance-rate ((AL-1)/K)", round((al - 1) / k, 6)),
    )


def find_entries(
    store: CurveStore, model: str, *, draft: str | None, method: str | None,
    sample: str | None,
) -> list[RegistryEntry]:
    """Registry rows for MODEL (model-prefix, curve model key, or a model id containing
    the prefix) narrowed by the options given."""
    m = model.lower()
    rows = [e for e in store.registry.entries
            if m in (e.model_prefix.lower(), e.model_key.lower())]
    if draft is not None:
        rows = [e for e in rows if e.matches_draft(draft)]
    if method is not None:
        rows = [e for e in rows if e.method == method.lower()]
    if sample is not None:
        rows = [e for e in rows if (e.draft_sample_method or "default") == sample]
    return rows


def _selector(e: RegistryEntry, rows: list[RegistryEntry]) -> str:
    """The options that pick ``e`` out of ``rows`` (``--sample default`` where a sibling
    differs only in sampling)."""
    out = ([f"--draft {e.draft}"] if e.draft else []) + [f"--method {e.method}"]
    if e.draft_sample_method or any(o is not e and o.method == e.method and o.draft == e.draft
                                    for o in rows):
        out.append(f"--sample {e.draft_sample_method or 'default'}")
    return " ".join(out)


def golden(
    store: CurveStore, model: str, *, k: int, thinking: str, draft: str | None = None,
    method: str | None = None, sample: str | None = None,
) -> GoldenAnswer:
    rows = find_entries(store, model, draft=draft, method=method, sample=sample)
    if not rows:
        known = sorted({f"{e.model_prefix} ({e.draft or e.method})"
                        for e in store.registry.entries})
        raise UsageError(f"no registry row for model '{model}'"
                         + (f" with draft '{draft}'" if draft else ""),
                         hint="registered: " + ", ".join(known))
    if len(rows) > 1:
        raise UsageError(f"'{model}' has {len(rows)} curves; curves of different draft heads "
                         "or sampling modes are never mixed, so say which one",
                         hint="; ".join(f"{e.id}: {_selector(e, rows)}" for e in rows))
    entry = rows[0]
    curve, why = store.curve_for(entry)
    if curve is None:
        raise UsageError(why or f"curve of {entry.label()} unavailable",
                         hint="pass --curves-dir DIR holding the curve files")
    mode = {"on": "thinking_on", "off": "thinking_off"}[thinking]
    al = curve.value(mode, k)
    if al is None:
        have = ", ".join(f"{m}: K {min(t)}..{max(t)}" for m, t in curve.modes.items())
        raise UsageError(f"{entry.curve} has no {mode} value for K={k}", hint=f"it has {have}")
    return GoldenAnswer(entry, mode, k, al, curve.source_run, engine_values(al, k))
