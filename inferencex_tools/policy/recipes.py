"""Recipe YAML read the way its consumer reads it, within bounds.

Multi-node recipes are consumed by ``srtctl`` (srt-slurm), which loads them with
PyYAML's ``safe_load``: YAML 1.1 scalars (``lmsysorg/sglang:nightly`` is a plain
scalar even inside a flow mapping), and a repeated key silently keeps its **last**
value.  ixtool uses the same parser so it reads what the job runs, and reports what
the consumer hides:

* every repeated key (the consumer keeps the last one; the earlier value is dead
  text and usually a bug) → :attr:`RecipeDoc.duplicates`;
* a document beyond the bounds (aliases, expanded size, nesting depth, recursive
  aliases) → :attr:`RecipeDoc.limit`, instead of a parse failure.

Pure: text in, :class:`RecipeDoc` out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

MAX_ALIASES = 10_000
MAX_NODES = 1_000_000
MAX_DEPTH = 64


@dataclass
class RecipeDoc:
    data: Any = None
    duplicates: list[tuple[str, int, int]] = field(default_factory=list)  # (path, line, col)
    limit: str | None = None
    error: str | None = None
    error_line: int | None = None
    error_column: int | None = None
    aliases: int = 0

    @property
    def ok(self) -> bool:
        return self.limit is None and self.error is None


class _Limit(Exception):
    pass


_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # same grammar, C speed


class _Loader(_BASE):  # type: ignore[misc]
    """PyYAML's safe loader, recording repeated keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_count = 0
        self.duplicates: list[tuple[str, int, int]] = []

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:  # the keys written here (merges override)
                if not isinstance(key_node, yaml.ScalarNode) or \
                        key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                k = self.construct_scalar(key_node)
                if k in seen:
                    m = key_node.start_mark
                    self.duplicates.append((str(k), m.line + 1, m.column + 1))
                seen[k] = 1
        return super().construct_mapping(node, deep=deep)


def _measure(data: Any) -> None:
    """Raise _Limit when the expanded document exceeds the bounds (cycles included)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def walk(o: Any, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise _Limit(f"nesting deeper than {MAX_DEPTH}")
        if not isinstance(o, (dict, list)):
            return 1
        i = id(o)
        if i in active:
            raise _Limit("a recursive alias (the document contains itself)")
        if i in sizes:
            return sizes[i]
        active.add(i)
        n = 1
        items = list(o.items()) if isinstance(o, dict) else [(None, v) for v in o]
        for k, v in items:
            n += walk(k, depth + 1) + walk(v, depth + 1)
            if n > MAX_NODES:
                raise _Limit(f"more than {MAX_NODES:,} nodes once aliases are expanded")
        active.discard(i)
        sizes[i] = n
        return n

    walk(data, 0)


def _count_aliases(text: str) -> int:
    n = 0
    for ev in yaml.parse(text, Loader=_BASE):
        if isinstance(ev, yaml.AliasEvent):
            n += 1
            if n > MAX_ALIASES:
                raise _Limit(f"more than {MAX_ALIASES} YAML aliases")
    return n


@lru_cache(maxsize=512)
def load_recipe(text: str) -> RecipeDoc:
    """Parse one recipe like ``yaml.safe_load`` does (bounded).  Cached by the text:
    callers treat the result as read-only."""
    doc = RecipeDoc()
    loader = _Loader(text)
    try:
        loader.alias_count = _count_aliases(text)
        doc.data = loader.get_single_data()
        _measure(doc.data)
    except _Limit as exc:
        doc.limit = str(exc)
        doc.data = None
    except RecursionError:
        doc.limit = "nesting too deep for the parser"
        doc.data = None
    except yaml.MarkedYAMLError as exc:
        doc.error = f"{exc.problem or exc.context or 'invalid YAML'}"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            doc.error_line, doc.error_column = mark.line + 1, mark.column + 1
    except yaml.YAMLError as exc:
        doc.error = str(exc)[:200]
    finally:
        loader.dispose()
    doc.duplicates = list(loader.duplicates)
    doc.aliases = loader.alias_count
    return doc
