"""``ixtool rules``: the catalog of every rule id, from the code."""

from __future__ import annotations

import sys
from enum import StrEnum

import typer


class CatalogFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"


def rules(
    fmt: CatalogFormat = typer.Option(
        CatalogFormat.text, "--format", "-f", case_sensitive=False,
        help="text (terminal), markdown (docs/rules.md), json."),
    area: str | None = typer.Option(
        None, "--area", help="Only this area (changelog, sweep, policy, ci, …)."),
) -> None:
    """List every rule: id, severity, what it checks and how to fix it.

    docs/rules.md is generated with: ixtool rules --format markdown > docs/rules.md

    Exit codes: 0 listed, 2 usage error (unknown area).

    \b
    Examples:
      ixtool rules --area changelog
      ixtool rules --format markdown > docs/rules.md
    """
    from inferencex_tools.errors import UsageError
    from inferencex_tools.report import catalog
    from inferencex_tools.report.findings import all_rules

    selected = [r for r in all_rules() if area is None or r.area == area]
    if area is not None and not selected:
        raise UsageError(f"no rules in area {area!r}",
                         hint="areas: " + ", ".join(sorted({r.area for r in all_rules()})))
    render = {CatalogFormat.text: catalog.render_text,
              CatalogFormat.markdown: catalog.render_markdown,
              CatalogFormat.json: catalog.render_json}[fmt]
    sys.stdout.write(render(selected))
