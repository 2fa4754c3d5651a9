"""Helpers shared by the command modules: output format, emitting results, the GitHub
Actions environment (read here, handed to the services) and its output files."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import typer

from inferencex_tools.report.findings import Result

if TYPE_CHECKING:
    from inferencex_tools.io.actions import ActionsEnv


# The one wording of the exit codes; commands whose 0/1 mean something more specific
# say so in the same shape ("Exit codes: 0 …, 1 …, 2 usage or input error.").
EXIT_CODES = "Exit codes: 0 clean, 1 findings, 2 usage or input error."


@dataclass
class Settings:
    """The global flags of this process (``--quiet``, ``--traceback``)."""

    quiet: bool = False
    traceback: bool = False

    def reset(self) -> None:
        self.quiet = self.traceback = False


SETTINGS = Settings()


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
    if fmt is Format.github:
        write_summary(render_markdown_summary(result))
    return result.exit_code(strict=strict)


def actions_env() -> ActionsEnv:
    """This process's GitHub Actions environment (read on each call: tests change it)."""
    from inferencex_tools.io.actions import ActionsEnv

    return ActionsEnv.from_environ()


def write_outputs(pairs: Iterable[tuple[str, str]] | Mapping[str, str], *,
                  required_by: str | None = None, env: ActionsEnv | None = None) -> bool:
    """Append ``pairs`` to ``$GITHUB_OUTPUT``; False when it is unset.

    ``required_by`` (an option such as ``--github-output``) makes an unset
    ``$GITHUB_OUTPUT`` a usage error.  A failed write is an input error (exit 2).
    """
    from inferencex_tools.io import actions

    env = env or actions_env()
    path = env.require_output(required_by) if required_by else env.output
    if path is None:
        return False
    actions.write_outputs(path, pairs)
    return True


def write_summary(markdown: str, *, env: ActionsEnv | None = None) -> None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` when set; a failed write is a
    warning on stderr, never an error."""
    from inferencex_tools.io import actions

    env = env or actions_env()
    if env.summary is not None:
        warning = actions.write_summary(env.summary, markdown)
        if warning:
            print(f"ixtool: warning: {warning}", file=sys.stderr)


def info(message: str) -> None:
    """An informational line on stderr (never mixed into machine output); silent
    under ``--quiet``."""
    if not SETTINGS.quiet:
        print(message, file=sys.stderr)
