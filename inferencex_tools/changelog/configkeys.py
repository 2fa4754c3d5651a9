"""Master-config keys and the changelog's key/glob resolution (spec §4.3).

Only ``*`` is a wildcard (any run of characters, anchored, case-sensitive);
``?`` and ``[`` are literal — the changelog dialect, not fnmatch (G7).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

_TOP_KEY_RX = re.compile(r"^(?P<key>[^\s#'\"\-{\[][^:#]*?|'[^']*'|\"[^\"]*\"):(?:\s|$)")


def top_level_keys(text: str, *, source: str = "<config>") -> list[str]:
    """Top-level mapping keys of a block-mapping YAML document, in file order.

    A fast line scan (no full YAML load): master configs are large and only their
    keys are needed here.  Falls back to a safe load for unusual layouts.
    """
    keys: list[str] = []
    fallback = False
    for line in text.splitlines():
        if not line or line[0] in " #\t" or line.startswith(("---", "...")):
            continue
        m = _TOP_KEY_RX.match(line)
        if not m:
            fallback = True
            break
        k = m.group("key")
        if k[:1] in "'\"":
            k = k[1:-1]
        keys.append(k)
    if fallback:
        from inferencex_tools.io.yamlio import load_safe

        data = load_safe(text, source=source)
        return [str(k) for k in data] if isinstance(data, dict) else []
    return keys


@cache
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if part == "*" else re.escape(part)
                              for part in re.split(r"(\*)", pattern)), re.S)


@dataclass(frozen=True)
class KeyResolution:
    item: str
    matches: tuple[str, ...]

    @property
    def is_glob(self) -> bool:
        return "*" in self.item


def resolve_items(items: Iterable[str], master_keys: list[str]) -> list[KeyResolution]:
    """Per config-keys item: the master keys it names, in master-config order."""
    key_set = set(master_keys)
    out = []
    for item in items:
        if "*" in item:
            rx = _compile(item)
            out.append(KeyResolution(item, tuple(k for k in master_keys if rx.fullmatch(k))))
        else:
            out.append(KeyResolution(item, (item,) if item in key_set else ()))
    return out

