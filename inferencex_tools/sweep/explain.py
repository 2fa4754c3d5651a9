"""``ixtool sweep explain KEY``: how one config key expands into matrix rows, pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.errors import InputError, key_hint
from inferencex_tools.report.words import plural
from inferencex_tools.sweep.generate import (
    AGENTIC,
    FIXED,
    RowGenerator,
    SweepRequest,
    generate,
    seq_name,
)
from inferencex_tools.sweep.load import Configs, Runners
from inferencex_tools.sweep.publish import row_gpus


@dataclass
class Arm:
    scenario: str
    seq: str
    arm: str
    concs: list[Any]
    rows: int
    gpus: int | None


@dataclass
class Explanation:
    key: str
    origin: str
    runner: str
    nodes: list[str]
    multinode: bool
    arms: list[Arm] = field(default_factory=list)
    eval_rows: int = 0

    @property
    def total_rows(self) -> int:
        return sum(a.rows for a in self.arms)


def _worker(w: dict[str, Any]) -> str:
    s = f"{w.get('num-worker')}×tp{w.get('tp')}"
    for k, tag in (("ep", "ep"), ("pp", "pp"), ("dcp-size", "dcp"), ("pcp-size", "pcp")):
        if w.get(k, 1) != 1:
            s += f" {tag}{w[k]}"
    if w.get("dp-attn"):
        s += " dpa"
    return s


def _arm(e: dict[str, Any]) -> str:
    parts = []
    if "prefill" in e:
        parts.append(f"P[{_worker(e['prefill'])}] D[{_worker(e['decode'])}]")
    else:
        parts.append(f"tp{e.get('tp')}")
        for k, tag in (("ep", "ep"), ("pp", "pp"), ("dcp-size", "dcp"), ("pcp-size", "pcp")):
            if k in e and e[k] != 1:
                parts.append(f"{tag}{e[k]}")
        if e.get("dp-attn"):
            parts.append("dpa")
    spec = e.get("spec-decoding", "none")
    if spec != "none":
        parts.append(f"spec={spec}")
    kv = e.get("kv-offloading")
    if kv and kv != "none":
        backend = (e.get("kv-offload-backend") or {}).get("name")
        parts.append(f"kv={kv}/{backend}")
    return " ".join(parts)


def explain(configs: Configs, runners: Runners, key: str) -> Explanation:
    if key not in configs.data:
        raise InputError(f"config key {key!r} not found in the master configs",
                         hint=key_hint([key], configs.keys))
    cfg = configs.data[key]
    req = SweepRequest(mode="test", config_keys=[key], no_evals=True)
    gen = RowGenerator(configs, runners, req)
    mn = bool(cfg.get("multinode"))
    ex = Explanation(key, configs.origin.get(key, "?"), cfg["runner"],
                     runners.labels.get(cfg["runner"], []), mn)
    scen = cfg.get("scenarios") or {}
    for item in scen.get(FIXED) or []:
        seq = seq_name(item["isl"], item["osl"])
        for e in item["search-space"]:
            concs = (gen.fixed_mn_concs(e) if mn else gen.fixed_sn_concs(e)) or []
            ex.arms.append(Arm(FIXED, seq, _arm(e), concs,
                               (1 if concs else 0) if mn else len(concs), _gpus(e)))
    for item in scen.get(AGENTIC) or []:
        for e in item["search-space"]:
            concs = gen.agentic_concs(e) or []
            ex.arms.append(Arm(AGENTIC, "-", _arm(e), concs, len(concs), _gpus(e)))
    ex.eval_rows = sum(1 for r in generate(configs, runners, SweepRequest(
        mode="test", config_keys=[key], evals_only=True)))
    return ex


def _gpus(e: dict[str, Any]) -> int | None:
    if "prefill" in e:
        return row_gpus({"prefill": e["prefill"], "decode": e["decode"]})
    return row_gpus(e)


def render(ex: Explanation) -> str:
    head = ["scenario", "seq", "arm", "concurrency", "rows", "GPUs/row"]
    body = [[a.scenario, a.seq, a.arm, ", ".join(str(c) for c in a.concs) or "(none)",
             str(a.rows), str(a.gpus) if a.gpus is not None else "?"] for a in ex.arms]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def fmt(r: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()

    more = ", …" if len(ex.nodes) > 4 else ""
    nodes = (f"{len(ex.nodes)} nodes ({', '.join(ex.nodes[:4])}{more})"
             if ex.nodes else "NOT in runners.yaml (cannot be node-filtered)")
    out = [f"{ex.key}  ({ex.origin})",
           f"  runner {ex.runner}: {nodes}; {'multinode' if ex.multinode else 'single-node'}",
           "", fmt(head), fmt(["-" * w for w in widths]), *[fmt(r) for r in body], "",
           f"{ex.total_rows} throughput rows (test-config, ranges ×2); "
           f"{plural(ex.eval_rows, 'eval row')} with --evals-only; "
           f"× {max(len(ex.nodes), 1)} with --runner-node-filter matching every node"]
    return "\n".join(out) + "\n"
