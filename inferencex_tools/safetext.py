"""Text from untrusted data that becomes part of a script line, a file or job name (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# C0 and C1 control characters, DEL, and the Unicode line/paragraph separators: none has a
# place in a row string, and a newline would end the ``#SBATCH``/comment/``export`` line it
# is rendered into (a row's text becomes shell and Slurm directives).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def control_chars(value: Any, where: str = "") -> tuple[str, str] | None:
    """The first string (key or value, at any depth) of ``value`` holding a control
    character: (where, the character), else None."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        at, v = stack.pop()
        if isinstance(v, str):
            m = CONTROL.search(v)
            if m:
                return at or "(value)", m.group()
        elif isinstance(v, dict):
            for k, item in v.items():
                km = CONTROL.search(k) if isinstance(k, str) else None
                if km:
                    return f"{at or '(row)'} key {k[:60]!r}", km.group()
                stack.append((f"{at}.{k}" if at else str(k), item))
        elif isinstance(v, list | tuple):
            stack.extend((f"{at}[{i}]", item) for i, item in enumerate(v))
    return None


MAX_JSON_BYTES = 1 << 20  # 1 MiB: a server argument, a record line
MAX_JSON_DEPTH = 32


def nesting_depth(text: str, limit: int) -> int:
    """The bracket nesting of a JSON text (strings skipped), counted up to ``limit + 1``:
    linear, no recursion, so a 50,000-deep document is measured before it is parsed."""
    depth = top = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > top:
                top = depth
                if top > limit:
                    return top
        elif ch in "]}":
            depth -= 1
    return top


def bounded_json(text: str, *, max_bytes: int = MAX_JSON_BYTES,
                 max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for untrusted text (a server argument, a record): ValueError when
    it is not JSON, longer than ``max_bytes`` or nested deeper than ``max_depth``
    (integers past Python's 4,300-digit limit are ValueError in ``json`` itself)."""
    import json

    if len(text) > max_bytes:
        raise ValueError(f"{len(text):,} characters, over the {max_bytes:,} limit")
    if nesting_depth(text, max_depth) > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - bounded above
        raise ValueError("nested too deep") from None


# Characters that render as nothing or reorder the text around them: every format
# character (Unicode category Cf: zero-width space and joiners, bidi marks, embeddings,
# overrides and isolates, word joiner, BOM, tag characters, …) and the other
# default-ignorable code points of Unicode's DerivedCoreProperties (soft hyphen,
# combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and other
# variation selectors, …).  Two strings that differ only in them look identical; a bidi
# control makes text read differently from what it is.
_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5),
              (0x180B, 0x180F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
              (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
              (0xE0000, 0xE0FFF))


def is_invisible(c: str) -> bool:
    """``c`` is a format character or another default-ignorable code point."""
    import unicodedata

    o = ord(c)
    return unicodedata.category(c) == "Cf" or any(a <= o <= b for a, b in _IGNORABLE)


def invisible_chars(text: str) -> list[tuple[int, str]]:
    """(index, character) of every invisible or bidirectional character in ``text``."""
    if text.isascii():
        return []
    return [(i, c) for i, c in enumerate(text) if not c.isascii() and is_invisible(c)]


def code_points(chars: Iterable[str]) -> str:
    """``U+200B ZERO WIDTH SPACE, U+202E RIGHT-TO-LEFT OVERRIDE``: each distinct
    character once, in order of appearance."""
    import unicodedata

    return ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"
                     for c in dict.fromkeys(chars))


def shown(text: str, limit: int = 80) -> str:
    """``text`` for a message: invisible characters as ``<U+XXXX>``, cut at ``limit``."""
    out = "".join(f"<U+{ord(c):04X}>" if not c.isascii() and is_invisible(c) else c
                  for c in text)
    return repr(out if len(out) <= limit else out[:limit] + "…")
