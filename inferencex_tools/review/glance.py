"""The matrix at a glance and the label/checklist advice (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from inferencex_tools.report.inert import fence, visible
from inferencex_tools.review.model import CHECKLIST_PHRASE, ArmLine, LabelAdvice
from inferencex_tools.sweep.arms import arm_label

RECOMMENDED = "full-sweep-fail-fast"


def arms(rows: Iterable[tuple[str, str, dict[str, Any]]]) -> list[ArmLine]:
    """(config key, mode, row) → one line per key, mode and arm."""
    from inferencex_tools.sweep.publish import row_gpus

    table: dict[tuple[str, str, str], ArmLine] = {}
    for key, mode, row in rows:
        arm = arm_label(row)
        g = row_gpus(row)
        line = table.setdefault((key, mode, arm), ArmLine(key, arm, mode, [], 0, g, 0.0))
        line.jobs += 1
        conc = row.get("conc")
        for c in conc if isinstance(conc, list) else [conc]:
            if isinstance(c, int) and c not in line.concs:
                line.concs.append(c)
        dur = row.get("duration")
        if line.gpu_hours is not None and g is not None and isinstance(dur, int | float):
            line.gpu_hours += g * dur / 3600
        elif mode == "throughput":
            line.gpu_hours = None
    for ln in table.values():
        ln.concs.sort()
        if ln.mode == "eval" and ln.gpu_hours == 0.0:
            ln.gpu_hours = None  # evals carry no duration
    return list(table.values())


def mermaid(lines: Sequence[ArmLine]) -> str:
    """A Mermaid bar chart (GitHub renders it) of throughput jobs per arm."""
    tp = [ln for ln in lines if ln.mode == "throughput"]
    if not tp:
        return ""
    multi_key = len({ln.key for ln in tp}) > 1
    names = [visible(f"{ln.key} {ln.arm}" if multi_key else ln.arm).replace('"', "'")
             for ln in tp]
    top = max(ln.jobs for ln in tp)
    return fence("\n".join([
        "xychart-beta", '    title "throughput jobs per arm"',
        "    x-axis [" + ", ".join(f'"{n}"' for n in names) + "]",
        f'    y-axis "jobs" 0 --> {top + 1}',
        "    bar [" + ", ".join(str(ln.jobs) for ln in tp) + "]"]), "mermaid")


def label_advice(labels: Sequence[str], body: str | None,
                 comments: Sequence[str] = ()) -> LabelAdvice:
    """What the reference's recipe-reminder bot asks for: the CODEOWNER checklist phrase
    and a sweep label (``full-sweep-fail-fast`` recommended)."""
    from inferencex_tools.ci.labels import PRIMARY

    primary = [lb for lb in labels if lb in PRIMARY]
    if not primary:
        advice = (f"add the `{RECOMMENDED}` label (recommended): the benchmark sweep only "
                  "runs on labeled PRs; `full-sweep-enabled` only if matrix jobs must keep "
                  "running past a failure")
    elif len(primary) > 1:
        advice = ("keep exactly one sweep label (now: "
                  + ", ".join(f"`{p}`" for p in primary) + ")")
    elif primary[0] == "sweep-enabled":
        advice = (f"`sweep-enabled` runs a trimmed sweep; use `{RECOMMENDED}` for the "
                  "full verification before merge")
    else:
        advice = f"`{primary[0]}` is set: nothing to add"
    present: bool | None = None
    where = None
    if body is not None:
        phrase = CHECKLIST_PHRASE.lower()
        if phrase in body.lower():
            present, where = True, "PR description"
        elif any(phrase in c.lower() for c in comments):
            present, where = True, "a PR comment"
        else:
            present = False
    return LabelAdvice(list(labels), primary, advice, present, where)
