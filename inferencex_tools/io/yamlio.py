"""YAML loading with ruamel.yaml: fast and safe by default, marks on demand.

* :func:`load_safe` — bulk reads: ruamel's C-backed parser (``ruamel.yaml.clib``)
  with the safe constructor.  Duplicate keys at any depth are errors.
* :func:`load_rt` — round-trip loading, only where line/column marks are needed.

Both enforce :class:`Limits` so hostile input cannot blow up time or memory:
input size, alias count (a "billion laughs" document needs many aliases),
nesting depth.  Every failure is a :class:`~inferencex_tools.errors.YamlError`
carrying the 1-based line and column of the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from inferencex_tools.errors import LimitExceeded, YamlError


@dataclass(frozen=True)
class Limits:
    """Resource limits applied to every YAML document ixtool reads."""

    max_bytes: int = 32 * 1024 * 1024  # 32 MiB
    max_aliases: int = 100
    max_depth: int = 64


DEFAULT_LIMITS = Limits()


class _LimitedComposer(Composer):
    """Composer that counts alias uses and stops past the limit."""

    max_aliases = DEFAULT_LIMITS.max_aliases

    def __init__(self, loader: Any = None) -> None:
        super().__init__(loader)
        self.alias_count = 0

    def return_alias(self, a: Any) -> Any:
        self.alias_count += 1
        if self.alias_count > self.max_aliases:
            raise LimitExceeded(
                f"more than {self.max_aliases} YAML aliases",
                source="",
                line=a.start_mark.line + 1 if a.start_mark else None,
                column=a.start_mark.column + 1 if a.start_mark else None,
                hint="aliases are not needed in ixtool's files; expand them",
                kind="limit",
            )
        return a


def _make(typ: str, limits: Limits) -> YAML:
    y = YAML(typ=typ, pure=False)
    composer: Any = type("Composer", (_LimitedComposer,), {"max_aliases": limits.max_aliases})
    y.Composer = composer
    y.max_depth = limits.max_depth
    y.allow_duplicate_keys = False
    return y


def _check_size(data: bytes | str, source: str, limits: Limits) -> None:
    size = len(data)
    if size > limits.max_bytes:
        raise LimitExceeded(
            f"file is {size / 1e6:.1f} MB, over the {limits.max_bytes // (1024 * 1024)} MiB limit",
            source=source,
            hint="ixtool refuses files this large; check that the right file was given",
            kind="limit",
        )


def _convert(exc: Exception, source: str) -> YamlError:
    if isinstance(exc, LimitExceeded):
        return LimitExceeded(
            exc.detail, source=source, line=exc.line, column=exc.column, hint=exc.hint,
            kind="limit",
        )
    name = type(exc).__name__
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or str(exc)
        kind = "syntax"
        hint = "fix the YAML syntax at that position"
        if name == "DuplicateKeyError":
            kind = "duplicate-key"
            problem = problem.split(" with value")[0]
            hint = "remove or rename one of the duplicated keys"
        elif name == "MaxDepthExceededError":
            kind = "limit"
            return LimitExceeded(
                "nesting deeper than the limit",
                source=source,
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
                hint="flatten the document",
                kind="limit",
            )
        return YamlError(
            problem.strip(),
            source=source,
            line=mark.line + 1 if mark is not None else None,
            column=mark.column + 1 if mark is not None else None,
            hint=hint,
            kind=kind,
        )
    if isinstance(exc, RecursionError):
        return LimitExceeded("nesting too deep to load", source=source, kind="limit")
    return YamlError(str(exc).strip() or name, source=source)


def _load(typ: str, data: bytes | str, source: str, limits: Limits) -> Any:
    _check_size(data, source, limits)
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise YamlError(
                f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                source=source,
                line=line,
                column=exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1,
                hint="save the file as UTF-8",
                kind="encoding",
            ) from None
    else:
        text = data
    y = _make(typ, limits)
    try:
        return y.load(text)
    except (YAMLError, LimitExceeded, RecursionError, ValueError, TypeError) as exc:
        raise _convert(exc, source) from None


def load_safe(
    data: bytes | str, *, source: str = "<input>", limits: Limits = DEFAULT_LIMITS
) -> Any:
    """Parse one YAML document with the C-backed safe loader."""
    return _load("safe", data, source, limits)


def load_rt(
    data: bytes | str, *, source: str = "<input>", limits: Limits = DEFAULT_LIMITS
) -> Any:
    """Parse one YAML document with the round-trip loader (keeps marks: ``.lc``)."""
    return _load("rt", data, source, limits)


def rt_position(node: Any, key: Any = None) -> tuple[int | None, int | None]:
    """1-based (line, column) of a round-trip node, or of its key/index ``key``."""
    lc = getattr(node, "lc", None)
    if lc is None:
        return (None, None)
    try:
        if key is None:
            return (lc.line + 1, lc.col + 1)
        if isinstance(key, int):
            line, col = lc.item(key)
        else:
            line, col = lc.key(key)
        return (line + 1, col + 1)
    except (KeyError, IndexError, TypeError, AttributeError):
        return (lc.line + 1, lc.col + 1)


def rt_path_position(root: Any, path: list[Any]) -> tuple[int | None, int | None]:
    """Position of the deepest node reachable along ``path`` (a JSON-pointer-like list)."""
    node = root
    pos = rt_position(root)
    for part in path:
        try:
            pos = rt_position(node, part)
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    return pos
