"""Runner label → node → launcher, and row → benchmark script (SWEEP.md §7).

The launcher is ``runners/launch_<family>.sh`` where the family is the concrete
runner node's name cut at its first ``_``.  The benchmark script follows the
launcher family's naming rule, as implemented by the policy area's
:func:`inferencex_tools.policy.resolve.resolve_script` (reused here through a
small adapter from matrix rows to its row type).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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


def policy_row(row: dict[str, Any], eval_only: bool = False) -> Any:
    """A matrix row as the policy area's :class:`~inferencex_tools.policy.resolve.Row`."""
    from inferencex_tools.policy.resolve import Row

    agentic = row.get("scenario-type") == "agentic-coding"
    keys = ("tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "spec-decoding",
            "kv-offloading", "kv-offload-backend")
    entry: dict[str, Any] = {k: row[k] for k in keys if k in row}
    exp = str(row.get("exp-name", ""))
    config = {k: row.get(k) for k in ("image", "model", "precision", "framework", "runner")}
    # the launcher takes the model code from exp-name, not from the config field
    config["model-prefix"] = exp.split("_", 1)[0] if exp else row.get("model-prefix")
    conc = row.get("conc")
    return Row(config_file="", key=str(row.get("exp-name", "")), key_line=None,
               scenario="agentic-coding" if agentic else "fixed-seq-len", item_index=0,
               entry_index=0, conc=int(conc[0] if isinstance(conc, list) else conc or 0),
               eval_only=eval_only, config=config, entry=entry,
               seq={k: row[k] for k in ("isl", "osl") if k in row},
               dram_gb=int(row.get("total-cpu-dram-gb", 0) or 0))


def resolve(row: dict[str, Any], labels: dict[str, list[str]], runner: str | None,
            root: Path) -> Resolution:
    from inferencex_tools.policy.resolve import resolve_script

    label = str(row.get("runner", ""))
    node = pick_node(label, labels, runner)
    if node is None:
        return Resolution(None, None, None, None, problems=[(
            "LA103", f"runner label {label!r} has no nodes in configs/runners.yaml")])
    from inferencex_tools.io.files import PathRefused, contained

    family = family_of(node)
    launcher = f"runners/launch_{family}.sh"
    try:  # node names are data (runners.yaml, --runner): the launcher stays in runners/
        there = contained(root, launcher, "runners", leaf_link_ok=True).is_file()
    except PathRefused as exc:
        return Resolution(node, family, None, None, problems=[("LA104", exc.message)])
    res = Resolution(node, family, launcher if there else None, None)
    if res.launcher is None:
        res.problems.append(("LA104", f"node {node!r} → launcher {launcher} does not exist"))
        return res
    if row.get("prefill") is not None:
        res.problems.append(("LA106", "multi-node row: rendered up to the launcher's "
                             "submission (the recipe's servers are not traced)"))
        return res
    pres = resolve_script(root, policy_row(row), family)
    res.candidates = list(pres.tried)
    res.script = pres.script
    if pres.script is None:
        res.problems.append(("LA105", pres.why or "no benchmark script resolves"))
    return res
