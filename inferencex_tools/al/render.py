"""The audit as a text table and as a Markdown section (a table per K and a Mermaid chart
GitHub renders), pure."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from inferencex_tools.al.service import Audit, JobAudit

MARKER = "<!-- ixtool al audit -->"


def _f(v: float | None, digits: int = 2) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _row(j: JobAudit) -> str:
    return f"{j.launch.entry} conc={j.launch.conc}"


def _measured(j: JobAudit) -> str:
    m = j.measurement
    if m is None:
        return "—"
    pos = "/".join(f"{p:.2f}" for p in m.per_pos)
    return f"{m.al:.3f}±{m.se:.3f}" + (f" [{pos}]" if pos else "")


def text_table(a: Audit) -> str:
    head = ("config key", "row", "mode", "engine", "draft", "K", "thinking", "forced",
            "measured [per position]", "golden", "verdict")
    rows = [head]
    for j in a.jobs:
        la = j.launch
        rows.append((la.config_key, _row(j), la.mode, la.engine or "—",
                     (la.draft or ("native" if la.has_spec else "—")).rsplit("/", 1)[-1],
                     str(la.k) if la.k is not None else "—",
                     (la.thinking or "?").replace("thinking_", "") if la.has_spec else "—",
                     _f(la.forced), _measured(j), _f(la.golden),
                     j.verdict.status if j.verdict else "?"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
           for r in rows]
    details = [f"  {j.launch.label()}: {j.verdict.status}: {j.verdict.detail}"
               for j in a.jobs if j.verdict and j.verdict.status != "ok"
               and j.verdict.finding is None]  # the others are findings, printed below
    where = (f"run {a.run.run_id}" if a.run.run_id else
             f"artifacts {a.run.directory}" if a.run.directory else "artifacts")
    lines_ = [f"measured acceptance length, {where}: {len(a.jobs)} job(s)", *out]
    if details:
        lines_ += ["", *details]
    return "\n".join(lines_) + "\n"


def _groups(jobs: Sequence[JobAudit]) -> dict[tuple[str, str], list[JobAudit]]:
    g: dict[tuple[str, str], list[JobAudit]] = defaultdict(list)
    for j in jobs:
        if j.launch.has_spec and j.launch.registry_row:
            g[(j.launch.registry_row, j.launch.thinking or "undetermined")].append(j)
    return g


def _label(text: str) -> str:
    """Text inside the chart's quoted strings: what could end the string or the fence
    (quotes, backticks, line breaks, brackets) is dropped."""
    return re.sub(r"[^\w .:=+,()/-]", "", text)[:120]


def _chart(title: str, cats: list[tuple[str, float | None, float]]) -> list[str]:
    """Bars: the measured mean per (K, mode); line: the golden value at that K."""
    if not cats:
        return []
    top = max([c[2] for c in cats] + [c[1] or 0 for c in cats]) + 0.5
    golden = [c[1] if c[1] is not None else 0.0 for c in cats]
    return ["```mermaid", "xychart-beta", f'    title "{_label(title)}"',
            "    x-axis [" + ", ".join(f'"{_label(c[0])}"' for c in cats) + "]",
            f'    y-axis "AL" 1 --> {top:.1f}',
            "    bar [" + ", ".join(f"{c[2]:.3f}" for c in cats) + "]",
            "    line [" + ", ".join(f"{v:.2f}" for v in golden) + "]", "```"]


def _per_k(reg: str, mode: str, jobs: list[JobAudit]) -> tuple[list[str], list[str]]:
    """The table lines of one (curve, thinking mode) and its chart."""
    from inferencex_tools.report.inert import prose

    rows: list[str] = []
    cats: list[tuple[str, float | None, float]] = []
    by_k: dict[tuple[int | None, str], list[JobAudit]] = defaultdict(list)
    for j in jobs:
        by_k[(j.launch.k, j.launch.mode)].append(j)
    for (k, jm), js in sorted(by_k.items(),
                              key=lambda kv: (kv[0][0] or 0, kv[0][1] != "throughput")):
        ms = [j.measurement.al for j in js if j.measurement]
        forced = sorted({j.launch.forced for j in js if j.launch.forced is not None})
        golden = js[0].launch.golden
        rng = f"{min(ms):.3f}–{max(ms):.3f}" if ms else "—"
        rows.append(f"| {prose(reg)} | {prose(mode)} | {k} | {prose(jm)} | {len(js)} | "
                    f"{', '.join(f'{v:g}' for v in forced) or '—'} | {rng} | "
                    f"{_f(golden)} | {_counts(js)} |")
        if ms:
            cats.append((f"K={k} {jm}", golden, sum(ms) / len(ms)))
    return rows, _chart(f"{reg} {mode}: measured (bars) vs golden (line)", cats)


def _counts(jobs: Sequence[JobAudit]) -> str:
    c: dict[str, int] = defaultdict(int)
    for j in jobs:
        c[j.verdict.status if j.verdict else "?"] += 1
    return ", ".join(f"{n} {s}" for s, n in sorted(c.items()))


def markdown(a: Audit) -> str:
    """The Markdown section (job summaries, ``review --al-audit``'s posted comment): config
    keys come from the PR's configs and details from the run's artifacts, so every such
    cell goes through :mod:`report.inert`."""
    from inferencex_tools.report.inert import code, prose

    where = (f"[run {a.run.run_id}]({a.run.url})" if a.run.url else
             f"run {a.run.run_id}" if a.run.run_id else "the downloaded artifacts")
    out = [MARKER, f"### Measured acceptance length ({where})", "",
           f"Jobs: {_counts(a.jobs) or 'none'}.", ""]
    groups = _groups(a.jobs)
    charts: list[str] = []
    if groups:
        out += ["| curve | thinking | K | mode | jobs | forced | measured (min–max) | "
                "golden | verdicts |", "|---|---|---|---|---|---|---|---|---|"]
    for (reg, mode), jobs in sorted(groups.items()):
        rows, chart = _per_k(reg, mode, jobs)
        out += rows
        charts += ["", *chart]
    out += charts
    bad = [j for j in a.jobs if j.verdict and j.verdict.status in ("ERROR", "WARNING")]
    if bad:
        out += ["", "| job | verdict | detail |", "|---|---|---|"]
        out += [f"| {prose(j.launch.label())} | {j.verdict.status} | "
                f"{prose(j.verdict.detail)} |" for j in bad if j.verdict]
    out += ["", "<details><summary>every job</summary>", "", "| config key | row | mode | "
            "K | forced | measured | golden | verdict |", "|---|---|---|---|---|---|---|---|"]
    out += [f"| {code(j.launch.config_key, table=True)} | {prose(_row(j))} | "
            f"{prose(j.launch.mode)} | {j.launch.k or '—'} | "
            f"{_f(j.launch.forced)} | {_measured(j)} | {_f(j.launch.golden)} | "
            f"{j.verdict.status if j.verdict else '?'} |" for j in a.jobs]
    out += ["", "</details>"]
    return "\n".join(out) + "\n"
