"""The name of a sweep arm (pure): one spelling for the matrix at a glance, the golden-AL
table and the policy check's verdict rows, so a reader can match them."""

from __future__ import annotations

from typing import Any


def arm_label(row: dict[str, Any]) -> str:
    """``tp8``, ``tp8 ep8``, ``tp8 ep8 kv=dram``, ``tp4 dpa 1024/1024``,
    ``P1×tp4 D4×tp8`` …: the arm of a matrix row (or of a search-space entry with its
    sequence lengths)."""
    if "prefill" in row:
        p, d = row["prefill"], row["decode"]
        p = p if isinstance(p, dict) else {}
        d = d if isinstance(d, dict) else {}
        return (f"P{p.get('num-worker')}×tp{p.get('tp')} D{d.get('num-worker')}×tp"
                f"{d.get('tp')}")
    parts = [f"tp{row.get('tp')}"]
    for name, short in (("ep", "ep"), ("pp", "pp"), ("dcp-size", "dcp"), ("pcp-size", "pcp")):
        v = row.get(name)
        if isinstance(v, int) and v > 1:
            parts.append(f"{short}{v}")
    if row.get("dp-attn"):
        parts.append("dpa")
    kv = row.get("kv-offloading")
    if kv not in (None, "none"):
        parts.append(f"kv={kv}")
    if "isl" in row:
        parts.append(f"{row.get('isl')}/{row.get('osl')}")
    return " ".join(parts)
