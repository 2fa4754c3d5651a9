"""Helpers shared by the command modules: output format, emitting results, the GitHub
Actions environment (read here, handed to the services) and its output files."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
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


BASELINE_OPTION = typer.Option(
    None, "--baseline", metavar="FILE",
    help="Known findings not to report again (default: the settings' baseline, else "
    ".ixtool-baseline.json at the repository root, when it exists). With "
    "--write-baseline: the file to write.")
WRITE_BASELINE_OPTION = typer.Option(
    False, "--write-baseline",
    help="Record the current findings as known (in --baseline FILE, else the settings' "
    "baseline, else .ixtool-baseline.json at the repository root) and exit 0.")


@dataclass
class Adoption:
    """Per-run adoption options (the repository's settings are always applied)."""

    baseline: Path | None = None
    write_baseline: bool = False
    known: Result | None = None  # the same command's result at a base ref
    known_label: str = "at the base"


DEFAULT_BASELINE = ".ixtool-baseline.json"


def adopt(result: Result, opts: Adoption | None = None, cwd: Path | None = None) -> None:
    """The one place adoption controls are applied (every command's findings go through
    it): repository settings, then findings known at a base ref, then the baseline."""
    from inferencex_tools.io.layout import repo_root
    from inferencex_tools.io.settings import find_settings, relpath_from
    from inferencex_tools.report import adopt as A

    opts = opts or Adoption()
    here = cwd or Path.cwd()
    settings, sdir = find_settings(here)
    root = repo_root(here) or sdir or here
    rel = relpath_from(root, here)
    A.apply_settings(result, settings, rel)
    notes: list[str] = []
    if result.info.get("ignored_by_settings"):
        notes.append(f"{result.info['ignored_by_settings']} ignored by {settings.source}")
    if opts.known is not None:
        A.apply_settings(opts.known, settings, rel)
        n = A.drop_known(result, A.fingerprints(opts.known, rel), rel, reason="known_at_base")
        if n:
            notes.append(f"{n} already present {opts.known_label}")
    path = opts.baseline
    if path is None and settings.baseline and sdir is not None:
        path = sdir / settings.baseline
    if path is None and (opts.write_baseline or (root / DEFAULT_BASELINE).is_file()):
        path = root / DEFAULT_BASELINE
    if path is not None:
        note = _baseline(result, path, opts, rel)
        if note:
            notes.append(note)
    if notes:
        result.info["adoption"] = "; ".join(notes)


def adopted_copy(result: Result, cwd: Path | None = None) -> Result:
    """``result`` as :func:`adopt` would leave it, as a copy (the result itself is left
    as it is and no baseline is written): for decisions taken before the report."""
    from dataclasses import replace

    view = replace(result, findings=list(result.findings), info=dict(result.info))
    adopt(view, Adoption(), cwd)
    return view


def _baseline(result: Result, path: Path, opts: Adoption, rel: Callable[[str], str]
              ) -> str | None:
    """Write (``--write-baseline``) and/or apply the baseline at ``path``."""
    from inferencex_tools.io.settings import read_baseline, write_baseline
    from inferencex_tools.report import adopt as A

    if opts.write_baseline:
        prev = read_baseline(path) if path.is_file() else None
        write_baseline(path, A.baseline_document([result], rel, prev))
        result.info["baseline_written"] = str(path)
    elif not path.is_file() and opts.baseline is None:
        return None
    n = A.drop_known(result, A.baseline_known(read_baseline(path)), rel,
                     reason="known_in_baseline")
    if opts.write_baseline:
        return f"{n} recorded in baseline {path}"
    return f"{n} known in baseline {path}" if n else None


class _PrNumber:
    """Typer parser of a ``--pr``/``--pr-number`` value: canonical decimal only (no sign,
    spaces, underscores or leading zeros), 1 … 2**31-1 (``inferencex_tools.ci.ids``).

    With ``allow_zero`` a plain ``0`` is taken too: run-sweep.yml passes
    ``${{ github.event.pull_request.number || 0 }}``, i.e. ``0`` on every push.  As in
    the reference ``ci_priority.py`` the number only matters with the skip-queue
    label, which a push never carries, so ``0`` there means "no PR"."""

    __name__ = "pr_number"

    def __init__(self, *, allow_zero: bool = False) -> None:
        self.allow_zero = allow_zero
        self.usage_hint = ("a whole number from 1 to 2147483647, without leading zeros"
                           + (", or 0 for no PR" if allow_zero else ""))

    def __call__(self, value: str | int) -> int:
        from inferencex_tools.ci.ids import pr_number

        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if self.allow_zero and value == "0":
            return 0
        number = pr_number(value) if isinstance(value, str) else None
        if number is None:
            text = str(value)
            shown = text if len(text) <= 40 else f"{text[:40]}… ({len(text):,} characters)"
            raise typer.BadParameter(f"{shown!r} is not a PR number")
        return number


pr_number_arg = _PrNumber()
#: ``--pr-number`` of the commands the workflows call with ``… || 0`` (``ci priority``).
pr_number_or_zero_arg = _PrNumber(allow_zero=True)


def emit(result: Result, fmt: Format, *, strict: bool = False,
         adoption: Adoption | None = None) -> int:
    """Apply the adoption controls, print ``result`` in ``fmt``; write the job summary
    under GitHub Actions.

    Returns the exit code: 0 clean, 1 findings.
    """
    from inferencex_tools.report.reporters import render, render_markdown_summary

    adopt(result, adoption)
    result.strict = strict  # the reports say what the exit code does

    color = fmt is Format.text and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    sys.stdout.write(render(result, fmt.value, color=color))
    if fmt is Format.github:
        write_summary(render_markdown_summary(result))
    return result.exit_code()


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


def warn(message: str) -> None:
    """A warning on stderr (``ixtool: warning: …``); shown under ``--quiet`` too."""
    print(f"ixtool: warning: {message}", file=sys.stderr)


# ``--repo`` is always OWNER/NAME; a directory is ``--root``.  Commands that once took
# the checkout as ``--repo DIR`` keep accepting it (a hidden, deprecated spelling).
DEPRECATED_REPO_DIR = typer.Option(
    None, "--repo", hidden=True, help="Deprecated spelling of --root DIR.")


def root_of(root: Path, repo_dir: str | None) -> Path:
    """``--root``, or the directory given with the deprecated ``--repo DIR``."""
    if repo_dir is None:
        return root
    warn(f"--repo {repo_dir}: give the directory with --root (--repo is OWNER/NAME)")
    return Path(repo_dir)


def repo_and_root(repo: str | None, root: Path) -> tuple[str | None, Path]:
    """(OWNER/NAME, directory) where ``--repo`` may still carry a directory (deprecated):
    an existing directory given as ``--repo`` is taken as ``--root``."""
    if repo is not None and Path(repo).is_dir():
        return None, root_of(root, repo)
    return repo, root


def info(message: str) -> None:
    """An informational line on stderr (never mixed into machine output); silent
    under ``--quiet``."""
    if not SETTINGS.quiet:
        print(message, file=sys.stderr)
