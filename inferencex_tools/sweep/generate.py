"""Row generation, pure: loaded configs + a request → the list of matrix rows.

Behaviour follows SWEEP.md §3–§5 exactly (row shapes, key order, ordering and
the reference's filter quirks), so the JSON printed from these rows equals the
reference generator's output.  Validation happens before (see
:mod:`inferencex_tools.sweep.checks`); this module assumes validated input.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from inferencex_tools.errors import InputError, UsageError, key_hint
from inferencex_tools.sweep.load import Configs, Runners

_GPUS_HINT = ("check tp, pp and pcp-size against gpus-per-node of the runner in "
    "configs/runners.yaml")

FIXED = "fixed-seq-len"
AGENTIC = "agentic-coding"
SCENARIOS = (FIXED, AGENTIC)
SEQ_LENS = {"1k1k": (1024, 1024), "8k1k": (8192, 1024)}
EVAL_SEQ = (8192, 1024)
MIN_EVAL_CONC = 16
AGENTIC_DURATION = 3600
DRAM_MIB_CAP = 2_861_022

Row = dict[str, Any]


@dataclass
class SweepRequest:
    """One generator invocation (``full`` or ``test-config``), already parsed."""

    mode: str = "full"  # "full" | "test"
    config_keys: list[str] | None = None  # test-config patterns
    model_prefix: list[str] | None = None
    precision: list[str] | None = None
    framework: list[str] | None = None
    runner_type: list[str] | None = None
    seq_lens: list[str] | None = None
    step_size: int = 2
    min_conc: int | None = None
    max_conc: int | None = None
    max_tp: int | None = None
    max_ep: int | None = None
    single_node: bool = False
    multi_node: bool = False
    scenario_types: list[str] = field(default_factory=lambda: list(SCENARIOS))
    runner_node_filter: str | None = None
    conc: list[int] | None = None  # test-config --conc
    no_evals: bool = False
    evals_only: bool = False
    all_evals: bool = False

    def check(self) -> None:
        """The reference's post-parse usage checks (exit 2)."""
        if self.mode not in ("full", "test"):
            raise UsageError(f"unknown sweep mode {self.mode!r}",
                             hint="this is a bug; re-run with --traceback and report it")
        if self.no_evals and self.evals_only:
            raise UsageError("--evals-only cannot be combined with --no-evals",
                             hint="drop one of --evals-only and --no-evals")
        if self.no_evals and self.all_evals:
            raise UsageError("--all-evals cannot be combined with --no-evals",
                             hint="drop one of --all-evals and --no-evals")
        if self.step_size <= 1:
            raise UsageError("--step-size must be greater than 1",
                             hint="e.g. --step-size 2 (the default)")
        if (self.min_conc is not None and self.max_conc is not None
                and self.min_conc > self.max_conc):
            raise UsageError("--min-conc must be less than or equal to --max-conc",
                             hint="swap the two bounds")
        for s in self.seq_lens or []:
            if s not in SEQ_LENS:
                raise UsageError(f"--seq-lens: invalid choice {s!r} (choose from 1k1k, 8k1k)",
                                 hint="--seq-lens takes 1k1k and/or 8k1k")
        for t in self.scenario_types:
            if t not in SCENARIOS:
                raise UsageError(
                    f"--scenario-type: invalid choice {t!r} (choose from {', '.join(SCENARIOS)})",
                    hint=f"--scenario-type takes {' and/or '.join(SCENARIOS)}")
        if self.mode == "test" and not self.config_keys:
            raise UsageError("test-config needs --config-keys",
                             hint="e.g. ixtool sweep test-config --config-keys "
                             "dsr1-fp8-h200-sglang")


# ------------------------------------------------------------------------ helpers

def expand_range(start: int, end: int, step: int) -> list[int]:
    """start, start·step, … clamped to and always ending with ``end`` (§3.2)."""
    out: list[int] = []
    c = start
    while True:
        out.append(c)
        if c >= end:
            break
        c = c * step
        if c > end:
            c = end
    return out


def seq_name(isl: Any, osl: Any) -> str:
    for name, pair in SEQ_LENS.items():
        if (isl, osl) == pair:
            return name
    return f"{isl}_{osl}"


def _num(v: Any) -> Any:
    """A lax-validated integer ("8", 8.0, True) as a number, for comparisons only."""
    return int(v) if isinstance(v, str) else v


def _flag(v: Any) -> bool:
    """A lax-validated boolean ("false", "no", 0 …) as the bool validation meant.

    ``bool("false")`` is True: a quoted ``multinode: "false"`` passed validation and
    then sent a single-node config down the multinode path (KeyError 'prefill').
    """
    if isinstance(v, str):
        return v.strip().lower() in ("true", "yes", "on", "1", "t", "y")
    return bool(v)


def _worker(w: dict[str, Any]) -> dict[str, Any]:
    out = dict(w)
    for k in ("pp", "dcp-size", "pcp-size"):
        out.setdefault(k, 1)
    return out


def _worker_tag(w: dict[str, Any]) -> str:
    tag = f"{w['num-worker']}x{w['tp']}"
    if w["ep"] != 1:
        tag += f"ep{w['ep']}"
    if w["dp-attn"]:
        tag += "dpa"
    return tag


def resolve_config_keys(patterns: Iterable[str], keys: list[str]) -> list[str]:
    """test-config key resolution: fnmatch globs (``*``/``?``) or exact keys (§2.3)."""
    seen: dict[str, None] = {}
    key_set = set(keys)
    for pat in patterns:
        if "*" in pat or "?" in pat:
            matched = [k for k in keys if fnmatch.fnmatchcase(k, pat)]
            if not matched:
                raise InputError(
                    f"config-key pattern {pat!r} matched no keys",
                    hint=key_hint([pat], keys))
            for k in matched:
                seen.setdefault(k, None)
        elif pat in key_set:
            seen.setdefault(pat, None)
        else:
            raise InputError(
                f"config key {pat!r} not found in the master configs",
                hint=key_hint([pat], keys))
    return list(seen)


def dram_budget(cfg: dict[str, Any], key: str, runners: Runners, util: Any,
                gpus: int) -> int:
    """``total-cpu-dram-gb`` of a DRAM-offload entry (§3.8)."""
    label = cfg["runner"]
    hw = runners.hardware.get(label)
    for fld in ("available-cpu-dram-mib", "gpus-per-node"):
        if hw is None or fld not in hw:
            raise InputError(
                f"{key}: runner {label!r} requires '{fld}' in runners.yaml hardware for "
                "DRAM KV offload",
                hint="available hardware keys: " + ", ".join(sorted(runners.hardware)))
    assert hw is not None
    avail = min(int(hw["available-cpu-dram-mib"]), DRAM_MIB_CAP)
    g = int(hw["gpus-per-node"])
    if util is None:
        raise InputError(f"{key}: kv-offloading dram needs dram-utilization",
                         hint="add dram-utilization to the entry (ixtool config validate "
                         "checks every entry)")
    val = (Decimal(avail) * Decimal(1_048_576) * Decimal(str(util)) * Decimal(gpus)
           / Decimal(g) / Decimal(10**9))
    return int(val.to_integral_value(rounding=ROUND_FLOOR))


def _sn_gpus(key: str, e: dict[str, Any], runners: Runners, label: str) -> int:
    gpus = int(e["tp"]) * int(e.get("pp", 1)) * int(e.get("pcp-size", 1))
    hw = runners.hardware.get(label) or {}
    g = hw.get("gpus-per-node")
    if isinstance(g, int) and gpus > g:
        raise InputError(
            f"{key}: DRAM offload entry requires {gpus} GPUs (tp·pp·pcp), which exceeds "
            f"gpus-per-node {g} of {label!r}",
            hint=_GPUS_HINT)
    return gpus


def _mn_gpus(key: str, prefill: dict[str, Any], runners: Runners, label: str) -> int:
    w = int(prefill["tp"]) * int(prefill.get("pp", 1)) * int(prefill.get("pcp-size", 1))
    hw = runners.hardware.get(label) or {}
    g = hw.get("gpus-per-node")
    if not isinstance(g, int):
        return w  # dram_budget reports the missing field
    if w > g:
        if w % g:
            raise InputError(
                f"{key}: prefill footprint {w} GPUs is not a multiple of gpus-per-node {g}",
                hint=_GPUS_HINT)
        return g
    if g % w:
        raise InputError(f"{key}: prefill footprint {w} GPUs does not divide gpus-per-node {g}",
                         hint=_GPUS_HINT)
    return w


# ------------------------------------------------------------------------ generator

@dataclass(frozen=True)
class _FixedSeq:
    """What every row of one fixed-seq-len item shares."""

    isl: int
    osl: int
    exp_name: str
    max_model_len: int


def _bounded_list(concs: list[Any], lo: int | None, hi: int | None) -> list[Any] | None:
    """A conc-list under --min-conc/--max-conc (None: the entry yields no rows); above
    the list, --max-conc itself is used."""
    if lo is not None:
        if lo <= 0:
            return None
        concs = [c for c in concs if c >= lo]
        if not concs:
            return None
    if hi is not None:
        if hi <= 0:
            return None
        concs = [c for c in concs if c <= hi] or [hi]
    return concs


class RowGenerator:
    def __init__(self, configs: Configs, runners: Runners, req: SweepRequest) -> None:
        self.configs = configs
        self.runners = runners
        self.req = req
        self.full = req.mode == "full"
        self.rows: list[Row] = []
        self.step = req.step_size if self.full else 2
        self.seq_pairs = ({SEQ_LENS[s] for s in req.seq_lens} if req.seq_lens else None)
        self.conc_set = set(req.conc) if req.conc is not None else None
        self.origin: dict[int, str] = {}  # id(row) → config key (provenance)

    # -- selection
    def selected(self) -> list[str]:
        req = self.req
        if not self.full:
            return resolve_config_keys(req.config_keys or [], list(self.configs.data))
        if req.runner_type:
            bad = sorted(set(req.runner_type) - set(self.runners.labels))
            if bad:
                raise InputError(
                    f"invalid runner type(s): {', '.join(bad)}",
                    hint="valid runner types: " + ", ".join(sorted(self.runners.labels)))
        return [key for key, cfg in self.configs.data.items() if self._wanted(key, cfg)]

    def _wanted(self, key: str, cfg: dict[str, Any]) -> bool:
        """Does a full sweep's filter (prefix, precision, framework, runner, node kind)
        keep config ``key``?"""
        req = self.req
        if req.model_prefix and not any(key.startswith(p) for p in req.model_prefix):
            return False
        if req.precision and cfg["precision"] not in req.precision:
            return False
        if req.framework and cfg["framework"] not in req.framework:
            return False
        if req.runner_type and cfg["runner"] not in req.runner_type:
            return False
        if req.single_node or req.multi_node:
            mn = _flag(cfg.get("multinode"))
            if (mn and not req.multi_node) or (not mn and not req.single_node):
                return False
        return True

    def runner_values(self, cfg: dict[str, Any]) -> list[str]:
        label = cfg["runner"]
        s = self.req.runner_node_filter
        if s is None:
            return [label]
        nodes = [n for n in self.runners.labels.get(label, []) if s in n]
        if not self.full and s in label:
            nodes = [label, *nodes]
        return nodes

    # -- concurrency
    def fixed_sn_concs(self, e: dict[str, Any]) -> list[Any] | None:
        req = self.req
        lo, hi = (req.min_conc, req.max_conc) if self.full else (None, None)
        clist = e.get("conc-list")
        if self.full:
            use_list = bool(clist)
        else:
            use_list = "conc-list" in e
            if use_list and clist is None:
                raise InputError("conc-list is null; write a list of concurrencies",
                             hint="e.g. conc-list: [4, 8, 16]")
        if use_list:
            concs = _bounded_list(list(clist or []), lo, hi)
            return None if concs is None else self._conc_filter(concs)
        start, end = e["conc-start"], e["conc-end"]
        if lo is not None:
            if lo <= 0 or end < lo:
                return None
            start = max(start, lo)
        if hi is not None:
            if hi <= 0:
                return None
            if start > hi:
                return self._conc_filter([hi])
            end = min(end, hi)
        return self._conc_filter(expand_range(start, end, self.step))

    def _conc_filter(self, concs: list[Any]) -> list[Any] | None:
        if self.conc_set is not None:
            concs = [c for c in concs if c in self.conc_set]
            if not concs:
                return None
        return concs

    def _expanded(self, e: dict[str, Any]) -> list[Any]:
        if self.full:
            clist = e.get("conc-list")
            if clist:
                return list(clist)
        elif "conc-list" in e:
            clist = e.get("conc-list")
            if clist is None:
                raise InputError("conc-list is null; write a list of concurrencies",
                             hint="e.g. conc-list: [4, 8, 16]")
            return list(clist)
        return expand_range(e["conc-start"], e["conc-end"], self.step)

    def fixed_mn_concs(self, e: dict[str, Any]) -> list[Any] | None:
        concs = self._expanded(e)
        if self.full:
            lo, hi = self.req.min_conc, self.req.max_conc
            if lo is not None:
                if lo <= 0:
                    return None
                concs = [c for c in concs if c >= lo]
                if not concs:
                    return None
            if hi is not None:
                kept = [c for c in concs if c <= hi]
                if not kept:
                    if hi <= 0:
                        return None
                    kept = [hi]
                concs = kept
        return self._conc_filter(concs)

    def agentic_concs(self, e: dict[str, Any]) -> list[Any] | None:
        concs = self._expanded(e)
        if self.full:
            lo, hi = self.req.min_conc, self.req.max_conc
            if lo is not None:
                concs = [c for c in concs if c >= lo]
            if hi is not None:
                concs = [c for c in concs if c <= hi]
            if not concs:
                return None
        return self._conc_filter(concs)

    # -- rows
    def run(self) -> list[Row]:
        for key in self.selected():
            cfg = self.configs.data[key]
            runners = self.runner_values(cfg)
            if not runners:
                continue
            scen = cfg.get("scenarios") or {}
            start = len(self.rows)
            if FIXED in self.req.scenario_types:
                for item in scen.get(FIXED) or []:
                    self.fixed_item(key, cfg, item, runners)
            if AGENTIC in self.req.scenario_types:
                for item in scen.get(AGENTIC) or []:
                    self.agentic_item(key, cfg, item, runners)
            for row in self.rows[start:]:
                self.origin[id(row)] = key
        return self.rows

    def _head(self, cfg: dict[str, Any]) -> Row:
        return {
            "image": cfg["image"],
            "model": cfg["model"],
            "model-prefix": cfg["model-prefix"],
            "precision": cfg["precision"],
            "framework": cfg["framework"],
        }

    def fixed_item(self, key: str, cfg: dict[str, Any], item: dict[str, Any],
                   runners: list[str]) -> None:
        isl, osl = item["isl"], item["osl"]
        if self.seq_pairs is not None and (isl, osl) not in self.seq_pairs:
            return
        seq = _FixedSeq(isl, osl, f"{cfg['model-prefix']}_{seq_name(isl, osl)}",
                        isl + osl + 256)
        multinode = _flag(cfg.get("multinode"))
        for e in item["search-space"]:
            if multinode:
                self._fixed_mn_rows(cfg, e, seq, runners)
            else:
                self._fixed_sn_rows(cfg, e, seq, runners)

    def _fixed_sn_rows(self, cfg: dict[str, Any], e: dict[str, Any], seq: _FixedSeq,
                       runners: list[str]) -> None:
        """Rows of one single-node fixed-seq-len entry: concurrency × runner."""
        req = self.req
        router = e.get("router", cfg.get("router"))
        tp = e["tp"]
        ep = e.get("ep")
        if self.full and req.max_tp is not None and (req.max_tp <= 0 or _num(tp) > req.max_tp):
            return
        if self.full and req.max_ep is not None:
            if req.max_ep <= 0:
                return
            if ep is not None and _num(ep) > req.max_ep:
                ep = req.max_ep
        concs = self.fixed_sn_concs(e)
        if not concs:
            return
        for c in concs:
            for r in runners:
                row = self._head(cfg)
                row["runner"] = r
                row["isl"] = seq.isl
                row["osl"] = seq.osl
                row["tp"] = tp
                row["pp"] = e.get("pp", 1)
                row["dcp-size"] = e.get("dcp-size", 1)
                row["pcp-size"] = e.get("pcp-size", 1)
                row["conc"] = c
                row["max-model-len"] = seq.max_model_len
                row["ep"] = 1 if ep is None else ep
                row["dp-attn"] = e.get("dp-attn", False)
                row["spec-decoding"] = e.get("spec-decoding", "none")
                row["exp-name"] = seq.exp_name
                row["disagg"] = cfg.get("disagg", False)
                row["run-eval"] = False
                if router is not None:
                    row["router"] = router
                self.rows.append(row)

    def _fixed_mn_rows(self, cfg: dict[str, Any], e: dict[str, Any], seq: _FixedSeq,
                       runners: list[str]) -> None:
        """Rows of one multinode fixed-seq-len entry: one per runner, all concurrencies."""
        router = e.get("router", cfg.get("router"))
        concs = self.fixed_mn_concs(e)
        if not concs:
            return
        p2p = e.get("kv-p2p-transfer", cfg.get("kv-p2p-transfer"))
        for r in runners:
            row = self._head(cfg)
            row["runner"] = r
            row["isl"] = seq.isl
            row["osl"] = seq.osl
            row["spec-decoding"] = e.get("spec-decoding", "none")
            row["prefill"] = _worker(e["prefill"])
            row["decode"] = _worker(e["decode"])
            row["conc"] = list(concs)
            row["max-model-len"] = seq.max_model_len
            row["exp-name"] = seq.exp_name
            row["disagg"] = cfg.get("disagg", False)
            row["run-eval"] = False
            if router is not None:
                row["router"] = router
            if p2p is not None:
                row["kv-p2p-transfer"] = p2p
            self.rows.append(row)

    def agentic_item(self, key: str, cfg: dict[str, Any], item: dict[str, Any],
                     runners: list[str]) -> None:
        multinode = _flag(cfg.get("multinode"))
        for e in item["search-space"]:
            if multinode:
                self._agentic_mn_rows(key, cfg, item, e, runners)
            else:
                self._agentic_sn_rows(key, cfg, item, e, runners)

    def _agentic_sn_rows(self, key: str, cfg: dict[str, Any], item: dict[str, Any],
                         e: dict[str, Any], runners: list[str]) -> None:
        """Rows of one single-node (tp-style) agentic entry: concurrency × runner."""
        if "tp" not in e:
            raise InputError(
                f"{key}: agentic search-space entry uses prefill/decode in a "
                "single-node config (multinode: false)",
                hint="use tp/ep in single-node configs, prefill/decode when multinode: true")
        router = e.get("router", cfg.get("router"))
        kv = e.get("kv-offloading", "none")
        backend = e.get("kv-offload-backend")
        spec = e.get("spec-decoding", "none")
        dram = 0
        if kv == "dram":
            dram = dram_budget(cfg, key, self.runners, item.get("dram-utilization"),
                               _sn_gpus(key, e, self.runners, cfg["runner"]))
        concs = self.agentic_concs(e)
        if not concs:
            return
        kv_tag = "kvnone" if kv == "none" else f"kv{kv}-{(backend or {}).get('name')}"
        spec_tag = "" if spec == "none" else f"_spec-{spec}"
        for c in concs:
            for r in runners:
                row = self._head(cfg)
                row["runner"] = r
                row["tp"] = e["tp"]
                row["pp"] = e.get("pp", 1)
                row["dcp-size"] = e.get("dcp-size", 1)
                row["pcp-size"] = e.get("pcp-size", 1)
                row["ep"] = e.get("ep", 1)
                row["dp-attn"] = e.get("dp-attn", False)
                row["spec-decoding"] = spec
                row["conc"] = c
                row["kv-offloading"] = kv
                row["total-cpu-dram-gb"] = dram
                row["duration"] = AGENTIC_DURATION
                row["exp-name"] = f"{cfg['model-prefix']}_tp{e['tp']}_conc{c}_{kv_tag}{spec_tag}"
                row["scenario-type"] = AGENTIC
                if backend is not None:
                    row["kv-offload-backend"] = backend
                if router is not None:
                    row["router"] = router
                self.rows.append(row)

    def _agentic_mn_rows(self, key: str, cfg: dict[str, Any], item: dict[str, Any],
                         e: dict[str, Any], runners: list[str]) -> None:
        """Rows of one multinode (prefill/decode) agentic entry: runner × concurrency."""
        if "prefill" not in e or "decode" not in e:
            raise InputError(
                f"{key}: agentic search-space entry uses tp in a multinode config "
                "(multinode: true needs prefill/decode workers)",
                hint="use tp/ep in single-node configs, prefill/decode when multinode: true")
        router = e.get("router", cfg.get("router"))
        kv = e.get("kv-offloading", "none")
        backend = e.get("kv-offload-backend")
        spec = e.get("spec-decoding", "none")
        prefill, decode = _worker(e["prefill"]), _worker(e["decode"])
        dram = 0
        if kv == "dram":
            dram = dram_budget(cfg, key, self.runners, item.get("dram-utilization"),
                               _mn_gpus(key, prefill, self.runners, cfg["runner"]))
        concs = self.agentic_concs(e)
        if not concs:
            return
        p2p = e.get("kv-p2p-transfer", cfg.get("kv-p2p-transfer"))
        base = f"{cfg['model-prefix']}_p{_worker_tag(prefill)}_d{_worker_tag(decode)}"
        kv_tag = "" if kv == "none" else f"_kv{kv}-{(backend or {}).get('name')}"
        for r in runners:
            for c in concs:
                row = self._head(cfg)
                row["runner"] = r
                row["spec-decoding"] = spec
                row["prefill"] = dict(prefill)
                row["decode"] = dict(decode)
                row["conc"] = [c]
                row["kv-offloading"] = kv
                row["total-cpu-dram-gb"] = dram
                row["duration"] = AGENTIC_DURATION
                row["exp-name"] = f"{base}_conc{c}{kv_tag}"
                row["disagg"] = cfg.get("disagg", False)
                row["scenario-type"] = AGENTIC
                if backend is not None:
                    row["kv-offload-backend"] = backend
                if router is not None:
                    row["router"] = router
                if p2p is not None:
                    row["kv-p2p-transfer"] = p2p
                self.rows.append(row)


# ------------------------------------------------------------------------ evals

_NOT_KEY = ("conc", "run-eval", "eval-only", "eval-conc", "eval-all-concs", "exp-name")


def _para_key(row: Row) -> str:
    return json.dumps({k: v for k, v in row.items() if k not in _NOT_KEY}, sort_keys=True,
                      default=str)


def _is_agentic(row: Row) -> bool:
    return row.get("scenario-type") == AGENTIC


def _is_eval_seq(row: Row) -> bool:
    return (row.get("isl"), row.get("osl")) == EVAL_SEQ


def _max_eligible(row: Row) -> Any:
    elig = [c for c in row["conc"] if c >= MIN_EVAL_CONC]
    return max(elig) if elig else None


_EXACT = (str, int, bool, type(None))


def _part(x: Any) -> Any:
    """One part of a grouping key, equal exactly when the parts' JSON texts are equal
    (``1``, ``1.0`` and ``true`` stay apart): the value with its type for the plain
    scalars, the JSON text otherwise (floats, lists)."""
    return (type(x), x) if type(x) in _EXACT else json.dumps(x, default=str)


@dataclass
class _EvalGroups:
    """Rows competing for the eval mark (§4.1), by kind."""

    sn: dict[tuple[Any, ...], list[Row]] = field(default_factory=dict)
    mn: dict[str, list[tuple[Row, Any]]] = field(default_factory=dict)
    ag: dict[tuple[Any, ...], list[Row]] = field(default_factory=dict)

    def add(self, r: Row, *, agentic: bool) -> None:
        is_mn = "prefill" in r
        if _is_agentic(r):
            r["run-eval"] = False
            if agentic:
                self._add_agentic(r, is_mn)
            return
        if not _is_eval_seq(r):
            return
        if is_mn:
            m = _max_eligible(r)
            if m is not None:
                self.mn.setdefault("F" + _para_key(r), []).append((r, m))
        elif r["conc"] >= MIN_EVAL_CONC:
            sk = (r["model"], r["runner"], r["framework"], r["precision"], r["isl"], r["osl"],
                  r["spec-decoding"], r["dp-attn"])
            self.sn.setdefault(tuple(_part(x) for x in sk), []).append(r)

    def _add_agentic(self, r: Row, is_mn: bool) -> None:
        if is_mn:
            m = _max_eligible(r)
            if m is not None:
                self.mn.setdefault("A" + _para_key(r), []).append((r, m))
        else:
            k = (r["model"], r["runner"], r["framework"], r["precision"])
            self.ag.setdefault(tuple(_part(x) for x in k), []).append(r)


def mark_evals(rows: list[Row], *, agentic: bool) -> None:
    """Default eval marking (§4.1), in place."""
    groups = _EvalGroups()
    for r in rows:
        groups.add(r, agentic=agentic)
    for group in groups.sn.values():
        values = sorted({r["conc"] for r in group})
        targets = {values[-1], values[len(values) // 2]}
        for r in group:
            if r["conc"] in targets:
                r["run-eval"] = True
    for mgroup in groups.mn.values():
        best, best_c = mgroup[0]
        for r, c in mgroup[1:]:
            if c > best_c:
                best, best_c = r, c
        best["run-eval"] = True
        best["eval-conc"] = best_c
    for agroup in groups.ag.values():
        best = agroup[0]
        for r in agroup[1:]:
            if r["conc"] > best["conc"]:
                best = r
        best["run-eval"] = True


def expand_all_evals(rows: list[Row]) -> list[Row]:
    """``--all-evals`` expansion (§4.2); returns the new row list."""
    out: list[Row] = []
    merged: dict[str, Row] = {}
    for r in rows:
        is_mn = "prefill" in r
        if _is_agentic(r):
            if not is_mn:
                r["run-eval"] = True
                out.append(r)
                continue
            k = "A" + _para_key(r)
            first = merged.get(k)
            if first is None:
                merged[k] = r
                r["conc"] = sorted(set(r["conc"]))
                r["eval-conc"] = max(r["conc"])
                r["run-eval"] = True
                out.append(r)
            else:
                first["conc"] = sorted(set(first["conc"]) | set(r["conc"]))
                first["eval-conc"] = max(first["conc"])
            continue
        if not _is_eval_seq(r):
            out.append(r)
            continue
        if not is_mn:
            r["run-eval"] = True
            out.append(r)
            continue
        k = "F" + _para_key(r)
        first = merged.get(k)
        if first is None:
            merged[k] = r
            r["conc"] = sorted(set(r["conc"]))
            r["run-eval"] = True
            r["eval-all-concs"] = True
            r.pop("eval-conc", None)
            out.append(r)
        else:
            first["conc"] = sorted(set(first["conc"]) | set(r["conc"]))
    return out


@dataclass
class Matrix:
    """Generated rows plus the config key each row came from (not part of the row)."""

    rows: list[Row]
    keys: list[str]


def generate_matrix(configs: Configs, runners: Runners, req: SweepRequest) -> Matrix:
    """The matrix rows for ``req`` (SWEEP.md §2.4 steps 3–5), with provenance."""
    req.check()
    gen = RowGenerator(configs, runners, req)
    rows = gen.run()
    if not req.no_evals:
        mark_evals(rows, agentic=req.evals_only or req.all_evals)
        if req.all_evals:
            rows = expand_all_evals(rows)
        if req.evals_only or req.all_evals:
            rows = [r for r in rows if r.get("run-eval")]
            for r in rows:
                r["eval-only"] = True
    return Matrix(rows, [gen.origin[id(r)] for r in rows])


def generate(configs: Configs, runners: Runners, req: SweepRequest) -> list[Row]:
    """The matrix rows for ``req``."""
    return generate_matrix(configs, runners, req).rows


def dumps(rows: list[Row]) -> str:
    """The reference's stdout: ``json.dumps`` defaults, one line, newline."""
    return json.dumps(rows) + "\n"
