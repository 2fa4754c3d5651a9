"""The ``ixtool`` entry point: the root Typer app, its groups and error handling.

Exit codes: 0 clean, 1 findings, 2 usage or input error (internal errors too).  Every
error is two lines on stderr, ``ixtool: error: …`` and ``ixtool: hint: …``, with no
traceback unless ``--traceback`` is given (anywhere on the command line).  Click's own
usage errors (unknown option, missing argument, bad value) get the same two lines.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import typer

from inferencex_tools import __version__
from inferencex_tools.cli import changelog
from inferencex_tools.cli import ci as ci_cli
from inferencex_tools.cli import config as config_cli
from inferencex_tools.cli import launch as launch_cli
from inferencex_tools.cli import merge as merge_cli
from inferencex_tools.cli import policy as policy_cli
from inferencex_tools.cli import review as review_cli
from inferencex_tools.cli import rules as rules_cli
from inferencex_tools.cli import sweep as sweep_cli
from inferencex_tools.cli.common import EXIT_CODES, SETTINGS

app = typer.Typer(
    name="ixtool",
    help="CI and PR toolkit for InferenceX-style LLM inference benchmark repositories.\n\n"
    f"{EXIT_CODES}\n\n"
    "\b\nExamples:\n  ixtool changelog validate --base origin/main\n"
    "  ixtool sweep explain dsr1-fp8-h200-sglang\n  ixtool rules --area sweep",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(changelog.app, name="changelog")
app.add_typer(ci_cli.app, name="ci")
app.add_typer(ci_cli.labels_app, name="labels")
app.command("rules")(rules_cli.rules)
app.command("merge-with-reuse", help=merge_cli.HELP)(merge_cli.merge_with_reuse)
app.add_typer(policy_cli.app, name="policy")
app.command("review", help=review_cli.HELP)(review_cli.review)
app.add_typer(sweep_cli.app, name="sweep")
app.add_typer(config_cli.app, name="config")
app.add_typer(launch_cli.app, name="launch")



def _version(value: bool) -> None:
    if value:
        print(f"ixtool {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    traceback_: bool = typer.Option(
        False, "--traceback",
        help="Show a Python traceback for errors (for bug reports); accepted anywhere."),
    quiet: bool = typer.Option(
        False, "--quiet", "-q",
        help="No progress or informational lines on stderr (errors and results only); "
        "--quiet is accepted anywhere."),
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True,
        help="Print the version and exit."),
) -> None:
    """CI and PR toolkit for InferenceX-style LLM inference benchmark repositories."""
    # run() takes --traceback/--quiet off the command line wherever they are; these
    # parameters exist for the help text and for callers of ``app`` itself.
    SETTINGS.traceback = SETTINGS.traceback or traceback_
    SETTINGS.quiet = SETTINGS.quiet or quiet


def _take_global_flags(args: list[str]) -> list[str]:
    """Remove the global flags from ``args`` (up to ``--``) and record them."""
    out: list[str] = []
    for i, tok in enumerate(args):
        if tok == "--":
            out.extend(args[i:])
            break
        if tok == "--traceback":
            SETTINGS.traceback = True
        elif tok == "--quiet":  # -q only before the command (it may be a value later)
            SETTINGS.quiet = True
        else:
            out.append(tok)
    return out


def _fail(message: str, hint: str, code: int = 2) -> NoReturn:
    print(f"ixtool: error: {message}", file=sys.stderr)
    print(f"ixtool: hint: {hint}", file=sys.stderr)
    sys.exit(code)


def run(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry: run the app, map exceptions to exit codes."""
    from inferencex_tools.errors import IxtoolError

    SETTINGS.reset()
    SETTINGS.traceback = os.environ.get("IXTOOL_TRACEBACK") == "1"
    args = _take_global_flags(list(sys.argv[1:] if argv is None else argv))
    command = typer.main.get_command(app)
    if _wants_help(args):
        _normalize_metavars(command)
    try:
        code = command.main(args=args, prog_name="ixtool", standalone_mode=False)
    except IxtoolError as exc:
        _show_traceback()
        if exc.hint is None and exc.exit_code != 2:  # a refusal: the message is the reason
            print(f"ixtool: error: {exc.message}", file=sys.stderr)
            sys.exit(exc.exit_code)
        _fail(exc.message, exc.hint or _help_hint(command, args), exc.exit_code)
    except KeyboardInterrupt:
        print("ixtool: interrupted", file=sys.stderr)
        sys.exit(130)
    except (BrokenPipeError, SystemExit):
        raise
    except Exception as exc:
        mapped = _usage_error(exc, command, args)
        if mapped is None:
            _show_traceback()
            _fail(f"internal error: {type(exc).__name__}: {exc}",
                  "this is a bug; re-run with --traceback and report it")
        _fail(*mapped)
    sys.exit(code if isinstance(code, int) else 0)


def _normalize_metavars(command: Any) -> None:
    try:
        from inferencex_tools.cli.metavars import normalize

        normalize(command)
    except Exception:  # cosmetic: never let the help text fail a command
        if SETTINGS.traceback:
            raise


def _wants_help(args: list[str]) -> bool:
    """Help is printed (metavars matter): -h/--help, or a group without a command."""
    return not args or any(a in ("-h", "--help") for a in args) or len(args) <= 2


def _usage_error(exc: Exception, command: Any, args: list[str]) -> tuple[str, str] | None:
    try:
        from inferencex_tools.cli.usage import usage_error

        return usage_error(exc, command, args)
    except Exception:  # a bug in the error path must not hide the original error
        return None


def _show_traceback() -> None:
    if SETTINGS.traceback:
        import traceback  # only on errors: it costs start-up time

        traceback.print_exc()


def _help_hint(command: Any, args: list[str]) -> str:
    from inferencex_tools.cli.usage import command_path

    return f"see 'ixtool {' '.join([*command_path(command, args), '--help'])}'"
