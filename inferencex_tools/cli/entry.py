"""The process entry of ``ixtool`` (console script, ``python -m inferencex_tools``).

``ixtool -V``, ``ixtool --help`` and ``ixtool COMMAND… --help`` answer without importing
Typer or any command (the start-up budget: ``-V``/``--help`` ≤ 4×, a command's help
≤ 2× a bare ``python3 -c pass``, ``benchmarks/startup.py``): the version is a constant,
and the help texts are the ones :mod:`.roothelp` holds (a generated file a test keeps
equal to what click renders), used when the output is at least 80 columns wide, where
click renders them the same.  Everything else goes to
:func:`inferencex_tools.cli.main.main`.
"""

from __future__ import annotations

import os
import sys

_HELP = ("-h", "--help")
_VERSION = ("-V", "--version")


def main() -> None:
    args = sys.argv[1:]
    if len(args) == 1 and args[0] in _VERSION:
        from inferencex_tools import __version__

        _print(f"ixtool {__version__}\n")
    if args and args[-1] in _HELP and all(a[:1] not in ("", "-") for a in args[:-1]) \
            and _wide():  # ixtool [COMMAND…] --help
        from inferencex_tools.cli import roothelp

        text = roothelp.COMMANDS.get(" ".join(args[:-1])) if args[:-1] else roothelp.TEXT
        if text:
            _print(text)
    from inferencex_tools.cli.main import main as full

    full()


def _wide() -> bool:
    """Would click render the help at its full width (80 columns or more)?"""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols) >= 80
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns >= 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return True  # not a terminal: click's fallback is 80 columns


def _print(text: str) -> None:
    """Write ``text`` and end the process (exit 0; a closed pipe: 141, as everywhere)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os._exit(141)
    os._exit(0)
