"""Serve-shape delta: a recipe against its siblings (pure).

Siblings of a config key are the keys of the same model, precision, GPU, framework and
scenario type that differ in spec-decoding.  Both launches (as ``launch render`` traced
them) are compared flag by flag and variable by variable.  The deltas a spec-decoding
recipe is expected to have — the speculative flags, the memory fraction, the CUDA-graph
capture size and the maximum number of sequences — are shown; anything else is a note
(PO502).  A spec-decoding recipe whose memory fraction is above that of every proven
spec-decoding recipe on the same GPU and engine (or, with none proven, not below its
non-spec sibling's, i.e. inherited) is a warning (PO501): the #2423 OOM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferencex_tools.policy.rules import SHAPE_DELTA, SHAPE_MEMORY
from inferencex_tools.report.findings import Finding
from inferencex_tools.review.model import DeltaItem, ShapeDelta

MEMORY_FLAGS = ("--gpu-memory-utilization", "--mem-fraction-static",
                "--kv-cache-free-gpu-memory-fraction", "--free-gpu-memory-fraction")
CAPTURE_FLAGS = ("--max-cudagraph-capture-size", "--cuda-graph-max-bs", "--cuda-graph-bs",
                 "--cudagraph-capture-sizes", "--max-capture-size")
SEQS_FLAGS = ("--max-num-seqs", "--max-running-requests", "--max-batch-size")
SPEC_RX = re.compile(r"specul|draft|num-spec|eagle|mtp|simulate-acc|spec-decode",
                     re.IGNORECASE)
SPEC_ENV_RX = re.compile(r"SPEC|SIMULATE_ACC|DRAFT|EAGLE|MTP|ACCEPT", re.IGNORECASE)
OOM_STORY = (
    "#2423: the first sweep job of the H100 twin of the seed recipe died of CUDA OOM, "
    "96 MiB short, because the MTP recipe had inherited its non-MTP sibling's higher "
    "memory fraction; the drafter's weights, its KV cache and the 1+K-token CUDA graphs "
    "need the headroom. Every proven spec-decoding recipe on these SKUs runs {proven}.")


@dataclass(frozen=True)
class Launch:
    """What one row launched: the server command and the environment the script set."""

    key: str
    arm: str
    script: str | None
    argv: tuple[str, ...]
    env: Mapping[str, str]
    spec: bool  # the config says spec-decoding for this arm
    k: int | None = None  # draft length, when known


def gpu_of(config: Mapping[str, Any]) -> str:
    """The GPU SKU of a config key: its runner label without a ``cluster:`` prefix, up to
    the first ``-`` (``cluster:h200-dgxc`` → h200, ``b200-dsv4`` → b200)."""
    runner = str(config.get("runner", "")).split(":", 1)[-1]
    return runner.split("-", 1)[0].split("_", 1)[0].lower()


def spec_modes(config: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    for entries in (config.get("scenarios") or {}).values():
        for e in entries or []:
            for ss in (e or {}).get("search-space") or []:
                if isinstance(ss, dict):
                    out.add(str(ss.get("spec-decoding", "none")))
    return out or {"none"}


def is_spec(config: Mapping[str, Any]) -> bool:
    return bool(spec_modes(config) - {"none"})


def _shape(config: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (str(config.get("model")), str(config.get("precision")), gpu_of(config),
            str(config.get("framework")))


def siblings(key: str, configs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Keys of the same model, precision, GPU, framework and scenario type that differ in
    spec-decoding (sorted: non-spec first).  An agentic recipe and a fixed-seq-len one
    serve different traffic: their differences are the scenario's, not the recipe's."""
    me = configs[key]
    scenarios = set((me.get("scenarios") or {}).keys())
    out = []
    for k, c in configs.items():
        if k == key or not isinstance(c, dict) or _shape(c) != _shape(me):
            continue
        if set((c.get("scenarios") or {}).keys()) == scenarios and spec_modes(
                c) != spec_modes(me):
            out.append(k)
    return sorted(out, key=lambda k: (is_spec(configs[k]), k))


def same_sku_spec(key: str, configs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Other spec-decoding keys on the same GPU and framework (any model)."""
    me = configs[key]
    return sorted(k for k, c in configs.items()
                  if k != key and isinstance(c, dict) and is_spec(c)
                  and gpu_of(c) == gpu_of(me) and c.get("framework") == me.get("framework"))


# ----------------------------------------------------------------------------- argv

# the engines' spellings of one option → its long name (SGLang's --tp/--tp-size, vLLM's -tp)
ALIASES = {
    **{a: "--tensor-parallel-size" for a in ("--tp", "--tp-size", "-tp")},
    **{a: "--data-parallel-size" for a in ("--dp", "--dp-size", "-dp")},
    **{a: "--expert-parallel-size" for a in ("--ep", "--ep-size", "-ep")},
    **{a: "--pipeline-parallel-size" for a in ("--pp", "--pp-size", "-pp")},
}
# what an absent option means (both engines): one-way parallelism
DEFAULTS = {n: "1" for n in ("--tensor-parallel-size", "--data-parallel-size",
                              "--expert-parallel-size", "--pipeline-parallel-size")}


def flags(argv: Sequence[str]) -> dict[str, str]:
    """``--name value`` / ``--name=value`` / bare ``--switch`` → {name: value}; names
    normalised (``_`` → ``-``, aliases to the long name); the last occurrence wins;
    positionals are dropped."""
    out: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if (a.startswith("--") and len(a) > 2) or a.partition("=")[0] in ALIASES:
            name, eq, val = a.partition("=")
            name = name.replace("_", "-")
            name = ALIASES.get(name, name)
            if eq:
                out[name] = val
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[name] = argv[i + 1]
                i += 1
            else:
                out[name] = "true"
        i += 1
    return out


def category(kind: str, name: str) -> str:
    if kind == "arg":
        if name in MEMORY_FLAGS:
            return "memory"
        if name in CAPTURE_FLAGS:
            return "capture"
        if name in SEQS_FLAGS:
            return "seqs"
        return "spec" if SPEC_RX.search(name) else "other"
    return "spec" if SPEC_ENV_RX.search(name) else "other"


def _num(s: str | None) -> float | None:
    try:
        return float(s) if s is not None else None
    except ValueError:
        return None


def _same(va: str | None, vb: str | None, default: str | None) -> bool:
    """Equal values: the same text, the same number (``0.80`` and ``0.8``), or one side
    absent and the other the option's default."""
    va, vb = (default if va is None else va), (default if vb is None else vb)
    if va == vb:
        return True
    na, nb = _num(va), _num(vb)
    return na is not None and na == nb


def capture_expr(capture: str | None, seqs: str | None, k: int | None) -> str | None:
    """The capture size as a multiple of the max sequences: ``MAX_NUM_SEQS*(1+3)``."""
    c, s = _num(capture), _num(seqs)
    if c is None or s is None or s <= 0:
        return capture
    ratio = c / s
    if ratio == 1:
        return f"MAX_NUM_SEQS ({capture})"
    if k is not None and ratio == 1 + k:
        return f"MAX_NUM_SEQS*(1+{k}) ({capture})"
    if ratio.is_integer():
        return f"MAX_NUM_SEQS*{int(ratio)} ({capture})"
    return capture


def memory_fraction(argv: Sequence[str]) -> tuple[str, float] | None:
    fl = flags(argv)
    for name in MEMORY_FLAGS:
        v = _num(fl.get(name))
        if v is not None:
            return name, v
    return None


def diff(ours: Launch, theirs: Launch) -> ShapeDelta:
    a, b = flags(ours.argv), flags(theirs.argv)
    d = ShapeDelta(ours.key, theirs.key, theirs.spec, ours.arm, ours.script, theirs.script)
    seqs_a = next((a[n] for n in SEQS_FLAGS if n in a), None)
    seqs_b = next((b[n] for n in SEQS_FLAGS if n in b), None)
    for name in sorted(set(a) | set(b)):
        va, vb = a.get(name), b.get(name)
        if _same(va, vb, DEFAULTS.get(name)):
            continue
        cat = category("arg", name)
        if cat == "capture":
            va = capture_expr(va, seqs_a, ours.k)
            vb = capture_expr(vb, seqs_b, theirs.k)
        d.items.append(DeltaItem("arg", name, va, vb, cat))
    for name in sorted(set(ours.env) | set(theirs.env)):
        va, vb = ours.env.get(name), theirs.env.get(name)
        if va != vb:
            d.items.append(DeltaItem("env", name, va, vb, category("env", name)))
    return d


# ----------------------------------------------------------------------------- findings

def _line_of(text: str | None, needle: str) -> int | None:
    if not text:
        return None
    for i, ln in enumerate(text.splitlines(), 1):
        if needle in ln and not ln.lstrip().startswith("#"):
            return i
    return None


def delta_notes(deltas: Iterable[ShapeDelta], sources: Mapping[str, str]) -> list[Finding]:
    out: list[Finding] = []
    for d in deltas:
        other = d.unexpected
        if not other:
            continue
        names = ", ".join(i.name for i in other)
        where = d.ours_script or d.key
        line = _line_of(sources.get(where), other[0].name) if d.ours_script else None
        out.append(SHAPE_DELTA.at(
            where, line, 1 if line else None,
            f"{d.key} [{d.arm}] differs from its sibling {d.sibling} beyond the spec-decode "
            f"delta: {names}",
            data={"config_keys": [d.key], "sibling": d.sibling}))
    return out


def memory_warning(ours: Launch, proven: list[Launch], non_spec: list[Launch],
                   sources: Mapping[str, str]) -> Finding | None:
    """PO501 for a spec-decoding launch whose memory fraction is above every proven
    spec-decoding launch on its SKU, or (none proven) not below a non-spec sibling's."""
    if not ours.spec:
        return None
    mine = memory_fraction(ours.argv)
    if mine is None:
        return None
    flag, value = mine
    p_vals = sorted({m[1] for m in (memory_fraction(p.argv) for p in proven) if m})
    n_vals = {nl.key: m[1] for nl in non_spec if (m := memory_fraction(nl.argv))}
    if p_vals:
        if value <= max(p_vals):
            return None
        why = (f"{flag} {value:g} is above every proven spec-decoding recipe on this SKU "
               f"({', '.join(f'{v:g}' for v in p_vals)}: "
               f"{', '.join(sorted({p.key for p in proven}))})")
        proven_txt = " or ".join(f"{v:g}" for v in p_vals)
    else:
        inherited = [k for k, v in n_vals.items() if value >= v]
        if not inherited:
            return None
        why = (f"{flag} {value:g} is the non-spec sibling's memory fraction or above "
               f"({', '.join(f'{k} {n_vals[k]:g}' for k in inherited)}), and no proven "
               "spec-decoding recipe on this SKU shows it fits")
        proven_txt = "0.90 or less"
    where = ours.script or ours.key
    line = _line_of(sources.get(where), flag) if ours.script else None
    return SHAPE_MEMORY.at(where, line, 1 if line else None, f"{ours.key} [{ours.arm}]: {why}",
                           hint=OOM_STORY.format(proven=proven_txt),
                           data={"config_keys": [ours.key], "value": value, "flag": flag})
