"""The ``ixtool`` entry point: the root Typer app, its groups and error handling.

Exit codes: 0 clean, 1 findings, 2 usage or input error (internal errors too).  Every
error is two lines on stderr, ``ixtool: error: …`` and ``ixtool: hint: …``, with no
traceback unless ``--traceback`` is given (anywhere on the command line).  Click's own
usage errors (unknown option, missing argument, bad value) get the same two lines.
"""

from __future__ import annotations

import atexit
import copy
import importlib
import os
import sys
import threading
from collections.abc import Callable, MutableMapping
from functools import partial
from typing import Any, NoReturn

import typer
import typer.core

from inferencex_tools import __version__
from inferencex_tools.cli.common import EXIT_CODES, SETTINGS

# The root's commands in help order: name → (module under cli/, attribute, help attribute
# or None for a command; None for a group).  A command line builds only the command it
# names (its module imported, its Typer group made into Click commands); help,
# completion and error hints build them all.
_LAZY: dict[str, tuple[str, str, str | None, bool]] = {
    "rules": ("rules", "rules", None, False),
    "merge-with-reuse": ("merge", "merge_with_reuse", "HELP", False),
    "review": ("review", "review", "HELP", False),
    "changelog": ("changelog", "app", None, True),
    "ci": ("ci", "app", None, True),
    "labels": ("ci", "labels_app", None, True),
    "policy": ("policy", "app", None, True),
    "sweep": ("sweep", "app", None, True),
    "config": ("config", "app", None, True),
    "launch": ("launch", "app", None, True),
    "al": ("al", "app", None, True),
    "hook": ("hook", "hook", "HELP", False),
}

#: The reference scripts' argv at the top level: ``generate_sweep_configs.py full-sweep …``
#: becomes ``ixtool full-sweep …`` (the reference's subcommands are ``sweep``'s), so a
#: workflow swaps the script path for ``ixtool``.  Not listed in ``ixtool --help``.
_REFERENCE_COMMANDS = {"full-sweep": "sweep", "test-config": "sweep"}


class _LazyGroup(typer.core.TyperGroup):
    """A group whose commands are Click commands built on first use: a command line
    builds only the command it names; help, completion and error hints build them all
    (in the order :meth:`_order` gives)."""

    _pending: dict[str, Callable[[], Any]]

    @property
    def commands(self) -> MutableMapping[str, Any]:
        for name in list(self._pending):
            self._build(name)
        return self._commands

    @commands.setter
    def commands(self, value: MutableMapping[str, Any]) -> None:
        self._commands = value
        self._pending = self._initial_pending(value)

    def _initial_pending(self, built: MutableMapping[str, Any]) -> dict[str, Callable[[], Any]]:
        return {}

    def _order(self) -> list[str]:
        return list(self._commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self._pending:
            self._build(cmd_name)
        return self._commands.get(cmd_name)

    def _build(self, name: str) -> None:
        self._commands[name] = with_global_options(self._pending.pop(name)())
        order = self._order()
        ordered = sorted(self._commands.items(),
                         key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
        self._commands.clear()
        self._commands.update(ordered)


def _set_quiet(_ctx: Any, _param: Any, value: bool) -> None:
    if value:
        SETTINGS.quiet = True


def with_global_options(command: Any) -> Any:
    """``command`` (and the commands of a group built whole) with the hidden global
    ``--quiet``/``-q``: accepted anywhere on the line, parsed as an option (so a ``-q``
    that is another option's value stays a value).  The root's help documents it."""
    if not any(p.name == "quiet" for p in command.params):
        command.params.append(typer.core.TyperOption(
            param_decls=["--quiet", "-q"], is_flag=True, expose_value=False, is_eager=True,
            hidden=True, callback=_set_quiet,
            help="No progress or informational lines on stderr."))
    if isinstance(command, typer.core.TyperGroup) and not isinstance(command, _LazyGroup):
        for sub in command.commands.values():
            with_global_options(sub)
    return command


class _Group(_LazyGroup):
    """A command group (``ixtool sweep`` …): its commands are built as ``get_group_from_info``
    would build them, one at a time."""

    _names: list[str]

    def defer(self, app_: typer.Typer) -> None:
        """Take ``app_``'s registered commands as pending builds."""
        self._names = []
        for info in app_.registered_commands:
            assert info.callback is not None
            name = info.name or typer.main.get_command_name(info.callback.__name__)
            self._names.append(name)
            self._pending[name] = partial(
                typer.main.get_command_from_info, info,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode)

    def _order(self) -> list[str]:
        return self._names


class _PipeClosed(Exception):
    """stdout's reader went away: a BrokenPipeError carried past click, which would turn
    it into exit 1 (the findings code)."""


class _Root(_LazyGroup):
    """The root group; its commands are built on first use (see :data:`_LAZY`)."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:  # eager options print here (-V, --help)
            return super().make_context(*args, **kwargs)
        except BrokenPipeError as exc:
            raise _PipeClosed from exc

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise _PipeClosed from exc

    def _initial_pending(self, built: MutableMapping[str, Any]) -> dict[str, Callable[[], Any]]:
        return {n: partial(self._load, n) for n in _LAZY if n not in built}

    def _order(self) -> list[str]:
        return list(_LAZY)

    def _load(self, name: str) -> Any:
        """Build one command exactly as ``app.command``/``app.add_typer`` would (a group's
        own commands on first use)."""
        module, attr, help_attr, group = _LAZY[name]
        mod = importlib.import_module(f"inferencex_tools.cli.{module}")
        one = typer.Typer()
        if group:
            sub: typer.Typer = getattr(mod, attr)
            if sub.registered_groups:  # nested groups: built whole
                one.add_typer(sub, name=name)
                return typer.main.get_group_from_info(
                    one.registered_groups[0], pretty_exceptions_short=app.pretty_exceptions_short,
                    suggest_commands=app.suggest_commands, rich_markup_mode=app.rich_markup_mode)
            shell = copy.copy(sub)  # the group itself, its commands deferred
            shell.registered_commands = []
            shell.info = copy.copy(sub.info)
            shell.info.cls = _Group
            one.add_typer(shell, name=name)
            cmd = typer.main.get_group_from_info(
                one.registered_groups[0], pretty_exceptions_short=app.pretty_exceptions_short,
                suggest_commands=app.suggest_commands, rich_markup_mode=app.rich_markup_mode)
            assert isinstance(cmd, _Group)
            cmd.defer(sub)
            return cmd
        one.command(name, help=getattr(mod, help_attr) if help_attr else None)(
            getattr(mod, attr))
        return typer.main.get_command_from_info(
            one.registered_commands[0], pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=app.rich_markup_mode)


app = typer.Typer(
    name="ixtool",
    cls=_Root,
    help="CI and PR toolkit for InferenceX-style LLM inference benchmark repositories.\n\n"
    f"{EXIT_CODES}\n\n"
    "\b\nExamples:\n  ixtool changelog validate --base origin/main\n"
    "  ixtool sweep explain minimaxm3-fp8-h200-vllm-agentic-mtp\n  ixtool rules --area sweep",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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
        "accepted anywhere on the line."),
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
    """Remove ``--traceback`` from ``args`` (up to ``--``) and record it: it must be known
    before parsing (a usage error's traceback).  ``--quiet``/``-q`` is an option of every
    command (:func:`with_global_options`)."""
    out: list[str] = []
    for i, tok in enumerate(args):
        if tok == "--":
            out.extend(args[i:])
            break
        if tok == "--traceback":
            SETTINGS.traceback = True
        else:
            out.append(tok)
    return out


def _reference_argv(args: list[str]) -> list[str]:
    """``args`` with the group of a reference subcommand put in front of it
    (``full-sweep …`` → ``sweep full-sweep …``); other command lines unchanged."""
    i = 0
    while i < len(args) and args[i] == "-q":  # the root's only option before a command
        i += 1
    if i < len(args) and args[i] in _REFERENCE_COMMANDS:
        return [*args[:i], _REFERENCE_COMMANDS[args[i]], *args[i:]]
    return args


def _fail(message: str, hint: str, code: int = 2) -> NoReturn:
    print(f"ixtool: error: {message}", file=sys.stderr)
    print(f"ixtool: hint: {hint}", file=sys.stderr)
    sys.exit(code)


def run(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry: run the app, map exceptions to exit codes."""
    try:
        _run(argv)
    except (BrokenPipeError, _PipeClosed):  # also while an error was being reported
        _broken_pipe()


def _run(argv: list[str] | None) -> NoReturn:
    from inferencex_tools.errors import IxtoolError

    SETTINGS.reset()
    SETTINGS.traceback = os.environ.get("IXTOOL_TRACEBACK") == "1"
    args = _reference_argv(_take_global_flags(list(sys.argv[1:] if argv is None else argv)))
    command = typer.main.get_command(app)
    if _wants_help(args):
        _normalize_metavars(command, args)
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
    except (BrokenPipeError, _PipeClosed):
        _broken_pipe()
    except SystemExit:
        raise
    except Exception as exc:
        mapped = _usage_error(exc, command, args)
        if mapped is None:
            _show_traceback()
            _fail(f"internal error: {type(exc).__name__}: {exc}",
                  "this is a bug; re-run with --traceback and report it")
        _fail(*mapped)
    sys.exit(code if isinstance(code, int) else 0)


# Exit status when the reader of stdout goes away (``ixtool … | head -1``): what a shell
# reports for a program killed by SIGPIPE (128 + 13), as ``git log | head -1`` or
# ``yes | head -1`` give under ``set -o pipefail``; never 1 (findings).
EXIT_BROKEN_PIPE = 141


def _broken_pipe() -> NoReturn:
    """Stop quietly after a write to a closed pipe: no traceback, no message (the reader
    left on purpose), exit :data:`EXIT_BROKEN_PIPE`.  Whatever is still buffered for
    stdout goes to /dev/null so the final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a file (in-process)
        pass
    sys.exit(EXIT_BROKEN_PIPE)


def _flush() -> None:
    """Flush stdout and stderr; a closed pipe ends the process as :func:`_broken_pipe`
    says (other errors propagate)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        try:
            _broken_pipe()
        except SystemExit:
            os._exit(EXIT_BROKEN_PIPE)


def main() -> NoReturn:
    """The process entry (console script, ``python -m inferencex_tools``): :func:`run`,
    then the process ends without tearing the interpreter down.  Output is flushed and
    the exit handlers run first; what is skipped is freeing every parsed object and
    module one by one (about a tenth of a 150 ms command).  With another thread alive,
    or output that cannot be flushed, the interpreter exits as usual (a closed pipe:
    :data:`EXIT_BROKEN_PIPE`)."""
    from inferencex_tools.cli.term import reliable_stdout

    reliable_stdout()
    try:
        run()
    except SystemExit as exc:
        code = exc.code
        if code is None:
            code = 0
        if not isinstance(code, int) or threading.active_count() > 1:
            _flush()
            raise
        try:
            _flush()
        except (OSError, ValueError):
            raise exc from None
        getattr(atexit, "_run_exitfuncs", lambda: None)()
        os._exit(code)


def _normalize_metavars(command: Any, args: list[str]) -> None:
    """Metavars for the help of the command ``args`` name — only that one is built (its
    group's other commands, and the other groups, are not imported: a command's
    ``--help`` costs what the command's own module costs)."""
    try:
        from inferencex_tools.cli.metavars import normalize

        target = command
        for tok in args:
            if tok == "--" or not isinstance(target, typer.core.TyperGroup):
                break
            if tok.startswith("-"):
                continue
            sub = target.get_command(None, tok)  # type: ignore[arg-type]  # not read
            if sub is None:
                break
            target = sub
        normalize(target, deep=False)
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
    except BrokenPipeError:  # it printed the help (a group without a command)
        raise
    except Exception:  # a bug in the error path must not hide the original error
        return None


def _show_traceback() -> None:
    if SETTINGS.traceback:
        import traceback  # only on errors: it costs start-up time

        traceback.print_exc()


def _help_hint(command: Any, args: list[str]) -> str:
    from inferencex_tools.cli.usage import command_path

    return f"see 'ixtool {' '.join([*command_path(command, args), '--help'])}'"
