"""The golden-AL table of a spec-decoding recipe (pure): the policy check's verdict rows
(what each traced launch pinned, the curve row of the draft launched, the thinking mode)
grouped into one line per distinct launch and mode."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from inferencex_tools.review.model import ArmLine, GoldenRow

SUMMARY_RX = re.compile(r"^(?P<engine>\S+) (?P<method>\S+), draft (?P<draft>.+?), "
                        r"K=(?P<k>\S+), (?:synthetic (?P<raw>.+)|real verification)$")


def launch_k(tool: str, argv: Sequence[str], env: Mapping[str, str]) -> int | None:
    """The draft length K of a rendered server launch (policy's engine reading)."""
    from inferencex_tools.policy.engines import engine_of, facts_of
    from inferencex_tools.sandbox import Record

    rec = Record(tool=tool, argv=(tool, *argv), env=dict(env), cwd="", files={}, seq=0)
    engine = engine_of(rec)
    return facts_of(rec, engine).k if engine else None


def engine_value(raw: str, al: float, k: int | None) -> tuple[float, str]:
    """The golden AL in the unit of the knob the launch used (TRT: AL-1; ATOM's rate:
    (AL-1)/K; otherwise the AL itself)."""
    knob = raw.split("=", 1)[0].strip()
    if "FORCE_NUM_ACCEPTED" in knob.upper():
        return round(al - 1, 6), knob
    if "rate" in knob.lower() and k:
        return round((al - 1) / k, 6), knob
    return round(al, 6), knob


def _modes(text: str | None) -> dict[str, float]:
    """``thinking_on 3.39, thinking_off 3.33`` → {mode: AL}."""
    vals: dict[str, float] = {}
    for part in (text or "").split(","):
        mode, _, v = part.strip().partition(" ")
        try:
            vals[mode] = float(v)
        except ValueError:
            continue
    return vals


def _expected(text: str | None, thinking: str | None) -> float | None:
    """``thinking_on 2.83`` (or several, comma-separated) → the value of ``thinking``."""
    vals = _modes(text)
    if thinking in vals:
        return vals[thinking]
    return next(iter(vals.values())) if len(vals) == 1 else None


def curve_of(store: Any, row_id: str | None) -> str | None:
    if store is None or not row_id:
        return None
    for e in store.registry.entries:
        if e.id == row_id:
            return str(e.curve)
    return None


def from_policy_rows(key: str, rows: list[dict[str, Any]], store: Any) -> list[GoldenRow]:
    """One table line per distinct (mode, launch, thinking, curve row) of the policy
    check's verdict rows of ``key``."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("config-key") != key:
            continue
        groups.setdefault((r.get("mode"), r.get("launch"), r.get("thinking"),
                           r.get("registry-row"), r.get("expected")), []).append(r)
    out: list[GoldenRow] = []
    for (mode, launch, thinking, row_id, expected), rs in groups.items():
        m = SUMMARY_RX.match(str(launch or ""))
        if m is None:
            continue
        k = int(m["k"]) if m["k"].isdigit() else None
        draft = None if m["draft"] == "(native)" else m["draft"]
        al = _expected(expected, thinking)
        value = setting = None
        by_mode: dict[str, float] = {}
        if al is not None and m["raw"]:
            value, setting = engine_value(m["raw"], al, k)
        elif m["raw"]:
            for md, v in _modes(expected).items():
                by_mode[md], setting = engine_value(m["raw"], v, k)
        fails = sorted({v for r in rs if str(r.get("verdict", "")).startswith("FAIL")
                        for v in str(r["verdict"])[5:].split(",")})
        arms = list(dict.fromkeys(str(r.get("arm") or r.get("entry")) for r in rs))
        out.append(GoldenRow(key=key, mode=str(mode), arms=arms, rows=len(rs),
                             engine=m["engine"], method=m["method"], draft=draft, k=k,
                             thinking=thinking if thinking != "undetermined" else None,
                             curve=curve_of(store, row_id), golden=value, setting=setting,
                             golden_al=al, seen=m["raw"],
                             verdict="FAIL " + ",".join(fails) if fails else "ok",
                             by_mode=by_mode))
    out.sort(key=lambda g: (g.mode != "throughput", g.arms))
    return out


def jobs_of(golden: list[GoldenRow], lines: Sequence[ArmLine]) -> None:
    """Each table line's jobs and arms as the matrix at a glance counts them (the policy
    check verifies every arm's eval launch; the sweep starts fewer eval jobs)."""
    for g in golden:
        mine = [ln for ln in lines if ln.key == g.key and ln.mode == g.mode
                and ln.arm in g.arms]
        g.jobs = sum(ln.jobs for ln in mine)
        g.job_arms = list(dict.fromkeys(ln.arm for ln in mine))


def _facts(job: Any) -> tuple[Any, Any] | None:
    """(SpecFacts, trace record) of a rendered job's server launch when it drafts."""
    from inferencex_tools.policy.engines import engine_of, facts_of
    from inferencex_tools.sandbox import Record

    srv = getattr(job, "server", None)
    if srv is None:
        return None
    rec = Record(tool=srv.tool, argv=(srv.tool, *srv.argv), env=dict(srv.env), cwd="",
                 files={}, seq=0)
    engine = engine_of(rec)
    f = facts_of(rec, engine) if engine else None
    return (f, rec) if f is not None and f.has_spec else None


def _line_verdict(f: Any, got: Any) -> str:
    from inferencex_tools.policy.curves import TOLERANCE

    if f.synthetic and f.al is not None and got.value is not None and \
            abs(f.al - got.value) > TOLERANCE:
        return f"differs: forces {f.al:g} (not changed here)"
    if got.value is None and got.why:
        return f"no golden value: {got.why}"
    return "ok"


def from_launches(key: str, jobs: Sequence[Any], store: Any, prefix: str) -> list[GoldenRow]:
    """The table lines of a key the change does not touch but its sweep runs (a
    changelog entry for an existing key): from the key's rendered launches (``launch
    render``), with the one golden lookup of ``policy`` and ``al audit`` in the store
    the gate judges with.  Not judged here: the line says whether the forced AL is the
    golden one."""
    from inferencex_tools.policy.golden import lookup
    from inferencex_tools.sweep.arms import arm_label

    groups: dict[tuple[Any, ...], GoldenRow] = {}
    for job in jobs if store is not None else []:
        fr = _facts(job)
        if fr is None:
            continue
        f, rec = fr
        got = lookup(store, prefix, f, [rec])
        mode = "eval" if job.eval_only else "throughput"
        value = setting = None
        if got.value is not None and f.raw:
            value, setting = engine_value(f.raw, got.value, f.k)
        gid = (mode, f.summary(), got.mode, got.entry.id if got.entry else None)
        arm = arm_label(job.row)
        line = groups.get(gid)
        if line is None:
            groups[gid] = GoldenRow(
                key=key, mode=mode, arms=[arm], rows=1, engine=f.engine, method=f.method,
                draft=f.draft, k=f.k, thinking=got.mode,
                curve=got.entry.curve if got.entry else None, golden=value,
                setting=setting, golden_al=got.value,
                seen=f.raw if f.synthetic else None, verdict=_line_verdict(f, got))
            continue
        line.rows += 1
        if arm not in line.arms:
            line.arms.append(arm)
    return sorted(groups.values(), key=lambda g: (g.mode != "throughput", g.arms))
