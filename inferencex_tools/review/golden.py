"""The golden-AL table of a spec-decoding recipe (pure, over the policy area's public
functions): what the trace saw against the committed curve of the draft launched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferencex_tools.errors import IxtoolError
from inferencex_tools.review.model import GoldenRow

ENGINE_SETTING = {
    ("vllm", "al"): "synthetic_acceptance_length",
    ("sglang", "al"): "SGLANG_SIMULATE_ACC_LEN",
    ("trt", "al-1"): "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS (AL-1)",
    ("atom", "al"): "--spec-decode-acceptance-length",
    ("atom", "rate"): "--spec-decode-acceptance-rate ((AL-1)/K)",
}


@dataclass
class Seen:
    """One traced launch of a recipe arm, reduced to its speculative facts."""

    arm: str
    mode: str  # throughput | eval
    rows: int
    engine: str | None
    method: str | None = None
    draft: str | None = None
    k: int | None = None
    synthetic: bool = False
    raw: str | None = None
    al: float | None = None
    unit: str = "al"


def facts(arm: str, mode: str, rows: int, tool: str, argv: Sequence[str],
          env: Mapping[str, str]) -> Seen:
    """The policy engine's reading of a rendered server launch."""
    from inferencex_tools.policy.engines import engine_of, facts_of
    from inferencex_tools.policy.trace import Record

    rec = Record(tool=tool, argv=(tool, *argv), env=dict(env), cwd="", files={}, seq=0)
    engine = engine_of(rec)
    if engine is None:
        return Seen(arm, mode, rows, None)
    f = facts_of(rec, engine)
    return Seen(arm, mode, rows, engine, f.method, f.draft, f.k, f.synthetic, f.raw, f.al,
                f.unit)


def engine_value(engine: str, unit: str, al: float, k: int) -> tuple[float, str]:
    if unit == "al-1":
        return round(al - 1, 6), ENGINE_SETTING[("trt", "al-1")]
    if unit == "rate":
        return round((al - 1) / k, 6), ENGINE_SETTING[("atom", "rate")]
    return round(al, 6), ENGINE_SETTING.get((engine, "al"), "AL")


def lookup(store: Any, prefix: str, s: Seen, thinking: str | None
           ) -> tuple[str | None, float | None, str | None]:
    """(curve file, golden AL, why not) for the draft and K launched."""
    from inferencex_tools.policy.golden import golden

    if s.k is None or thinking not in ("thinking_on", "thinking_off"):
        return None, None, "K or thinking mode unknown"
    try:
        ans = golden(store, prefix, k=s.k, thinking=thinking.split("_", 1)[1],
                     draft=s.draft, method=s.method)
    except IxtoolError as exc:
        return None, None, exc.message
    return ans.entry.curve, ans.al, None


def rows_for(key: str, prefix: str, seen: list[Seen], thinking: Mapping[str, str | None],
             verdict: str, store: Any) -> list[GoldenRow]:
    """One table line per distinct (mode, launch facts); arms with the same facts merge."""
    groups: dict[tuple[Any, ...], list[Seen]] = {}
    for s in seen:
        if s.engine is None:
            continue
        groups.setdefault((s.mode, s.engine, s.method, s.draft, s.k, s.raw, s.unit),
                          []).append(s)
    out: list[GoldenRow] = []
    for (mode, engine, method, draft, k, raw, unit), ss in groups.items():
        think = thinking.get(mode) or thinking.get("throughput")
        curve, al, why = lookup(store, prefix, ss[0], think)
        value = setting = None
        if al is not None and k is not None and raw is not None:
            value, setting = engine_value(engine, unit, al, k)
        v = verdict if mode == "throughput" else ("ok" if raw is None else verdict)
        if why and mode == "throughput":
            v = f"{v}; {why}"
        out.append(GoldenRow(key=key, mode=mode, arms=[s.arm for s in ss],
                             rows=sum(s.rows for s in ss), engine=engine, method=method,
                             draft=draft, k=k, thinking=think, curve=curve, golden=value,
                             setting=setting, golden_al=al, seen=raw, verdict=v))
    out.sort(key=lambda g: (g.mode != "throughput", g.arms))
    return out
