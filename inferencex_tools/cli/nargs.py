"""Options that take one or more values after a single flag (argparse's ``nargs='+'``).

``--config-keys a b c`` is read as ``--config-keys a --config-keys b --config-keys c`` for
every repeatable option of a command built with :class:`NargsCommand` (commands without
positional arguments, so nothing else can be swallowed).  A value that starts with ``-``
ends the list, except a negative number.
"""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperCommand

_NEG_NUM = re.compile(r"-\d+")


def expand_nargs(args: list[str], multi: tuple[str, ...]) -> list[str]:
    """``--opt a b c`` → ``--opt a --opt b --opt c`` for the options in ``multi``."""
    out: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            out.extend(args[i:])
            break
        out.append(tok)
        i += 1
        if tok in multi:
            first = True
            while i < len(args) and (not args[i].startswith("-") or _NEG_NUM.fullmatch(args[i])):
                if not first:
                    out.append(tok)
                out.append(args[i])
                first = False
                i += 1
    return out


def trailing_multi(args: list[str], multi: tuple[str, ...]) -> str | None:
    """The option of ``multi`` whose values end ``args`` (``--config-keys a b``): the word
    being completed after them is one more of its values."""
    for tok in reversed(args):
        if tok.startswith("-") and not _NEG_NUM.fullmatch(tok):
            return tok if tok in multi else None
    return None


_COMPLETING = "ixtool.nargs.completing"


class NargsCommand(TyperCommand):
    """A command whose repeatable options also take several values after one flag (the
    shell completes each of them, not only the first)."""

    def multi_options(self) -> tuple[str, ...]:
        return tuple(opt for p in self.params
                     if p.param_type_name == "option" and getattr(p, "multiple", False)
                     for opt in p.opts)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if ctx.resilient_parsing:  # shell completion: remember whose values end the line
            ctx.meta[_COMPLETING] = trailing_multi(list(args), self.multi_options())
        return super().parse_args(ctx, expand_nargs(list(args), self.multi_options()))

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        name = ctx.meta.get(_COMPLETING)
        if name and not incomplete.startswith("-"):
            for param in self.params:
                if name in getattr(param, "opts", ()):
                    return list(param.shell_complete(ctx, incomplete))
        return list(super().shell_complete(ctx, incomplete))
