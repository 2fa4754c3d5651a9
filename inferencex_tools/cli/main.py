"""The ``ixtool`` entry point: the root Typer app, its groups and error handling.

Exit codes: 0 clean, 1 findings, 2 usage or internal error.  User errors
(:class:`~inferencex_tools.errors.IxtoolError`) print one clear message and no
traceback unless ``--traceback`` is given.
"""

from __future__ import annotations

import os
import sys

import typer

from inferencex_tools import __version__
from inferencex_tools.cli import changelog
from inferencex_tools.cli import ci as ci_cli
from inferencex_tools.cli import config as config_cli
from inferencex_tools.cli import launch as launch_cli
from inferencex_tools.cli import merge as merge_cli
from inferencex_tools.cli import policy as policy_cli
from inferencex_tools.cli import rules as rules_cli
from inferencex_tools.cli import sweep as sweep_cli

app = typer.Typer(
    name="ixtool",
    help="CI and PR toolkit for InferenceX-style LLM inference benchmark repositories.\n\n"
    "Exit codes: 0 clean, 1 findings, 2 usage or internal error.",
    no_args_is_help=True,
    add_completion=False,
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
        False, "--traceback", help="Show a Python traceback for errors (for bug reports)."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """CI and PR toolkit for InferenceX-style LLM inference benchmark repositories."""
    if traceback_:
        os.environ["IXTOOL_TRACEBACK"] = "1"


def run(argv: list[str] | None = None) -> None:
    """Console-script entry: run the app, map exceptions to exit codes."""
    from inferencex_tools.errors import IxtoolError

    args = sys.argv[1:] if argv is None else argv
    show_tb = "--traceback" in args or os.environ.get("IXTOOL_TRACEBACK") == "1"
    try:
        app(args=args, prog_name="ixtool")
    except IxtoolError as exc:
        if show_tb:
            import traceback  # only on errors: it costs start-up time

            traceback.print_exc()
        print(f"ixtool: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"ixtool: hint: {exc.hint}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("ixtool: interrupted", file=sys.stderr)
        sys.exit(130)
    except (BrokenPipeError, SystemExit):
        raise
    except Exception as exc:
        if show_tb:
            import traceback  # only on errors: it costs start-up time

            traceback.print_exc()
        print(
            f"ixtool: internal error: {type(exc).__name__}: {exc}\n"
            "ixtool: this is a bug; re-run with --traceback and report it",
            file=sys.stderr,
        )
        sys.exit(2)
