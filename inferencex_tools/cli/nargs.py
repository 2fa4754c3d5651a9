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


class NargsCommand(TyperCommand):
    """A command whose repeatable options also take several values after one flag."""

    def multi_options(self) -> tuple[str, ...]:
        return tuple(opt for p in self.params
                     if p.param_type_name == "option" and getattr(p, "multiple", False)
                     for opt in p.opts)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_nargs(list(args), self.multi_options()))
