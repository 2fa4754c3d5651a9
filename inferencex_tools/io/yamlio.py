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

import datetime
import reprlib
import warnings
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer
from ruamel.yaml.constructor import (
    ConstructorError,
    DuplicateKeyError,
    RoundTripConstructor,
    SafeConstructor,
)
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

from inferencex_tools.errors import LimitExceeded, YamlError

try:
    from _ruamel_yaml import CParser as _CParser  # type: ignore[import-not-found]

    _HAVE_C = True
except ImportError:  # pragma: no cover - clib is a dependency
    _CParser = None
    _HAVE_C = False


_ALIAS_HINT = "aliases are not needed in ixtool's files; expand them"


def _limit_at(mark: Any, detail: str, hint: str, *, source: str = "<input>") -> LimitExceeded:
    """A resource-limit error at a parser mark (1-based line and column; none without a
    mark)."""
    return LimitExceeded(detail, source=source,
                         line=mark.line + 1 if mark else None,
                         column=mark.column + 1 if mark else None, hint=hint, kind="limit")


@dataclass(frozen=True)
class Limits:
    """Resource limits applied to every YAML document ixtool reads."""

    max_bytes: int = 32 * 1024 * 1024  # 32 MiB
    max_aliases: int = 100
    max_depth: int = 64
    max_expanded_nodes: int = 1_000_000  # nodes after expanding aliases ("billion laughs")


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
            raise _limit_at(a.start_mark, f"more than {self.max_aliases} YAML aliases",
                           _ALIAS_HINT, source="")
        return a


def _short(key: Any) -> str:
    """A bounded rendering of a mapping key for messages."""
    if isinstance(key, str) and len(key) <= 200:
        return key
    return reprlib.repr(key)


def _check_mapping_key(self: Any, node: Any, key_node: Any, mapping: Any, key: Any,
                       value: Any) -> bool:
    """ruamel's duplicate-key check without its ``with value "…"`` part: formatting an
    aliased value expands the whole alias graph (a billion-laughs value never ends)."""
    if key in mapping:
        if not self.allow_duplicate_keys:
            raise DuplicateKeyError("while constructing a mapping", node.start_mark,
                                    f'found duplicate key "{_short(key)}"', key_node.start_mark)
        return False
    return True


class _LimitedSafeConstructor(SafeConstructor):
    """Safe constructor that counts alias uses.

    With the C parser (``ruamel.yaml.clib``) composition happens in C and the
    Python composer hooks never run; an alias shows up here as a node that was
    already constructed, so the count is enforced on the fast path too.
    """

    max_aliases = DEFAULT_LIMITS.max_aliases
    alias_hits: list[int] = [0]  # noqa: RUF012  (per load: _make() gives each a fresh list)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        if node in self.constructed_objects:
            self.alias_hits[0] += 1
            hits = self.alias_hits[0]
            if hits > self.max_aliases:
                raise _limit_at(getattr(node, "start_mark", None),
                               f"more than {self.max_aliases} YAML aliases", _ALIAS_HINT)
        return super().construct_object(node, deep)

    check_mapping_key = _check_mapping_key


class _RoundTripConstructor(RoundTripConstructor):
    check_mapping_key = _check_mapping_key


def _scalar_timestamp(original: Any) -> Any:
    """ruamel's timestamp constructor formats ``node.value`` into its error; for a
    ``!!timestamp`` sequence of aliases that repr expands the whole alias graph."""

    def construct(self: Any, node: Any, values: Any = None) -> Any:
        if not isinstance(node, ScalarNode):
            raise ConstructorError(None, None, f"failed to construct a timestamp from a {node.id}",
                                   node.start_mark)
        return original(self, node, values)

    return construct


# Integers longer than this (digits in any base, signs and ``_`` not counted) are refused
# at load: nothing ixtool reads needs them, and Python refuses to format an integer of more
# than 4,300 decimal digits (a 20,000-digit ``0x…`` would crash every error message that
# shows the value).  2,000 hex digits stay below that in decimal.
MAX_INT_DIGITS = 2000


def _bounded_int(original: Any) -> Any:
    def construct(self: Any, node: Any) -> Any:
        text = node.value if isinstance(node, ScalarNode) else ""
        if isinstance(text, str) and len(text) > MAX_INT_DIGITS:
            digits = sum(ch.isalnum() for ch in text) - (2 if text.lstrip("+-")[:2].lower()
                                                         in ("0x", "0o", "0b") else 0)
            if digits > MAX_INT_DIGITS:
                raise _limit_at(getattr(node, "start_mark", None),
                               f"integer of {digits:,} digits (over the "
                               f"{MAX_INT_DIGITS:,}-digit limit)",
                               "no value ixtool reads is that long; quote it if it is text")
        return original(self, node)

    return construct


for _cls in (_LimitedSafeConstructor, _RoundTripConstructor):
    _cls.add_constructor("tag:yaml.org,2002:timestamp",
                         _scalar_timestamp(_cls.yaml_constructors["tag:yaml.org,2002:timestamp"]))
    _cls.add_constructor("tag:yaml.org,2002:int",
                         _bounded_int(_cls.yaml_constructors["tag:yaml.org,2002:int"]))


class _FastResolver(VersionedResolver):
    """VersionedResolver with the per-document implicit-resolver table cached.

    ruamel's own ``resolve`` recomputes the YAML version for every scalar (and
    extends its cached lists in place); bulk loads spend a third of their time
    there.  Same results, YAML 1.2 rules unless the document says otherwise.
    """

    _ix_table: Any = None
    _ix_tags: dict[str, Any] = {}  # noqa: RUF012  (shared, immutable Tag objects)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0] and not self.yaml_path_resolvers:
            table = self._ix_table
            if table is None:
                vr = self.versioned_resolver
                tail = tuple(vr.get(None, ()))
                table = self._ix_table = {k: (*v, *tail) for k, v in vr.items() if k is not None}
                table[None] = tail
            for tag, regexp in table.get(value[0] if value else "", table[None]):
                if regexp.match(value):
                    cached = self._ix_tags.get(tag)
                    if cached is None:
                        from ruamel.yaml.tag import Tag

                        cached = self._ix_tags[tag] = Tag(suffix=tag)
                    return cached
            return self.DEFAULT_SCALAR_TAG
        return super().resolve(kind, value, implicit)


# Above this estimated nesting the C composer (recursive, no depth check) is not
# used: very deep documents would overflow the C stack.  The pure-Python path
# enforces ``Limits.max_depth`` while composing.
_C_SAFE_DEPTH = 2000


def _depth_bound(text: str) -> int:
    """A cheap upper bound of a document's nesting depth (no parsing)."""
    flow = text.count("[") + text.count("{")
    if flow <= _C_SAFE_DEPTH and len(text) < 4 * _C_SAFE_DEPTH:
        return flow + len(text) // 2
    indent = 0
    for line in text.splitlines():
        stripped = line.lstrip(" -?:")
        indent = max(indent, len(line) - len(stripped))
    return flow + indent


def _make(typ: str, limits: Limits, *, pure: bool = False) -> YAML:
    y = YAML(typ=typ, pure=pure)
    composer: Any = type("Composer", (_LimitedComposer,), {"max_aliases": limits.max_aliases})
    y.Composer = composer
    if typ == "safe":
        y.Resolver = _FastResolver
        constructor: Any = type(
            "Constructor",
            (_LimitedSafeConstructor,),
            {"max_aliases": limits.max_aliases, "alias_hits": [0]},
        )
        y.Constructor = constructor
    else:
        y.Constructor = _RoundTripConstructor
    y.max_depth = limits.max_depth
    y.allow_duplicate_keys = False
    return y


def _expanded_size(data: Any, cap: int, source: str) -> int:
    """Node count with every alias expanded; LimitExceeded past ``cap``."""
    memo: dict[int, int] = {}

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        if key in memo:
            if memo[key] < 0:  # met again while still inside it: a cycle
                raise LimitExceeded(
                    "a node contains itself (recursive alias)", source=source,
                    hint="recursive structures cannot be checked or compared; expand the alias",
                    kind="limit",
                )
            return memo[key]
        memo[key] = -1  # in progress
        children = node.values() if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child)
            if total > cap:
                raise LimitExceeded(
                    f"aliases expand to more than {cap:,} nodes (a 'billion laughs' document?)",
                    source=source, hint=_ALIAS_HINT,
                    kind="limit",
                )
        memo[key] = total
        return total

    return size(data)


def _check_depth(data: Any, limit: int, source: str) -> None:
    """Iterative depth check of loaded data (the C path does not enforce one)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise LimitExceeded(
                f"nesting deeper than the limit of {limit}", source=source,
                hint="flatten the document", kind="limit",
            )
        if isinstance(node, dict):
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend((v, depth + 1) for v in node)


def _check_size(data: bytes | str, source: str, limits: Limits) -> None:
    size = len(data)
    if size > limits.max_bytes:
        raise LimitExceeded(
            f"file is {size / 2**20:.1f} MiB, over the "
            f"{limits.max_bytes // (1024 * 1024)} MiB limit",
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
        return LimitExceeded("nesting too deep to load", source=source, kind="limit",
                             hint="reduce the nesting (limits: docs/reliability.md)")
    if isinstance(exc, LookupError | AttributeError | ArithmeticError):
        return YamlError(f"invalid value for its YAML tag ({name}: {exc})", source=source,
                         hint="remove the explicit tag (!!…) or fix the value")
    return YamlError(str(exc).strip() or name, source=source,
                     hint="check the YAML syntax near the reported position")


class _Fallback(Exception):
    """The fast path met something it leaves to ruamel's own constructor."""


# plain scalar text → its constructed value under the YAML 1.2 core rules (only immutable
# results: str, int, float, bool, None, dates).  Real files repeat most of their values.
_PLAIN: dict[str, Any] = {}
_PLAIN_MAX = 100_000
_PLAIN_TYPES = (str, int, float, bool, type(None), datetime.date)
_STR_TAG = "tag:yaml.org,2002:str"


def _plain_value(loader: Any, value: str) -> Any:
    """Resolve and construct one plain scalar the way ruamel's safe loader does."""
    tag = loader.resolve(ScalarNode, value, (True, False))
    if str(tag) == _STR_TAG:
        out: Any = value
    else:
        try:
            out = loader.construct_object(ScalarNode(tag, value, None, None))
        except Exception:  # an error message with marks comes from the full path
            raise _Fallback from None
        finally:
            loader.constructed_objects = {}
        if not isinstance(out, _PLAIN_TYPES) or (isinstance(out, str) and out != value):
            raise _Fallback  # merge keys, `=`, anything not a plain value
    if len(_PLAIN) >= _PLAIN_MAX:
        _PLAIN.clear()
    _PLAIN[value] = out
    return out


def _fast_safe(text: str, limits: Limits) -> Any:
    """Safe load straight from the C parser's events, for the documents real repositories
    have: one document, no anchors, aliases, tags, directives, merge keys, complex or
    duplicate keys, within the depth limit.  Anything else raises :class:`_Fallback`
    and the document is loaded by ruamel's constructor (which also reports errors).

    Building values from events skips ruamel's node graph, the per-node resolver call
    and the generic constructor dispatch: about 3× faster on the real master configs.
    """
    get = _CParser(text).get_event
    get()  # StreamStartEvent
    ev = get()
    if ev.__class__ is StreamEndEvent:
        return None
    if ev.__class__ is not DocumentStartEvent or ev.version or ev.tags:
        raise _Fallback
    root = _fast_document(get, limits)
    if get().__class__ is not StreamEndEvent:
        raise _Fallback
    return root[0] if root else None


_STARTS = frozenset({MappingStartEvent, SequenceStartEvent})
_ENDS = frozenset({MappingEndEvent, SequenceEndEvent})


def _fast_document(get: Any, limits: Limits) -> list[Any]:
    """One document from its events, up to its DocumentEndEvent, as a list holding its
    value (empty for an empty document).  One flat loop: a call per event would cost a
    fifth of the speed; only a scalar seen for the first time calls out
    (:func:`_first_sight`)."""
    plain = _PLAIN
    max_depth = limits.max_depth + 1  # the document's own holder is open too
    loader: list[Any] = []  # ruamel's resolver/constructor, made on the first miss
    top: Any = []  # the open container: the document's holder first
    stack: list[Any] = [top]  # open containers
    keys: list[Any] = []  # per container below the holder: its parent's pending key
    key: Any = _NO_KEY  # the pending mapping key of ``top``, or _NO_KEY
    while True:
        ev = get()
        cls = ev.__class__
        if cls is ScalarEvent:
            if ev.anchor is not None:
                raise _Fallback
            if ev.implicit[0]:  # plain: resolved by its text (a "!" tag resolves alike)
                try:
                    val = plain[ev.value]
                except KeyError:
                    val = _first_sight(loader, limits, ev.value)
            elif ev.tag is not None:
                raise _Fallback
            else:
                val = ev.value
        elif cls in _STARTS:
            if ev.anchor is not None or ev.tag is not None or len(stack) >= max_depth:
                raise _Fallback
            val = {} if cls is MappingStartEvent else []
        elif cls in _ENDS:
            stack.pop()
            key = keys.pop()
            top = stack[-1]
            continue
        elif cls is DocumentEndEvent:
            holder: list[Any] = stack[0]
            return holder
        else:  # aliases, a second document
            raise _Fallback
        # attach val to the open container
        if top.__class__ is dict:
            if key is _NO_KEY:
                if cls is not ScalarEvent or val in top:
                    raise _Fallback  # complex or duplicate key: ruamel decides/reports
                key = val
                continue
            top[key] = val
            key = _NO_KEY
        else:
            top.append(val)
        if cls is not ScalarEvent:
            stack.append(val)
            keys.append(key)
            top, key = val, _NO_KEY


def _first_sight(loader: list[Any], limits: Limits, value: str) -> Any:
    """A plain scalar not in the cache: resolved and constructed by ruamel (its loader
    made once per document, kept in ``loader``)."""
    if not loader:
        loader.append(_make("safe", limits).get_constructor_parser("")[0])
    return _plain_value(loader[0], value)


_NO_KEY = object()


def _load(typ: str, data: bytes | str, source: str, limits: Limits, *,
          fast: bool = True) -> Any:
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
    if fast and typ == "safe" and _HAVE_C:  # event-driven, no recursion: safe at any depth
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return _fast_safe(text, limits)
        except (_Fallback, YAMLError, ValueError, TypeError, LookupError, AttributeError,
                ArithmeticError):
            pass  # the full path below gives the result or the precise error
    bound = _depth_bound(text)
    y = _make(typ, limits, pure=bound > _C_SAFE_DEPTH)
    try:
        with warnings.catch_warnings():  # e.g. ReusedAnchorWarning: not for users' eyes
            warnings.simplefilter("ignore")
            data = y.load(text)
    except (YAMLError, LimitExceeded, RecursionError, ValueError, TypeError,
            LookupError, AttributeError, ArithmeticError) as exc:
        # the constructors raise plain KeyError/IndexError/AttributeError on some
        # malformed tagged values (`!!bool x`, `!!int ''`, `!!omap 5`): input errors
        raise _convert(exc, source) from None
    if typ == "safe" and bound > limits.max_depth:
        _check_depth(data, limits.max_depth, source)
    if _used_aliases(y):
        _expanded_size(data, limits.max_expanded_nodes, source)
    return data


def _used_aliases(y: YAML) -> bool:
    """Whether the load resolved any alias (C path: constructor; pure path: composer)."""
    hits = getattr(y.Constructor, "alias_hits", None)
    if hits and hits[0]:
        return True
    return bool(getattr(getattr(y, "_composer", None), "alias_count", 0))


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
