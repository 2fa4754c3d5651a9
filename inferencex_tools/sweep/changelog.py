"""Changelog → matrix (CHANGELOG.md §4), pure: new entries + loaded configs → buckets.

Differences from the reference ``process_changelog.py`` (documented in docs/sweep.md):
configs are the head ref's (G5) and the base is the merge-base (G4) — the
service decides both; failures are one clear message.  Rows are dumped the way the
reference's models dump them (``sweep.rowmodel``: field order, defaults, no nulls).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.changelog.configkeys import resolve_items
from inferencex_tools.errors import InputError
from inferencex_tools.progress import ProgressFn, no_progress
from inferencex_tools.sweep.generate import (
    AGENTIC,
    FIXED,
    SCENARIOS,
    Matrix,
    SweepRequest,
    seq_name,
)
from inferencex_tools.sweep.load import Configs, Runners
from inferencex_tools.sweep.rowmodel import dump_row

_APPEND_ONLY_HINT = ("append-only entries may only add concurrencies to existing curves of "
                     "their keys (docs/sweep.md); without append-only the keys are swept "
                     "in full")

Row = dict[str, Any]
Generate = Callable[[Configs, Runners, SweepRequest], Matrix]

BUCKET_KEYS = ("single_node", "multi_node", "evals", "agentic_evals", "multinode_evals",
               "multinode_agentic_evals", "changelog_metadata")


@dataclass
class FromChangelogOptions:
    trim_conc: bool = False
    all_evals: bool = False
    evals_only: bool = False


@dataclass
class Snapshot:
    """Generator inputs at one revision."""

    configs: Configs
    runners: Runners


@dataclass
class Plan:
    """What will be generated, for explain/summary output and tests."""

    throughput_calls: list[tuple[list[str], list[str]]] = field(default_factory=list)
    eval_calls: list[tuple[list[str], list[str], bool, int | None]] = field(
        default_factory=list)
    keys: list[str] = field(default_factory=list)
    origin: dict[int, str] = field(default_factory=dict)  # id(row) → config key

    def key_of(self, row: Row) -> str:
        return self.origin.get(id(row), "?")


def entry_fields(e: dict[str, Any]) -> dict[str, Any]:
    """The dumped changelog entry of ``changelog_metadata`` (nulls dropped)."""
    out: dict[str, Any] = {
        "config-keys": list(e.get("config-keys") or []),
        "description": list(e.get("description") or []),
        "pr-link": e.get("pr-link"),
        "evals-only": bool(e.get("evals-only", False)),
        "all-evals": bool(e.get("all-evals", False)),
        "append-only": bool(e.get("append-only", False)),
    }
    if e.get("eval-min-prefill-ep") is not None:
        out["eval-min-prefill-ep"] = e["eval-min-prefill-ep"]
    if e.get("scenario-type") is not None:
        out["scenario-type"] = list(e["scenario-type"])
    return out


def resolve_entry_keys(items: list[str], master_keys: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for r in resolve_items([str(i) for i in items], master_keys):
        if not r.matches:
            if r.is_glob:
                raise InputError(f"no config keys matched the wildcard pattern {r.item!r}",
                                 hint="'*' is the only wildcard in changelog config-keys")
            raise InputError(f"config key {r.item!r} not found in master configs",
                             hint="add the key to configs/*-master.yaml or fix the entry")
        for k in r.matches:
            seen.setdefault(k, None)
    return list(seen)


def fingerprint(row: Row) -> str:
    core = {k: v for k, v in row.items() if k not in ("conc", "exp-name", "recipe-fingerprint")}
    text = json.dumps(core, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def trim_conc(rows: list[Row], origin: dict[int, str] | None = None) -> list[Row]:
    """Lowest concurrency per recipe (multi-node: ``[min(conc)]``), order preserved."""
    out: list[Row] = []
    best: dict[str, int] = {}
    for r in rows:
        if "prefill" in r:
            t = {**r, "conc": [min(r["conc"])]}
            if origin is not None and id(r) in origin:
                origin[id(t)] = origin[id(r)]
            out.append(t)
            continue
        k = json.dumps({k: v for k, v in r.items() if k not in ("conc", "exp-name")},
                       sort_keys=True)
        if k not in best:
            best[k] = len(out)
            out.append(r)
        elif r["conc"] < out[best[k]]["conc"]:
            out[best[k]] = r
    return out


def _curve(row: Row) -> str:
    return json.dumps({k: v for k, v in row.items()
                       if k not in ("conc", "exp-name", "recipe-fingerprint")}, sort_keys=True)


def _concs(row: Row) -> list[Any]:
    c = row.get("conc")
    if isinstance(c, list) and c and all(isinstance(x, int) for x in c):
        return list(c)
    if isinstance(c, int) and not isinstance(c, bool):
        return [c]
    raise InputError(f"invalid concurrency value {c!r} in a generated row",
                     hint="check conc-list / conc-start / conc-end of the config")


def _series(row: Row) -> str:
    agentic = row.get("scenario-type") == AGENTIC
    key: dict[str, Any] = {k: row.get(k) for k in ("model", "model-prefix", "precision",
                                                    "framework", "runner", "disagg")}
    key["agentic"] = agentic
    if not agentic:
        key["isl"], key["osl"] = row.get("isl"), row.get("osl")
        key["spec-decoding"] = row.get("spec-decoding")
    key["offload"] = row.get("kv-offloading", "none") != "none"
    for w in ("prefill", "decode"):
        wk = row.get(w)
        key[w] = wk.get("hardware") if isinstance(wk, dict) else None
    return json.dumps(key, sort_keys=True)


def _keeps_base_curves(base: dict[str, list[Any]], head: dict[str, list[Any]]) -> None:
    """Every base curve survives in the head with all of its concurrency points."""
    for k, concs in base.items():
        if k not in head:
            raise InputError("append-only entries may not remove or modify existing "
                             "generated recipes",
                             hint=_APPEND_ONLY_HINT)
        missing = sorted(set(concs) - set(head[k]))
        if missing:
            raise InputError("append-only entries may not remove existing concurrency "
                             f"points: {missing}",
                             hint=_APPEND_ONLY_HINT)


def append_only_delta(head_rows: list[Row], base_rows: list[Row],
                      origin: dict[int, str] | None = None) -> list[Row]:
    """Only the concurrency points the head adds to existing curves (§4.5 step 16)."""
    if not base_rows:
        raise InputError("append-only entries require an existing curve in the base revision",
                         hint=_APPEND_ONLY_HINT)
    base_curves: dict[str, list[Any]] = {}
    for r in base_rows:
        base_curves.setdefault(_curve(r), []).extend(_concs(r))
    head_curves: dict[str, list[Any]] = {}
    for r in head_rows:
        head_curves.setdefault(_curve(r), []).extend(_concs(r))
    _keeps_base_curves(base_curves, head_curves)
    images: dict[str, set[Any]] = {}
    for r in base_rows:
        images.setdefault(_series(r), set()).add(r.get("image"))
    out: list[Row] = []
    emitted: dict[str, set[Any]] = {}
    for r in head_rows:
        k = _curve(r)
        old = set(base_curves.get(k, []))
        done = emitted.setdefault(k, set())
        new = [c for c in dict.fromkeys(_concs(r)) if c not in old and c not in done]
        if not new:
            continue
        done.update(new)
        imgs = images.get(_series(r))
        if imgs is None or imgs != {r.get("image")} or r.get("image") is None:
            raise InputError("append-only rows must belong to an existing visual curve with "
                             "the same image",
                             hint=_APPEND_ONLY_HINT)
        n = {**r, "conc": new} if isinstance(r["conc"], list) else r
        if origin is not None and id(r) in origin:
            origin[id(n)] = origin[id(r)]
        out.append(n)
    if not out:
        raise InputError("append-only entries did not add any generated points",
                         hint=_APPEND_ONLY_HINT)
    return out


def append_only_scope(entries: list[dict[str, Any]], keys_of: list[list[str]],
                      head: Configs, base: Configs) -> None:
    """CHANGELOG.md §4.4: an append-only change may only touch its selected scope."""
    scope: dict[str, set[str]] = {}
    for e, keys in zip(entries, keys_of, strict=True):
        scen = set(e.get("scenario-type") or SCENARIOS)
        for k in keys:
            scope.setdefault(k, set()).update(scen)
    missing = [k for k in scope if k not in base.data]
    if missing:
        raise InputError("append-only entries require every selected config to exist in the "
                         f"base revision: {', '.join(missing)}",
                         hint=_APPEND_ONLY_HINT)
    changed = sorted(k for k in set(head.data) | set(base.data)
                     if k not in scope and head.data.get(k) != base.data.get(k))
    if changed:
        raise InputError("append-only change modifies changed configs not selected by its "
                         f"entries: {', '.join(changed)}",
                         hint=_APPEND_ONLY_HINT)
    for k, sel in scope.items():
        _scope_of_key(k, sel, head.data.get(k) or {}, base.data[k])


def _scope_of_key(k: str, sel: set[str], h: dict[str, Any], b: dict[str, Any]) -> None:
    """One selected config: only its selected scenarios may change (§4.4)."""
    hs, bs = h.get("scenarios") or {}, b.get("scenarios") or {}
    if set(hs) != set(bs):
        raise InputError(f"append-only change added or removed a scenario of {k}",
                         hint=_APPEND_ONLY_HINT)
    if set(hs) - sel and ({x: v for x, v in h.items() if x != "scenarios"}
                          != {x: v for x, v in b.items() if x != "scenarios"}):
        raise InputError(f"append-only change modifies config-wide fields of {k} although "
                         "some of its scenarios are outside the entry's scenario-type",
                         hint=_APPEND_ONLY_HINT)
    for sc in set(hs) - sel:
        if hs.get(sc) != bs.get(sc):
            raise InputError(f"append-only change changed a scenario outside its "
                             f"changelog scope: {k} {sc}",
                             hint=_APPEND_ONLY_HINT)


def _claim(keys: list[str], scenarios: list[str], seen: dict[str, set[str]]
           ) -> list[tuple[list[str], list[str]]]:
    groups: dict[tuple[str, ...], list[str]] = {}
    for k in keys:
        have = seen.setdefault(k, set())
        claimed = tuple(s for s in scenarios if s not in have)
        if not claimed:
            continue
        have.update(claimed)
        groups.setdefault(claimed, []).append(k)
    return [(ks, list(sc)) for sc, ks in groups.items()]


def _req(keys: list[str], scen: list[str], **kw: Any) -> SweepRequest:
    return SweepRequest(mode="test", config_keys=keys,
                        scenario_types=list(scen) if scen else list(SCENARIOS), **kw)


def _check_entries(entries: list[dict[str, Any]], opts: FromChangelogOptions) -> bool:
    """The entry-set rules of process_changelog; True when the entries are append-only."""
    if not entries:
        raise InputError("no new changelog entries (no additions found)",
                         hint="append an entry (ixtool changelog add) or check --base")
    append = [bool(e.get("append-only")) for e in entries]
    if any(append) and not all(append):
        raise InputError("append-only entries cannot share a sweep with other entries",
                         hint=_APPEND_ONLY_HINT)
    if any(append) and (opts.all_evals or opts.evals_only):
        raise InputError("append-only entries cannot use all-evals or evals-only",
                         hint=_APPEND_ONLY_HINT)
    return any(append)


@dataclass
class _Build:
    """State of one build_matrix run: inputs, what each key already produced, the rows."""

    head: Snapshot
    base: Snapshot | None
    opts: FromChangelogOptions
    generate: Generate
    plan: Plan
    seen_tp: dict[str, set[str]] = field(default_factory=dict)
    seen_ev: dict[str, set[str]] = field(default_factory=dict)
    throughput: list[Row] = field(default_factory=list)
    evals: list[Row] = field(default_factory=list)

    def entry(self, e: dict[str, Any]) -> None:
        keys = resolve_entry_keys(list(e.get("config-keys") or []), self.head.configs.keys)
        for k in keys:
            if k not in self.plan.keys:
                self.plan.keys.append(k)
        scen = [s for s in SCENARIOS if s in (e.get("scenario-type") or SCENARIOS)]
        suppress = (self.opts.evals_only or bool(e.get("evals-only"))
                    or bool(e.get("all-evals")))
        if not suppress:
            self._throughput(keys, scen, bool(e.get("append-only")))
        if not e.get("append-only"):
            self._evals(keys, scen, self.opts.all_evals or bool(e.get("all-evals")),
                        e.get("eval-min-prefill-ep"))

    def _throughput(self, keys: list[str], scen: list[str], is_append: bool) -> None:
        for ks, sc in _claim(keys, scen, self.seen_tp):
            self.plan.throughput_calls.append((ks, sc))
            m = self.generate(self.head.configs, self.head.runners,
                              _req(ks, sc, no_evals=True))
            rows = _track(m, self.plan)
            if is_append and self.base is not None:
                base_rows = self.generate(self.base.configs, self.base.runners,
                                          _req(ks, sc, no_evals=True)).rows
                rows = append_only_delta(rows, base_rows, self.plan.origin)
            self.throughput.extend(rows)

    def _evals(self, keys: list[str], scen: list[str], expand: bool, min_ep: Any) -> None:
        for ks, sc in _claim(keys, scen, self.seen_ev):
            self.plan.eval_calls.append((ks, sc, expand, min_ep))
            rows = _track(self.generate(self.head.configs, self.head.runners,
                                        _req(ks, sc, evals_only=True, all_evals=expand)),
                          self.plan)
            if min_ep is not None:
                rows = [r for r in rows if not _prefill_below(r, min_ep)]
            self.evals.extend(rows)


def build_matrix(entries: list[dict[str, Any]], head: Snapshot, base: Snapshot | None,
                 opts: FromChangelogOptions, generate: Generate, *,
                 base_ref: str, head_ref: str, plan: Plan | None = None,
                 progress: ProgressFn = no_progress) -> dict[str, Any]:
    """The bucketed matrix object of process_changelog; ``progress`` is called once per
    entry."""
    append_only = _check_entries(entries, opts)
    plan = plan if plan is not None else Plan()
    if append_only:
        if base is None:
            raise InputError("append-only entries need the base revision's configs",
                             hint=_APPEND_ONLY_HINT)
        append_only_scope(entries, [resolve_entry_keys(list(e.get("config-keys") or []),
                                                       head.configs.keys) for e in entries],
                          head.configs, base.configs)
    build = _Build(head, base, opts, generate, plan)
    for i, e in enumerate(sorted(entries, key=lambda e: not e.get("all-evals"))):
        progress(i, len(entries), "entries")
        build.entry(e)
    progress(len(entries), len(entries), "entries")
    throughput = build.throughput
    if opts.trim_conc:
        throughput = trim_conc(throughput, plan.origin)
    for r in throughput:
        r["recipe-fingerprint"] = fingerprint(r)
    return bucketize(_dumped(throughput, plan), _dumped(build.evals, plan),
                     [entry_fields(e) for e in entries],
                     base_ref=base_ref, head_ref=head_ref)


def _dumped(rows: list[Row], plan: Plan) -> list[Row]:
    """The rows as the reference's models dump them; the plan keeps each row's key."""
    out = []
    for r in rows:
        d = dump_row(r)
        if id(r) in plan.origin:
            plan.origin[id(d)] = plan.origin[id(r)]
        out.append(d)
    return out


def _track(m: Matrix, plan: Plan) -> list[Row]:
    for r, k in zip(m.rows, m.keys, strict=True):
        plan.origin[id(r)] = k
    return m.rows


def _prefill_below(row: Row, min_ep: int) -> bool:
    p = row.get("prefill")
    if not isinstance(p, dict):
        return False
    ep = p.get("ep", 1)
    return not isinstance(ep, int) or isinstance(ep, bool) or ep < min_ep


def bucket_of(row: Row) -> str:
    if row.get("scenario-type") == AGENTIC:
        return "agentic"
    return seq_name(row.get("isl"), row.get("osl"))


def bucketize(throughput: list[Row], evals: list[Row], entries: list[dict[str, Any]], *,
              base_ref: str, head_ref: str) -> dict[str, Any]:
    single: dict[str, list[Row]] = {}
    multi: dict[str, list[Row]] = {}
    for r in throughput:
        (multi if r.get("prefill") is not None else single).setdefault(bucket_of(r),
                                                                         []).append(r)
    out: dict[str, Any] = {
        "single_node": single,
        "multi_node": multi,
        "evals": [r for r in evals if "prefill" not in r and r.get("scenario-type") != AGENTIC],
        "agentic_evals": [r for r in evals
                          if "prefill" not in r and r.get("scenario-type") == AGENTIC],
        "multinode_evals": [r for r in evals
                            if "prefill" in r and r.get("scenario-type") != AGENTIC],
        "multinode_agentic_evals": [r for r in evals
                                    if "prefill" in r and r.get("scenario-type") == AGENTIC],
        "changelog_metadata": {"base_ref": base_ref, "head_ref": head_ref, "entries": entries},
    }
    return out


def bucket_counts(matrix: dict[str, Any]) -> dict[str, int]:
    """Flat ``bucket → rows`` (``single_node.8k1k`` style), non-empty buckets only."""
    out: dict[str, int] = {}
    for k in ("single_node", "multi_node"):
        for b, rows in matrix.get(k, {}).items():
            if rows:
                out[f"{k}.{b}"] = len(rows)
    for k in ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals"):
        if matrix.get(k):
            out[k] = len(matrix[k])
    return out


def flat_buckets(matrix: dict[str, Any]) -> dict[str, Any]:
    """GitHub outputs: one list per bucket (``single_node_8k1k`` …) plus the metadata."""
    out: dict[str, Any] = {}
    for k in ("single_node", "multi_node"):
        for b, rows in matrix.get(k, {}).items():
            out[f"{k}_{b}"] = rows
    for k in ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals"):
        out[k] = matrix.get(k, [])
    out["changelog_metadata"] = matrix.get("changelog_metadata", {})
    return out


__all__ = ["AGENTIC", "BUCKET_KEYS", "FIXED", "bucket_counts", "build_matrix"]
