"""Master-config checks in code (SWEEP.md §1.2–§1.7), pure.

Two modes:

* ``strict=False`` — what the reference generator accepts (pydantic "lax"
  coercion: ``tp: "8"`` or ``ep: true`` pass).  The generator uses this so it
  accepts exactly the reference's inputs; it never rewrites values.
* ``strict=True`` — ``ixtool config validate``: values must have their proper
  YAML type, counts must be positive and the agentic topology must match the
  ``multinode`` flag (SWEEP.md §10 gaps 1–3).

``structural=False`` skips the checks the JSON Schema already performs (types,
required and unknown keys), so ``config validate`` reports each problem once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from inferencex_tools.report.findings import Rule, Severity
from inferencex_tools.schemas import found, kind_of, yaml_value
from inferencex_tools.sweep.rules import (
    AGENTIC_RUNNER,
    CONC_FORM,
    DCP,
    DISAGG_P2P,
    DRAM_UTIL,
    ENUM,
    HARDWARE_PAIR,
    IMAGE_VERSION,
    KV_OFFLOAD,
    NO_SCENARIO,
    P2P_SINGLE,
    RANGE,
    REQUIRED,
    SCOPE,
    TOPOLOGY,
    TOPOLOGY_MULTINODE,
    TYPE,
    UNKNOWN_KEY,
    WORKER_FIELDS,
)

Path = tuple[str | int, ...]

TOP_KEYS = ("image", "model", "model-prefix", "precision", "framework", "runner", "multinode",
            "disagg", "router", "kv-p2p-transfer", "scenarios")
TOP_REQUIRED = ("image", "model", "model-prefix", "precision", "framework", "runner",
                "multinode", "scenarios")
CONC_KEYS = ("conc-start", "conc-end", "conc-list")
SN_FIXED_KEYS = ("tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "spec-decoding", "router",
                 *CONC_KEYS)
MN_FIXED_KEYS = ("spec-decoding", "prefill", "decode", "router", "kv-p2p-transfer", *CONC_KEYS)
AGENTIC_KEYS = ("tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "spec-decoding", "prefill",
                "decode", "kv-offloading", "kv-offload-backend", "router", "kv-p2p-transfer",
                *CONC_KEYS)
WORKER_KEYS = ("num-worker", "tp", "ep", "dp-attn", "pp", "dcp-size", "pcp-size", "hardware",
               "additional-settings")
SPEC = ("mtp", "draft_model", "none")
KV = ("none", "dram")
_BOOL_STR = {"true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n"}
_DOCKER_REF = re.compile(r"^[\w.-]+(/[\w.-]+)+:[\w.-]+$")


@dataclass(frozen=True)
class Issue:
    rule: Rule
    path: Path
    message: str
    severity: Severity | None = None


def where(path: Path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


class Checker:
    def __init__(self, *, strict: bool, structural: bool = True) -> None:
        self.strict = strict
        self.structural = structural
        self.issues: list[Issue] = []

    def add(self, rule: Rule, path: Path, msg: str, severity: Severity | None = None) -> None:
        self.issues.append(Issue(rule, path, f"{where(path)}: {msg}", severity))

    # ----------------------------------------------------------------- typed values
    def as_int(self, v: Any, path: Path, *, strict: bool = False, positive: bool = False,
               nonneg: bool = False) -> int | None:
        """The integer value of ``v`` (None if unusable); reports type problems."""
        ok: int | None = None
        if type(v) is int:
            ok = v
        elif not (strict or self.strict) and (
                isinstance(v, bool) or (isinstance(v, float) and v.is_integer())
                or (isinstance(v, str) and re.fullmatch(r"\s*[-+]?\d+\s*", v))):
            ok = int(v)
        if ok is None:
            if self.structural or not isinstance(v, int | float | str | bool):
                self.add(TYPE, path, f"must be an integer, found {found(v)}")
            return None
        if positive and (self.strict or strict) and ok <= 0:
            self.add(RANGE, path, f"must be > 0, found {yaml_value(v)}")
        elif nonneg and self.strict and ok < 0:
            self.add(RANGE, path, f"must be ≥ 0, found {yaml_value(v)}")
        return ok

    def as_bool(self, v: Any, path: Path) -> bool | None:
        if isinstance(v, bool):
            return v
        if not self.strict:
            if type(v) is int and v in (0, 1):
                return bool(v)
            if isinstance(v, str) and v.lower() in _BOOL_STR:
                return v.lower() in ("true", "yes", "on", "1", "t", "y")
        if self.structural:
            self.add(TYPE, path, f"must be true or false, found {found(v)}")
        return None

    def as_str(self, v: Any, path: Path, *, nonempty: bool = False) -> str | None:
        if not isinstance(v, str):
            if self.structural:
                self.add(TYPE, path, f"must be a string, found {found(v)}")
            return None
        if nonempty and not v:
            self.add(RANGE, path, "must be a non-empty string")
        return str(v)

    def mapping(self, v: Any, path: Path, allowed: tuple[str, ...],
                required: tuple[str, ...] = ()) -> dict[str, Any] | None:
        if not isinstance(v, dict):
            if self.structural:
                self.add(TYPE, path, f"must be a mapping, found {kind_of(v)}")
            return None
        if self.structural:
            for k in v:
                if k not in allowed:
                    self.add(UNKNOWN_KEY, (*path, str(k)), "extra key not permitted "
                             f"(allowed: {', '.join(allowed)})")
            for k in required:
                if k not in v:
                    self.add(REQUIRED, path, f"field '{k}' is required")
        return v

    def enum(self, v: Any, path: Path, allowed: tuple[str, ...]) -> None:
        if v not in allowed and self.structural:
            self.add(ENUM, path, f"must be one of {', '.join(allowed)}, found {yaml_value(v)}")

    # ----------------------------------------------------------------- components
    def component(self, v: Any, path: Path, *, version_required: bool) -> None:
        m = self.mapping(v, path, ("name", "version"),
                         ("name", "version") if version_required else ("name",))
        if m is None:
            return
        if "name" in m:
            self.as_str(m["name"], (*path, "name"), nonempty=True)
        if "version" in m:
            ver = self.as_str(m["version"], (*path, "version"), nonempty=True)
            if ver is not None and ver.startswith("image:") and self.structural:
                self.add(IMAGE_VERSION, (*path, "version"),
                         f"version {ver!r} is an image reference")
            elif ver is not None and self.strict and _DOCKER_REF.match(ver):
                self.add(IMAGE_VERSION, (*path, "version"),
                         f"version {ver!r} looks like a docker image reference")

    # ----------------------------------------------------------------- concurrency
    def conc(self, e: dict[str, Any], path: Path) -> None:
        clist = e.get("conc-list")
        has_list = bool(clist) if isinstance(clist, list) else clist is not None
        has_start, has_end = "conc-start" in e, "conc-end" in e
        if has_list and (has_start or has_end):
            self.add(CONC_FORM, path, "both conc-list and conc-start/conc-end are set")
        elif has_list:
            self._conc_list(clist, (*path, "conc-list"))
        elif has_start and has_end:
            self._conc_range(e, path)
        else:
            what = ("only one of conc-start/conc-end is set" if has_start or has_end
                    else "no concurrency (conc-list or conc-start/conc-end)")
            self.add(CONC_FORM, path, what)

    def _conc_list(self, clist: Any, path: Path) -> None:
        if not isinstance(clist, list):
            self.add(TYPE, path, "must be a list of integers")
            return
        for i, c in enumerate(clist):
            if self._crashy(c, (*path, i)):
                continue
            n = self.as_int(c, (*path, i))
            if n is not None and n <= 0:
                self.add(CONC_FORM, (*path, i), f"concurrency {c!r} ≤ 0")

    def _conc_range(self, e: dict[str, Any], path: Path) -> None:
        if self._crashy(e["conc-start"], (*path, "conc-start")) or self._crashy(
                e["conc-end"], (*path, "conc-end")):
            return
        s = self.as_int(e["conc-start"], (*path, "conc-start"))
        t = self.as_int(e["conc-end"], (*path, "conc-end"))
        if s is not None and s <= 0:
            self.add(CONC_FORM, (*path, "conc-start"), f"conc-start {s} ≤ 0")
        if t is not None and t <= 0:
            self.add(CONC_FORM, (*path, "conc-end"), f"conc-end {t} ≤ 0")
        if s is not None and t is not None and s > t:
            self.add(CONC_FORM, path, f"conc-start {s} > conc-end {t}")

    def _crashy(self, v: Any, path: Path) -> bool:
        """A string concurrency: lax validation passes it, generation cannot use it."""
        if isinstance(v, str):
            self.add(TYPE, path, f"must be an integer, found {found(v)}; the reference "
                     "generator crashes on string concurrencies")
            return True
        return False

    # ----------------------------------------------------------------- pieces
    def parallel(self, e: dict[str, Any], path: Path, *, tp_key: bool = True) -> None:
        """tp (lax int), pp/dcp-size/pcp-size (strict int > 0), tp % dcp-size."""
        tp = self.as_int(e["tp"], (*path, "tp"), positive=True) if "tp" in e and tp_key else None
        dcp = 1
        for k in ("pp", "dcp-size", "pcp-size"):
            if k in e:
                v = self.as_int(e[k], (*path, k), strict=True, positive=True)
                if v is not None and v <= 0:
                    v = None
                if k == "dcp-size" and v is not None:
                    dcp = v
        if "ep" in e:
            self.as_int(e["ep"], (*path, "ep"), positive=True)
        if "dp-attn" in e:
            self.as_bool(e["dp-attn"], (*path, "dp-attn"))
        if tp is not None and dcp and tp % dcp:
            self.add(DCP, (*path, "tp"), f"tp {tp} is not divisible by dcp-size {dcp}")

    def worker(self, w: Any, path: Path) -> dict[str, Any] | None:
        m = self.mapping(w, path, WORKER_KEYS, ("num-worker", "tp", "ep", "dp-attn"))
        if m is None:
            return None
        if "num-worker" in m:
            self.as_int(m["num-worker"], (*path, "num-worker"), nonneg=True)
        self.parallel(m, path)
        if "hardware" in m:
            self.as_str(m["hardware"], (*path, "hardware"), nonempty=True)
        if "additional-settings" in m:
            s = m["additional-settings"]
            if self.structural and (not isinstance(s, list)
                                    or not all(isinstance(x, str) for x in s)):
                self.add(TYPE, (*path, "additional-settings"),
                         "must be a list of KEY=VALUE strings")
        return m

    def workers(self, e: dict[str, Any], path: Path) -> None:
        p = self.worker(e["prefill"], (*path, "prefill")) if "prefill" in e else None
        d = self.worker(e["decode"], (*path, "decode")) if "decode" in e else None
        if p is not None and d is not None and ("hardware" in p) != ("hardware" in d):
            self.add(HARDWARE_PAIR, path, "only one of prefill/decode sets hardware")

    # ----------------------------------------------------------------- config
    def config(self, key: str, cfg: Any) -> None:
        path: Path = (key,)
        c = self.mapping(cfg, path, TOP_KEYS, TOP_REQUIRED)
        if c is None:
            return
        multinode, disagg = self._top_level(c, path)
        scenarios = self._scenarios(c, path)
        if scenarios is None:
            return
        fixed, agentic = scenarios
        entries: list[tuple[Path, dict[str, Any]]] = []
        for i, item in enumerate(fixed):
            entries += self._fixed_item(item, (*path, "scenarios", "fixed-seq-len", i),
                                        multinode)
        if agentic and "runner" in c and isinstance(c["runner"], str) \
                and not c["runner"].startswith("cluster:"):
            self.add(AGENTIC_RUNNER, (*path, "runner"),
                     f"agentic scenarios need a 'cluster:' runner label, found {c['runner']!r}")
        for i, item in enumerate(agentic):
            entries += self._agentic_item(item, (*path, "scenarios", "agentic-coding", i),
                                          multinode)
        self.scope(c, path, entries, multinode, disagg)

    def _top_level(self, c: dict[str, Any], path: Path) -> tuple[bool, bool]:
        """The top-level fields; (multinode, disagg)."""
        for k in ("image", "model", "model-prefix", "precision", "framework", "runner"):
            if k in c:
                self.as_str(c[k], (*path, k))
        mn = c.get("multinode")
        multinode = bool(mn) if isinstance(mn, bool) else False
        if "multinode" in c:
            multinode = bool(self.as_bool(mn, (*path, "multinode")))
        disagg = False
        if "disagg" in c:
            disagg = bool(self.as_bool(c["disagg"], (*path, "disagg")))
            if disagg and not multinode and self.structural:
                self.add(ENUM, (*path, "disagg"),
                         "disagg: true requires a multinode config (multinode: true)")
        if "router" in c:
            self.component(c["router"], (*path, "router"), version_required=True)
        if "kv-p2p-transfer" in c:
            if not multinode:
                self.add(P2P_SINGLE, (*path, "kv-p2p-transfer"),
                         "kv-p2p-transfer is only allowed in multinode configs")
            self.as_str(c["kv-p2p-transfer"], (*path, "kv-p2p-transfer"), nonempty=True)
        return multinode, disagg

    def _scenarios(self, c: dict[str, Any], path: Path) -> tuple[list[Any], list[Any]] | None:
        """(fixed-seq-len items, agentic-coding items); None without a scenarios mapping."""
        scen = self.mapping(c.get("scenarios"), (*path, "scenarios"),
                            ("fixed-seq-len", "agentic-coding")) if "scenarios" in c else None
        if scen is None:
            return None
        fixed = scen.get("fixed-seq-len") or []
        agentic = scen.get("agentic-coding") or []
        if not isinstance(fixed, list):
            self.add(TYPE, (*path, "scenarios", "fixed-seq-len"), "must be a list")
            fixed = []
        if not isinstance(agentic, list):
            self.add(TYPE, (*path, "scenarios", "agentic-coding"), "must be a list")
            agentic = []
        if not fixed and not agentic:
            self.add(NO_SCENARIO, (*path, "scenarios"),
                     "at least one of fixed-seq-len / agentic-coding must be non-empty")
        return fixed, agentic

    def _fixed_item(self, item: Any, ip: Path, multinode: bool
                    ) -> list[tuple[Path, dict[str, Any]]]:
        """One fixed-seq-len item (isl, osl, search-space); its entries."""
        it = self.mapping(item, ip, ("isl", "osl", "search-space"),
                          ("isl", "osl", "search-space"))
        if it is None:
            return []
        for k in ("isl", "osl"):
            if k in it:
                if isinstance(it[k], str):
                    self.add(TYPE, (*ip, k), f"must be an integer, found {found(it[k])} "
                             "(the reference generator crashes on it)")
                else:
                    self.as_int(it[k], (*ip, k), positive=True)
        entries: list[tuple[Path, dict[str, Any]]] = []
        for j, e in enumerate(self._ss(it, ip)):
            ep: Path = (*ip, "search-space", j)
            m = self.mapping(e, ep, MN_FIXED_KEYS if multinode else SN_FIXED_KEYS,
                             ("prefill", "decode") if multinode else ("tp",))
            if m is None:
                continue
            entries.append((ep, m))
            self.conc(m, ep)
            if "spec-decoding" in m:
                self.enum(m["spec-decoding"], (*ep, "spec-decoding"), SPEC)
            if multinode:
                self.workers(m, ep)
            else:
                self.parallel(m, ep)
        return entries

    def _agentic_item(self, item: Any, ip: Path, multinode: bool
                      ) -> list[tuple[Path, dict[str, Any]]]:
        """One agentic-coding item (search-space, dram-utilization); its entries."""
        it = self.mapping(item, ip, ("search-space", "dram-utilization"), ("search-space",))
        if it is None:
            return []
        if it.get("dram-utilization") is not None:
            self._dram_utilization(it["dram-utilization"], (*ip, "dram-utilization"))
        entries: list[tuple[Path, dict[str, Any]]] = []
        for j, e in enumerate(self._ss(it, ip)):
            ep: Path = (*ip, "search-space", j)
            m = self.mapping(e, ep, AGENTIC_KEYS)
            if m is None:
                continue
            entries.append((ep, m))
            self.agentic_entry(m, ep, multinode, "dram-utilization" in it)
        return entries

    def _dram_utilization(self, util: Any, path: Path) -> None:
        ok = isinstance(util, int | float) and not isinstance(util, bool)
        if not ok and not self.strict and isinstance(util, str):
            try:
                util = float(util)
                ok = True
            except ValueError:
                ok = False
        if not ok:
            self.add(TYPE, path, f"must be a number, found {found(util)}")
        elif not 0 < util <= 1:
            self.add(RANGE, path, f"must be in (0, 1], found {yaml_value(util)}")

    def _ss(self, item: dict[str, Any], path: Path) -> list[Any]:
        ss = item.get("search-space")
        if not isinstance(ss, list):
            if "search-space" in item and self.structural:
                self.add(TYPE, (*path, "search-space"), "must be a list")
            return []
        return ss

    def agentic_entry(self, m: dict[str, Any], ep: Path, multinode: bool, has_util: bool) -> None:
        self.conc(m, ep)
        if "spec-decoding" in m:
            self.enum(m["spec-decoding"], (*ep, "spec-decoding"), SPEC)
        self._agentic_topology(m, ep, multinode)
        self._kv_offloading(m, ep, has_util)

    def _agentic_topology(self, m: dict[str, Any], ep: Path, multinode: bool) -> None:
        """tp-style (no prefill/decode) or prefill/decode-style (no tp), matching multinode."""
        has_tp = "tp" in m
        has_p, has_d = "prefill" in m, "decode" in m
        if has_tp and not has_p and not has_d:
            self.parallel(m, ep)
            if "kv-offloading" not in m:
                self.add(KV_OFFLOAD, ep, "tp-style agentic entries must set kv-offloading")
            if multinode and self.strict:
                self.add(TOPOLOGY_MULTINODE, (*ep, "tp"),
                         "tp-style agentic entry in a multinode config (multinode: true) "
                         "— the reference generator crashes on it")
        elif has_p and has_d and not has_tp:
            for k in ("pp", "dcp-size", "pcp-size"):
                if k in m:
                    self.add(WORKER_FIELDS, (*ep, k),
                             f"{k} belongs in the prefill/decode workers")
            for k in ("ep", "dp-attn"):
                if k in m and self.strict:
                    self.add(WORKER_FIELDS, (*ep, k), f"{k} is ignored next to "
                             "prefill/decode; set it in the workers",
                             severity=Severity.WARNING)
            self.workers(m, ep)
            if not multinode and self.strict:
                self.add(TOPOLOGY_MULTINODE, ep,
                         "prefill/decode agentic entry in a single-node config "
                         "(multinode: false) — the reference generator crashes on it")
        else:
            self.add(TOPOLOGY, ep, "agentic entry must set either tp (and no prefill/"
                     "decode) or both prefill and decode (and no tp)")

    def _kv_offloading(self, m: dict[str, Any], ep: Path, has_util: bool) -> None:
        """kv-offloading ↔ kv-offload-backend ↔ the item's dram-utilization."""
        kv = m.get("kv-offloading")
        if "kv-offloading" in m:
            self.enum(kv, (*ep, "kv-offloading"), KV)
        if "kv-offload-backend" in m:
            self.component(m["kv-offload-backend"], (*ep, "kv-offload-backend"),
                           version_required=False)
            if kv is None or kv == "none":
                self.add(KV_OFFLOAD, (*ep, "kv-offload-backend"),
                         "kv-offload-backend requires kv-offloading: dram")
        elif kv == "dram":
            self.add(KV_OFFLOAD, (*ep, "kv-offloading"),
                     "kv-offloading: dram requires kv-offload-backend")
        if kv == "dram" and not has_util:
            self.add(DRAM_UTIL, (*ep, "kv-offloading"),
                     "kv-offloading: dram requires dram-utilization on the agentic item")

    def scope(self, c: dict[str, Any], path: Path, entries: list[tuple[Path, dict[str, Any]]],
              multinode: bool, disagg: bool) -> None:
        for fld in ("router", "kv-p2p-transfer"):
            in_entries = [(p, e) for p, e in entries if fld in e]
            if fld in c and in_entries:
                self.add(SCOPE, (*in_entries[0][0], fld),
                         f"{fld} is declared at top level and in search-space entries")
        for p, e in entries:
            if "router" in e:
                self.component(e["router"], (*p, "router"), version_required=True)
            if "kv-p2p-transfer" in e:
                if not multinode:
                    self.add(P2P_SINGLE, (*p, "kv-p2p-transfer"),
                             "kv-p2p-transfer in an entry requires multinode: true")
                self.as_str(e["kv-p2p-transfer"], (*p, "kv-p2p-transfer"), nonempty=True)
        if disagg and "kv-p2p-transfer" not in c and (
                not entries or not all("kv-p2p-transfer" in e for _, e in entries)):
            self.add(DISAGG_P2P, (*path, "disagg"),
                     "disagg: true requires kv-p2p-transfer at top level or in every "
                     "search-space entry")


def check_configs(data: dict[str, Any], *, strict: bool, structural: bool = True
                  ) -> list[Issue]:
    ch = Checker(strict=strict, structural=structural)
    for key, cfg in data.items():
        ch.config(str(key), cfg)
    return ch.issues


def first_failing(data: dict[str, Any]) -> tuple[str, list[Issue]] | None:
    """The first config key (merged order) failing the reference's checks."""
    for key, cfg in data.items():
        ch = Checker(strict=False)
        ch.config(str(key), cfg)
        errs = [i for i in ch.issues if (i.severity or i.rule.severity) is Severity.ERROR]
        if errs:
            return str(key), errs
    return None
