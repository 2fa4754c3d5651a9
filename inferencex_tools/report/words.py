"""Counted nouns in messages: ``plural(1, "entry")`` → ``1 entry``, ``plural(2, "entry")``
→ ``2 entries`` (never ``entr(y/ies)``)."""

from __future__ import annotations

_IRREGULAR = {"entry": "entries", "this": "these"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` in the right number (``many`` overrides the plural form)."""
    if n == 1:
        return f"{n} {word}"
    if many is None:
        many = _IRREGULAR.get(word) or (word + "es" if word.endswith(("s", "sh", "ch", "x"))
                                        else word + "s")
    return f"{n} {many}"
