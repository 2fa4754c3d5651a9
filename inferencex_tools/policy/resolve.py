"""From master configs to traceable rows: config key → launcher → benchmark script.

Pure apart from ``Path.is_file`` probes of the repository (resolution is defined by which
files exist, SWEEP.md §7).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

# Runner families whose launcher picks `<prefix>_<prec>_<gpu><S>.sh` only (no framework part).
_BARE_FAMILIES = ("h100-", "mi300x-amds", "mi325x-")
_H200_LEGACY = ("h200-cw", "h200-nb")
DRAM_STAND_IN_GB = 1000  # TOTAL_CPU_DRAM_GB when runners.yaml has no hardware entry


@dataclass(frozen=True)
class Row:
    """One traced point: config key × search-space entry × concurrency × eval mode."""

    config_file: str
    key: str
    key_line: int | None
    scenario: str  # agentic-coding | fixed-seq-len
    item_index: int
    entry_index: int
    conc: int
    eval_only: bool
    config: dict[str, Any] = field(compare=False, hash=False)
    entry: dict[str, Any] = field(compare=False, hash=False)
    seq: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    dram_gb: int = 0
    # the sweep matrix row this point is dispatched as (empty: built without the sweep)
    matrix: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def multinode(self) -> bool:
        return isinstance(self.entry.get("decode"), dict)

    def ref(self) -> dict[str, Any]:
        """The row as machine-readable data (``data.rows`` of findings)."""
        return {"key": self.key, "conc": self.conc,
                "mode": "eval" if self.eval_only else "throughput",
                "entry": self.entry_label()}

    @property
    def spec(self) -> str:
        return str(self.entry.get("spec-decoding", "none"))

    @property
    def agentic(self) -> bool:
        return self.scenario == "agentic-coding"

    def entry_label(self) -> str:
        e = self.entry
        if isinstance(e.get("decode"), dict):
            def w(x: Any) -> str:
                x = x if isinstance(x, dict) else {}
                return f"{x.get('num-worker', '?')}x{x.get('tp', '?')}"
            return f"p{w(e.get('prefill'))} d{w(e.get('decode'))}"
        parts = [f"tp{e.get('tp', '?')}"]
        if int(e.get("ep", 1) or 1) != 1:
            parts.append(f"ep{e['ep']}")
        if self.agentic:
            parts.append(f"kv={e.get('kv-offloading', 'none')}")
        else:
            parts.append(f"{self.seq.get('isl')}/{self.seq.get('osl')}")
        return " ".join(parts)

    def label(self) -> str:
        mode = "eval" if self.eval_only else "throughput"
        return f"{self.key} [{self.entry_label()} conc={self.conc} {mode}]"

    def exp_name(self) -> str:
        prefix = self.config["model-prefix"]
        if not self.agentic:
            isl, osl = self.seq.get("isl"), self.seq.get("osl")
            names: dict[tuple[Any, Any], str] = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}
            tag = names.get((isl, osl), f"{isl}_{osl}")
            return f"{prefix}_{tag}"
        kv = self.entry.get("kv-offloading", "none")
        kvtag = "kvnone" if kv == "none" else \
            f"kv{kv}-{(self.entry.get('kv-offload-backend') or {}).get('name', '')}"
        spec = "" if self.spec == "none" else f"_spec-{self.spec}"
        return f"{prefix}_tp{self.entry.get('tp')}_conc{self.conc}_{kvtag}{spec}"

    def env(self, runner_name: str) -> dict[str, str]:
        """The variables the workflow + launcher export for this row (see docs/policy.md)."""
        c, e = self.config, self.entry
        tp, pp, pcp = int(e.get("tp", 1)), int(e.get("pp", 1)), int(e.get("pcp-size", 1))
        ep = int(e.get("ep", 1) or 1)
        env = {
            "EXP_NAME": self.exp_name(), "MODEL": str(c["model"]),
            "MODEL_PREFIX": str(c["model-prefix"]), "IMAGE": str(c.get("image", "")),
            "PRECISION": str(c["precision"]), "FRAMEWORK": str(c["framework"]),
            "RUNNER_NAME": runner_name, "SCENARIO_TYPE": self.scenario,
            "SPEC_DECODING": self.spec, "TP": str(tp), "PP": str(pp),
            "DCP_SIZE": str(e.get("dcp-size", 1)), "PCP_SIZE": str(pcp),
            "EP": str(ep), "EP_SIZE": str(ep),
            "DP_ATTENTION": str(bool(e.get("dp-attn", False))).lower(),
            "CONC": str(self.conc), "GPU_COUNT": str(tp * pp * pcp), "PORT": "8888",
            "EVAL_ONLY": "true" if self.eval_only else "false",
            "RUN_EVAL": "true" if self.eval_only else "false",
        }
        if self.agentic:
            kv = str(e.get("kv-offloading", "none"))
            env.update({"KV_OFFLOADING": kv, "DURATION": "3600",
                        "TOTAL_CPU_DRAM_GB": str(self.dram_gb if kv == "dram" else 0)})
            backend = e.get("kv-offload-backend")
            if isinstance(backend, dict) and backend.get("name"):
                env["KV_OFFLOAD_BACKEND"] = str(backend["name"])
        else:
            isl, osl = int(self.seq.get("isl", 0)), int(self.seq.get("osl", 0))
            env.update({"ISL": str(isl), "OSL": str(osl), "MAX_MODEL_LEN": str(isl + osl + 256)})
        return env


def conc_values(entry: dict[str, Any]) -> list[int]:
    """SWEEP.md §3.2: lists as written; ranges ×2 with the end point clamped in."""
    if entry.get("conc-list"):
        return [int(c) for c in entry["conc-list"]]
    start, end = entry.get("conc-start"), entry.get("conc-end")
    if start is None or end is None:
        return []
    out, c = [], int(start)
    while True:
        out.append(c)
        if c >= int(end):
            break
        c = min(c * 2, int(end))
    return out


_KEY_LINE = re.compile(r"^([^\s#][^:]*):\s*(#.*)?$")


def key_lines(text: str) -> dict[str, int]:
    """Top-level key → its 1-based line (the first, for a repeated key)."""
    out: dict[str, int] = {}
    match = _KEY_LINE.match
    for i, line in enumerate(text.splitlines(), 1):
        # most lines are indented, comments or values: not a key line (no regex needed)
        if not line or line[0] in " \t#" or ":" not in line:
            continue
        m = match(line)
        if m:
            out.setdefault(m.group(1).strip().strip("'\""), i)
    return out


def dram_budget(hardware: dict[str, Any] | None, label: str, util: Any, gpus: int) -> int:
    """SWEEP.md §3.8, or a documented stand-in when the hardware is unknown."""
    hw = (hardware or {}).get(label)
    if not isinstance(hw, dict) or util is None:
        return DRAM_STAND_IN_GB
    avail = min(int(hw["available-cpu-dram-mib"]), 2_861_022)
    g = int(hw["gpus-per-node"])
    val = Decimal(avail) * 1_048_576 * Decimal(str(util)) * gpus / g / Decimal(10) ** 9
    return int(val)


def enumerate_rows(
    config_file: str, doc: dict[str, Any], text: str, *, globs: list[str] | None,
    all_evals: bool, hardware: dict[str, Any] | None = None,
) -> list[Row]:
    """Rows to trace: agentic spec points at every concurrency (throughput) plus eval at the
    top concurrency of each entry (every one with ``all_evals``); fixed-seq-len points with
    spec-decoding at their top concurrency (throughput)."""
    lines = key_lines(text)
    rows: list[Row] = []
    for key, cfg in doc.items():
        if not isinstance(cfg, dict) or cfg.get("multinode"):
            continue
        if globs and not any(fnmatch.fnmatchcase(key, g) for g in globs):
            continue
        scenarios = cfg.get("scenarios") or {}
        for scenario in ("agentic-coding", "fixed-seq-len"):
            for ii, item in enumerate(scenarios.get(scenario) or []):
                for ei, entry in enumerate(item.get("search-space") or []):
                    concs = conc_values(entry)
                    if not concs:
                        continue
                    spec = str(entry.get("spec-decoding", "none"))
                    base: dict[str, Any] = {
                        "config_file": config_file, "key": key, "key_line": lines.get(key),
                        "scenario": scenario, "item_index": ii, "entry_index": ei,
                        "config": cfg, "entry": entry,
                        "seq": {"isl": item.get("isl"), "osl": item.get("osl")},
                    }
                    if scenario == "agentic-coding":
                        gpus = int(entry.get("tp", 1)) * int(entry.get("pp", 1)) \
                            * int(entry.get("pcp-size", 1))
                        base["dram_gb"] = dram_budget(hardware, str(cfg.get("runner")),
                                                      item.get("dram-utilization"), gpus)
                        for c in concs:
                            rows.append(Row(conc=c, eval_only=False, **base))
                        if spec != "none":
                            for c in (concs if all_evals else [max(concs)]):
                                rows.append(Row(conc=c, eval_only=True, **base))
                    elif spec != "none":
                        rows.append(Row(conc=max(concs), eval_only=False, **base))
    return rows


@dataclass(frozen=True)
class Resolution:
    launcher: str | None
    script: str | None
    tried: tuple[str, ...]
    why: str | None = None


def launcher_families(root: Path, runner: str, labels: dict[str, Any] | None) -> list[str]:
    """Concrete runner families for a label: from runners.yaml nodes, else by launcher name."""
    nodes = (labels or {}).get(runner)
    if isinstance(nodes, list) and nodes:
        return sorted({str(n).split("_", 1)[0] for n in nodes})
    found = sorted(p.name[len("launch_"):-3] for p in (root / "runners").glob("launch_*.sh")
                   if named_for(runner, f"runners/{p.name}"))
    return found


def named_for(runner: str, path: str) -> bool:
    """Is ``path`` a launcher a runner label that runners.yaml does not list resolves to
    by name (``runners/launch_<label>*.sh``, the label without its ``cluster:`` prefix)?"""
    bare = runner.split(":", 1)[-1]
    return path.startswith(f"runners/launch_{bare}") and path.endswith(".sh") and \
        "/" not in path[len("runners/"):]


def resolve_script(root: Path, row: Row, family: str) -> Resolution:
    """SWEEP.md §7 for one runner family."""
    from inferencex_tools.io.files import PathRefused, contained

    c = row.config
    launcher = f"runners/launch_{family}.sh"
    try:
        if not contained(root, launcher, "runners", leaf_link_ok=True).is_file():
            return Resolution(None, None, (), f"{launcher} does not exist")
    except PathRefused as exc:
        return Resolution(None, None, (), exc.message)
    sub = "agentic/" if row.agentic else "fixed_seq_len/"
    prefix, prec, fw = c["model-prefix"], c["precision"], c["framework"]
    s = "_mtp" if row.spec == "mtp" else ""
    t = "_trt" if fw == "trt" else ""
    gpu = family.split("-", 1)[0]
    base = f"benchmarks/single_node/{sub}{prefix}_{prec}_{gpu}"
    if family.startswith(_BARE_FAMILIES):
        cands = [f"{base}{s}.sh"]
    elif family in _H200_LEGACY:
        cands = [f"{base}{t}{s}.sh"]
    elif family.startswith("mi355x"):
        cands = [f"{base}_{fw}{s}.sh", f"{base}{'_atom' if fw == 'atom' else ''}{s}.sh"]
    else:
        cands = [f"{base}_{fw}{s}.sh", f"{base}{t}{s}.sh"]
    cands = list(dict.fromkeys(cands))
    for cand in cands:
        try:  # model-prefix/precision/framework are PR data: the script stays in its folder
            found = contained(root, cand, "benchmarks/single_node").is_file()
        except PathRefused as exc:
            return Resolution(launcher, None, tuple(cands), exc.message)
        if found:
            return Resolution(launcher, cand, tuple(cands))
    return Resolution(launcher, None, tuple(cands), "none of " + ", ".join(cands) + " exists")



@dataclass(frozen=True)
class MultiPoint:
    """One multi-node spec point: its row and the recipe it runs (POLICY.md §3.3)."""

    row: Row
    recipe: str  # repository path
    selector: str | None
    settings: dict[str, str] = field(compare=False, hash=False)


def recipe_path(value: str) -> tuple[str, str | None]:
    path, _, selector = value.partition(":")
    if path.startswith("recipes/"):
        path = "benchmarks/multi_node/srt-slurm-recipes/" + path[len("recipes/"):]
    return path, selector or None


def _entry_points(config_file: str, key: str, line: int | None, cfg: dict[str, Any],
                  scenario: str, ii: int, item: dict[str, Any], ei: int,
                  entry: dict[str, Any]) -> list[MultiPoint]:
    """The points of one multi-node search-space entry (none without spec-decoding or a
    CONFIG_FILE setting)."""
    if str(entry.get("spec-decoding", "none")) == "none":
        return []
    settings: dict[str, str] = {}
    for worker in ("prefill", "decode"):
        for s in (entry.get(worker) or {}).get("additional-settings") or []:
            name, _, value = str(s).partition("=")
            settings[name] = value
    if "CONFIG_FILE" not in settings:
        return []
    concs = conc_values(entry) or [0]
    out: list[MultiPoint] = []
    for ev in ([False, True] if scenario == "agentic-coding" else [False]):
        chosen = settings.get("EVAL_CONFIG_FILE") if ev else None
        path, sel = recipe_path(chosen or settings["CONFIG_FILE"])
        row = Row(config_file=config_file, key=key, key_line=line, scenario=scenario,
                  item_index=ii, entry_index=ei, conc=max(concs), eval_only=ev, config=cfg,
                  entry=entry, seq={"isl": item.get("isl"), "osl": item.get("osl")})
        out.append(MultiPoint(row, path, sel, settings))
    return out


def multinode_points(
    config_file: str, doc: dict[str, Any], text: str, *, globs: list[str] | None,
) -> list[MultiPoint]:
    """Spec-decoding multi-node points: agentic → a throughput and an eval row (eval uses
    ``EVAL_CONFIG_FILE`` when set); fixed-seq-len → a throughput row (G-02)."""
    lines = key_lines(text)
    out: list[MultiPoint] = []
    for key, cfg in doc.items():
        if not isinstance(cfg, dict) or not cfg.get("multinode"):
            continue
        if globs and not any(fnmatch.fnmatchcase(key, g) for g in globs):
            continue
        for scenario in ("agentic-coding", "fixed-seq-len"):
            for ii, item in enumerate((cfg.get("scenarios") or {}).get(scenario) or []):
                for ei, entry in enumerate(item.get("search-space") or []):
                    out.extend(_entry_points(config_file, key, lines.get(key), cfg, scenario,
                                             ii, item, ei, entry))
    return out
