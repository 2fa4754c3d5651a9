"""The rule catalog as Markdown, JSON or text (``ixtool rules``), pure.

``docs/rules.md`` is exactly ``render_markdown(all_rules())``; a test fails when
it is stale (regenerate: ``ixtool rules --format markdown > docs/rules.md``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from inferencex_tools.report.findings import Rule

REGENERATE = "ixtool rules --format markdown > docs/rules.md"


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def render_markdown(rules: Sequence[Rule]) -> str:
    areas: dict[str, list[Rule]] = {}
    for r in rules:
        areas.setdefault(r.area, []).append(r)
    out = [
        "# Rule catalog",
        "",
        "<!-- generated from the code; do not edit. Regenerate with:",
        f"     {REGENERATE} -->",
        "",
        "Every finding ixtool reports carries one of these rule ids. Severity is the default;",
        "`error` findings make a command exit 1, `warning`s only with `--strict`, `note`s never.",
        "",
        f"{len(rules)} rules in {len(areas)} areas: "
        + ", ".join(f"{a} ({len(rs)})" for a, rs in areas.items()) + ".",
    ]
    for area, rs in areas.items():
        out += ["", f"## {area}", "", "| id | severity | what | fix |", "|---|---|---|---|"]
        out += [f"| `{r.id}` | {r.severity.value} | {_cell(r.summary)} | {_cell(r.fix)} |"
                for r in rs]
    return "\n".join(out) + "\n"


def render_json(rules: Sequence[Rule]) -> str:
    data = [{"id": r.id, "severity": r.severity.value, "area": r.area,
             "summary": r.summary, "fix": r.fix} for r in rules]
    return json.dumps({"schema_version": 1, "rules": data}, indent=2) + "\n"


def render_text(rules: Sequence[Rule]) -> str:
    out = []
    for r in rules:
        out.append(f"{r.id}  {r.severity.value:<7}  {r.area:<9}  {r.summary}")
        out.append(f"{'':>7}fix: {r.fix}")
    return "\n".join(out) + "\n"
