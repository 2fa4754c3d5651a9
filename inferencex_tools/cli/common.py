"""Helpers shared by the command modules: output format, emitting results."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path

import typer

from inferencex_tools.report.findings import Result


class Format(StrEnum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


FORMAT_OPTION = typer.Option(
    Format.text,
    "--format",
    "-f",
    help="Output: text (human), json (stable, see docs/output.md), "
    "github (workflow annotations + job summary), sarif (SARIF 2.1.0).",
    case_sensitive=False,
)


def emit(result: Result, fmt: Format, *, strict: bool = False) -> int:
    """Print ``result`` in ``fmt``; write the job summary under GitHub Actions.

    Returns the exit code: 0 clean, 1 findings.
    """
    from inferencex_tools.report.reporters import render, render_markdown_summary

    color = fmt is Format.text and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    sys.stdout.write(render(result, fmt.value, color=color))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt is Format.github and summary:
        try:
            with Path(summary).open("a", encoding="utf-8") as fh:
                fh.write(render_markdown_summary(result))
        except OSError as exc:
            print(f"ixtool: warning: cannot write $GITHUB_STEP_SUMMARY: {exc}", file=sys.stderr)
    return result.exit_code(strict=strict)


def info(message: str) -> None:
    """A progress/diagnostic line on stderr (never mixed into machine output)."""
    print(message, file=sys.stderr)
