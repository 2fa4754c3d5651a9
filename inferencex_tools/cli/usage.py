"""Click's usage errors in ixtool's format: ``ixtool: error: …`` + ``ixtool: hint: …``.

Imported only when something went wrong (start-up time).  Every hint names something
that exists: an option or command of the command at hand (did-you-mean), the allowed
values, or the command's own example.
"""

from __future__ import annotations

import re
from typing import Any

import typer
from typer import _click as click
from typer._types import TyperChoice
from typer.core import TyperGroup, TyperOption

from inferencex_tools.errors import close_names, did_you_mean

_EXAMPLE = re.compile(r"^(?:[A-Z_]+=\S+\s+)*ixtool\s")


def command_path(root: Any, args: list[str]) -> list[str]:
    """The subcommand names ``args`` select below ``root`` (``['sweep', 'full']``)."""
    path: list[str] = []
    cmd = root
    for tok in args:
        if tok == "--" or not isinstance(cmd, TyperGroup):
            break
        if tok.startswith("-"):
            continue
        sub = cmd.commands.get(tok)
        if sub is None:
            break
        path.append(tok)
        cmd = sub
    return path


def example(cmd: Any) -> str | None:
    """The first ``ixtool …`` line of the command's help (its Example section)."""
    for line in (cmd.help or "").splitlines():
        text = line.strip()
        if _EXAMPLE.match(text):
            return text
    return None


def _message(exc: Any) -> str:
    text = exc.message if isinstance(exc, click.exceptions.NoSuchOption) \
        else exc.format_message()
    text = text.strip().split(". Did you mean")[0].rstrip(".")
    return text[:1].lower() + text[1:]


def _help(ctx: Any) -> str:
    return f"see '{ctx.command_path} --help'"


def _options(cmd: Any) -> list[str]:
    return [o for p in cmd.params if isinstance(p, TyperOption) for o in p.opts
            if not p.hidden]


def _no_such_option(exc: Any, ctx: Any) -> str:
    name = exc.option_name
    if name[1:].isdigit():
        return (f"{name} is read as an option: numbers here are positive "
                f"(e.g. {ctx.command_path} 1234)")
    close = close_names(name, _options(ctx.command))
    if close:
        return "did you mean " + ", ".join(close) + f"? ({_help(ctx)})"
    if name in GLOBAL_ONLY:
        return f"{name} goes before the command: ixtool {name} …"
    return _help(ctx) + " for its options"


def _no_such_command(name: str, ctx: Any) -> str:
    names = [n for n, c in ctx.command.commands.items() if not c.hidden]
    return did_you_mean(name, names, what="command", listing=_help(ctx))


def _bad_parameter(exc: Any, ctx: Any) -> str:
    param = exc.param
    opt = (param.opts[0] if getattr(param, "opts", None) else param.human_readable_name) \
        if param is not None else "the value"
    ptype = getattr(param, "type", None)
    if isinstance(ptype, TyperChoice):
        choices = [str(c) for c in ptype.choices]
        return f"{opt} takes one of: {', '.join(choices)}"
    if isinstance(ptype, click.types.IntRange | click.types.FloatRange):
        return f"{opt} takes {ptype._describe_range()}; {_help(ctx)}"
    usage_hint = getattr(getattr(ptype, "func", None), "usage_hint", None)
    if isinstance(usage_hint, str):  # a parser that says what it takes (cli.common)
        return f"{opt} takes {usage_hint}; {_help(ctx)}"
    if ptype is click.types.INT:
        return f"{opt} takes a whole number; {_help(ctx)}"
    if ptype is click.types.FLOAT:
        return f"{opt} takes a number; {_help(ctx)}"
    return _help(ctx)


def _missing(exc: Any, ctx: Any) -> str:
    ex = example(ctx.command)
    return f"for example: {ex}" if ex else _help(ctx)


GLOBAL_ONLY = ("-V", "--version")


def usage_error(exc: BaseException, root: Any, args: list[str]) -> tuple[str, str] | None:
    """(message, hint) for a click exception; None for anything else (a bug)."""
    if isinstance(exc, typer.Abort):
        return "aborted; nothing was written", "give the values as options (see --help)"
    if not isinstance(exc, click.exceptions.ClickException):
        return None
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        path = command_path(root, args)
        where = " ".join(["ixtool", *path])
        return f"{' '.join(path)}: {_message(exc)}".lstrip(": "), f"see '{where} --help'"
    where = ctx.command_path
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        print(ctx.get_help(), flush=True)  # a closed pipe shows here: 141, no error lines
        names = [n for n, c in ctx.command.commands.items() if not c.hidden]
        return (f"{where.removeprefix('ixtool').strip() or 'ixtool'}: missing command",
                f"one of: {', '.join(names)} (e.g. '{where} {names[0]} --help')")
    message = f"{where.removeprefix('ixtool').strip()}: {_message(exc)}".lstrip(": ")
    if isinstance(exc, click.exceptions.NoSuchOption):
        return message, _no_such_option(exc, ctx)
    if isinstance(exc, click.exceptions.MissingParameter):
        return message, _missing(exc, ctx)
    if isinstance(exc, click.exceptions.BadParameter):
        return message, _bad_parameter(exc, ctx)
    if isinstance(exc, click.exceptions.UsageError) and isinstance(ctx.command, TyperGroup) \
            and exc.message.startswith("No such command"):
        name = exc.message.split("'")[1] if "'" in exc.message else ""
        return message, _no_such_command(name, ctx)
    if "unexpected extra argument" in exc.message:
        return message, (f"quote values that contain spaces; {_help(ctx)} for what "
                         "it takes")
    return message, _help(ctx)
