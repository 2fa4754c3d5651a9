"""``ixtool rules``: the catalog of every rule id, from the code."""

from __future__ import annotations

import sys
from enum import StrEnum

import typer

from inferencex_tools.cli import complete


class CatalogFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"


def rules(
    ids: list[str] | None = typer.Argument(
        None, metavar="[ID...]", help="Only these rules (CL502 …; case-insensitive).",
        autocompletion=complete.rule_ids),
    fmt: CatalogFormat = typer.Option(
        CatalogFormat.text, "--format", "-f", case_sensitive=False,
        help="text (terminal), markdown (docs/rules.md), json."),
    area: str | None = typer.Option(
        None, "--area", help="Only this area (changelog, sweep, policy, ci, …).",
        autocompletion=complete.rule_areas),
) -> None:
    """List every rule (or the ids given): id, severity, what it checks, how to fix it.

    docs/rules.md is generated with: ixtool rules --format markdown > docs/rules.md

    Exit codes: 0 listed, 2 usage error (unknown area or rule id).

    \b
    Examples:
      ixtool rules --area changelog
      ixtool rules CL502 PO308
      ixtool rules --format markdown > docs/rules.md
    """
    from inferencex_tools.errors import UsageError, did_you_mean
    from inferencex_tools.report import catalog
    from inferencex_tools.report.findings import all_rules

    every = all_rules()
    known = {r.id for r in every}
    wanted = {i.upper() for i in ids or []}
    for rid in sorted(wanted - known):
        raise UsageError(f"no rule {rid!r}",
                         hint=did_you_mean(rid, known, what="rule id",
                                           listing="'ixtool rules' lists them all"))
    areas = sorted({r.area for r in every})
    if area is not None and area not in areas:
        raise UsageError(f"no rules in area {area!r}", hint="areas: " + ", ".join(areas))
    selected = [r for r in every if (area is None or r.area == area)
                and (not wanted or r.id in wanted)]
    if not selected:
        raise UsageError(f"none of {', '.join(sorted(wanted))} is in area {area!r}",
                         hint="drop --area, or name rules of that area")
    render = {CatalogFormat.text: catalog.render_text,
              CatalogFormat.markdown: catalog.render_markdown,
              CatalogFormat.json: catalog.render_json}[fmt]
    sys.stdout.write(render(selected))
