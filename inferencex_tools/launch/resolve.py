"""Runner label → node → launcher, and row → benchmark script (SWEEP.md §7).

The launcher is ``runners/launch_<family>.sh`` where the family is the concrete
runner node's name cut at its first ``_``.  The benchmark script follows the
launcher family's naming rule.  Everything here is pure apart from the
``exists`` predicate (a callable, so tests can resolve against any tree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# launcher families whose script name has no framework part (SWEEP.md §7.3)
_NO_FRAMEWORK = ("h100", "mi300x-amds", "mi325x")
_H200_LEGACY = ("h200-cw", "h200-nb")


@dataclass
class Resolution:
    node: str | None
    family: str | None
    launcher: str | None  # repo-relative path
    script: str | None  # repo-relative path
    candidates: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (rule id, message)


def pick_node(label: str, labels: dict[str, list[str]], runner: str | None) -> str | None:
    """The node that runs the row: ``runner`` if given, else the label's first node.

    A row whose ``runner`` already is a node name (``--runner-node-filter``
    matrices) runs there.
    """
    if runner:
        return runner
    nodes = labels.get(label)
    if nodes:
        return nodes[0]
    if "_" in label and not label.startswith("cluster:"):
        return label
    return None


def family_of(node: str) -> str:
    return node.split("_", 1)[0]


def gpu_of(row: dict[str, Any], family: str) -> str:
    """The GPU token of script names: the family up to its first '-' (h200, b200 …)."""
    return family.split("-", 1)[0]


def script_candidates(row: dict[str, Any], family: str) -> list[str]:
    """Benchmark scripts the launcher of ``family`` tries for ``row``, in order."""
    sub = "agentic/" if row.get("scenario-type") == "agentic-coding" else "fixed_seq_len/"
    exp = str(row.get("exp-name", ""))
    model = exp.split("_", 1)[0] if exp else str(row.get("model-prefix", ""))
    prec = row.get("precision")
    fw = row.get("framework")
    spec = "_mtp" if row.get("spec-decoding") == "mtp" else ""
    gpu = gpu_of(row, family)
    base = f"benchmarks/single_node/{sub}{model}_{prec}_{gpu}"
    trt = "_trt" if fw == "trt" else ""
    if family.startswith(_NO_FRAMEWORK):
        return [f"{base}{spec}.sh"]
    if family in _H200_LEGACY:
        return [f"{base}{trt}{spec}.sh"]
    if family.startswith("mi355x"):
        atom = "_atom" if fw == "atom" else ""
        return [f"{base}_{fw}{spec}.sh", f"{base}{atom}{spec}.sh"]
    return [f"{base}_{fw}{spec}.sh", f"{base}{trt}{spec}.sh"]


def resolve(row: dict[str, Any], labels: dict[str, list[str]], runner: str | None,
            exists: Callable[[str], bool]) -> Resolution:
    label = str(row.get("runner", ""))
    node = pick_node(label, labels, runner)
    if node is None:
        return Resolution(None, None, None, None, problems=[(
            "LA103", f"runner label {label!r} has no nodes in configs/runners.yaml")])
    family = family_of(node)
    launcher = f"runners/launch_{family}.sh"
    res = Resolution(node, family, launcher if exists(launcher) else None, None)
    if res.launcher is None:
        res.problems.append(("LA104", f"node {node!r} → launcher {launcher} does not exist"))
    if row.get("prefill") is not None:
        res.problems.append(("LA106", "multi-node row: the launcher runs an srt-slurm recipe"))
        return res
    res.candidates = script_candidates(row, family)
    for c in res.candidates:
        if exists(c):
            res.script = c
            break
    else:
        res.problems.append(("LA105", "none of the scripts the launcher tries exists: "
                             + ", ".join(res.candidates)))
    return res


def exists_under(root: Path) -> Callable[[str], bool]:
    def _exists(rel: str) -> bool:
        return (root / rel).is_file()
    return _exists
