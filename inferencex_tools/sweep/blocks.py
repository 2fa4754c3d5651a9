"""Top-level blocks of a master config: parse only the config keys a change needs.

A master config is a block mapping ``config key → entry``; each entry's text runs
from its key line (column 0) to the next key line.  When a PR touches a few of the
~200 keys, the gate and ``sweep from-changelog`` parse just those blocks.

Splitting is used only where it cannot change the meaning of the document:

* every non-blank, non-comment line at column 0 is a plain ``key:`` line (no flow
  or complex keys, no document markers or directives, no tabs at column 0);
* no alias refers to an anchor outside its own block (anchors and aliases are
  recognised conservatively, also where YAML would read them as text);
* keys are unique;
* each block that is parsed must load, alone, as a mapping with exactly its key.

Otherwise :func:`split` returns None (or :func:`parse_keys` raises
:class:`Unsplittable`) and the caller parses the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from inferencex_tools.errors import YamlError
from inferencex_tools.io.yamlio import load_safe

_KEY_LINE = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.+/-]*):(?:[ \t]|$)")
_ANCHOR = re.compile(r"(?:^|[\s,\[{])&([^\s,\[\]{}]+)")
_ALIAS = re.compile(r"(?:^|[\s,\[{])\*([^\s,\[\]{}]+)")


_TOKEN_BEFORE = frozenset(" \t\r\n,[{")
_NOT_NAME = frozenset(" \t\r\n,[]{}")


def _may_alias(text: str) -> bool:
    """Whether ``text`` may use an alias (a ``*`` starting a token followed by a name)."""
    i = text.find("*")
    while i >= 0:
        if (i == 0 or text[i - 1] in _TOKEN_BEFORE) and i + 1 < len(text) \
                and text[i + 1] not in _NOT_NAME:
            return True
        i = text.find("*", i + 1)
    return False


class Unsplittable(Exception):
    """The file cannot be split safely: parse it whole."""


@dataclass(frozen=True)
class Block:
    key: str
    line: int  # 1-based line of the key
    text: str


_MEMO: dict[str, list[Block] | None] = {}


def split(text: str) -> list[Block] | None:
    """The top-level blocks of ``text`` in file order, or None when not safe to split."""
    if text in _MEMO:
        return _MEMO[text]
    if len(_MEMO) >= 8:
        _MEMO.clear()
    out = _MEMO[text] = _split(text)
    return out


def _split(text: str) -> list[Block] | None:
    lines = text.splitlines(keepends=True)
    starts: list[tuple[int, str]] = []
    for i, ln in enumerate(lines):
        c = ln[:1]
        if c in ("", " ", "#", "\n", "\r"):
            continue
        m = _KEY_LINE.match(ln)
        if not m:
            return None  # flow/complex keys, markers, directives, tabs, odd layouts
        starts.append((i, m.group(1)))
    if not starts:
        return None
    keys = [k for _, k in starts]
    if len(set(keys)) != len(keys):
        return None
    blocks: list[Block] = []
    for n, (i, key) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        blocks.append(Block(key, i + 1, "".join(lines[i:end])))
    if not _may_alias(text):
        return blocks  # no alias anywhere: nothing can cross a block boundary
    defined: dict[str, int] = {}
    for n, b in enumerate(blocks):
        for a in _ANCHOR.findall(b.text):
            defined.setdefault(a, n)
    for n, b in enumerate(blocks):
        for a in _ALIAS.findall(b.text):
            if defined.get(a) != n:
                return None  # an alias that may point into another block
    return blocks


def parse_block(block: Block, source: str) -> Any:
    """The entry of one block, checked to be exactly ``{key: entry}``."""
    try:
        data = load_safe(block.text, source=f"{source}:{block.line}")
    except YamlError:
        raise Unsplittable(block.key) from None
    if not isinstance(data, dict) or list(data) != [block.key]:
        raise Unsplittable(block.key)
    return data[block.key]


def parse_keys(text: str, wanted: set[str], source: str) -> tuple[list[str], dict[str, Any]]:
    """All keys of the file (in order) and the parsed entries of ``wanted`` keys only."""
    blocks = split(text)
    if blocks is None:
        raise Unsplittable(source)
    entries = {b.key: parse_block(b, source) for b in blocks if b.key in wanted}
    return [b.key for b in blocks], entries


def split_files(texts: list[tuple[str, str]]) -> list[tuple[str, list[Block]]]:
    """Each file's blocks, in order; :class:`Unsplittable` when a file cannot be split or
    a key stands in two files (the whole-file merge reports that)."""
    out: list[tuple[str, list[Block]]] = []
    seen: set[str] = set()
    for label, text in texts:
        blocks = split(text)
        if blocks is None:
            raise Unsplittable(label)
        for b in blocks:
            if b.key in seen:
                raise Unsplittable(f"{b.key} in two files")
            seen.add(b.key)
        out.append((label, blocks))
    return out


def configs_of(files: list[tuple[str, list[Block]]], wanted: set[str],
               sources: dict[str, bytes]) -> Any:
    """Merged configs with the ``wanted`` keys' entries parsed from their blocks (the
    other keys stay unparsed); ``sources``: each file's raw bytes."""
    from inferencex_tools.sweep.load import Configs

    out = Configs(sources=sources)
    for label, blocks in files:
        for b in blocks:
            if b.key in wanted:
                out.data[b.key] = parse_block(b, label)
                out.origin[b.key] = label
    return out


def field_values(entries: Iterable[Any], field: str) -> set[str]:
    """``str()`` of ``field`` of each mapping entry that has it truthy (a model prefix)."""
    return {str(e[field]) for e in entries if isinstance(e, dict) and e.get(field)}


def touched(head: str, base: str | None) -> tuple[list[Block], list[str]] | None:
    """Blocks of ``head`` whose text differs from ``base`` (or are new), and the keys
    ``base`` had; None when either file cannot be split."""
    hb = split(head)
    if hb is None:
        return None
    if base is None:
        return hb, []
    bb = split(base)
    if bb is None:
        return None
    old = {b.key: b.text for b in bb}
    return [b for b in hb if old.get(b.key) != b.text], list(old)


def parse_like(raw: bytes, label: str, ref_raw: bytes | None, ref_label: str) -> Any:
    """``raw`` parsed as a whole file would be, reusing the whole-file parse of
    ``ref_raw`` (another revision of the same file, parsed once per process) for every
    block whose text is the same in both: only the blocks that differ are parsed.

    Used where whole-file semantics are guaranteed by the split rules; anything the
    rules cannot vouch for (no split, aliases, a reference that is not the mapping of
    its blocks, a block that does not load alone) is a whole-file parse of ``raw``,
    which also raises the errors a whole-file parse raises.
    """
    from inferencex_tools.io.yamlio import DEFAULT_LIMITS
    from inferencex_tools.sweep.load import load_cached

    if ref_raw is None or ref_raw == raw:
        return load_cached(ref_raw if ref_raw is not None else raw,
                           ref_label if ref_raw is not None else label)
    try:
        text, ref_text = raw.decode("utf-8"), ref_raw.decode("utf-8")
    except UnicodeDecodeError:
        return load_cached(raw, label)
    if len(raw) > DEFAULT_LIMITS.max_bytes or _may_alias(text) or _may_alias(ref_text):
        return load_cached(raw, label)  # limits count whole documents; aliases span blocks
    blocks, ref_blocks = split(text), split(ref_text)
    if blocks is None or ref_blocks is None:
        return load_cached(raw, label)
    try:
        ref = load_cached(ref_raw, ref_label)
    except YamlError:
        return load_cached(raw, label)
    if not isinstance(ref, dict) or list(ref) != [b.key for b in ref_blocks]:
        return load_cached(raw, label)
    same = {b.key: b.text for b in ref_blocks}
    out: dict[str, Any] = {}
    try:
        for b in blocks:
            out[b.key] = ref[b.key] if same.get(b.key) == b.text else parse_block(b, label)
    except Unsplittable:
        return load_cached(raw, label)
    return out


# A value a block can hold only where its text spells it: it starts with a letter (no
# int, float, date or collection prints so, except these YAML words) and has no quote.
_SPELLED = re.compile(r"[A-Za-z][A-Za-z0-9._-]*")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "inf", "nan",
                         "y", "n"})


class FieldValues:
    """Whether some entry of a set of master files has ``field`` (truthy) whose ``str()``
    is a given value, parsing only the blocks that can hold the value: the answer of a
    whole-file parse of each file (a file that does not load counts for nothing) where
    the blocks left unparsed load — the premise of a scoped check, whose unparsed blocks
    are the base's own, untouched by the change.

    A value that is a plain name (:data:`_SPELLED`) can come from a block only if the
    block's text contains it: without escapes (a block with ``\\`` is parsed at once),
    a scalar that prints as such a name is written out on one line, and an alias or a
    merge brings text from its own block (:func:`split` guarantees that).  Any other
    value, an unsplittable file or a block that does not load alone parses whole files.
    """

    def __init__(self, files: list[tuple[str, bytes]], field: str) -> None:
        from inferencex_tools.io.yamlio import DEFAULT_LIMITS

        self.field = field
        self._raw = dict(files)
        self._values: dict[str, set[str]] = {label: set() for label, _ in files}
        self._pending: dict[str, list[Block]] = {}
        self._texts: dict[str, str] = {}
        self._answers: dict[str, bool] = {}
        for label, raw in files:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                self._whole(label)
                continue
            blocks = split(text) if len(raw) <= DEFAULT_LIMITS.max_bytes else None
            if blocks is None:
                self._whole(label)
                continue
            self._texts[label] = text
            self._pending[label] = [b for b in blocks if "\\" not in b.text]
            for b in blocks:
                if "\\" in b.text and label in self._pending:
                    self._parse(label, b)

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, str):
            return False
        if value not in self._answers:  # curve names ask for the same prefixes again
            self._answers[value] = self._lookup(value)
        return self._answers[value]

    def _lookup(self, value: str) -> bool:
        if _SPELLED.fullmatch(value) is None or value.lower() in _YAML_WORDS:
            for label in list(self._pending):
                self._whole(label)
        if any(value in vs for vs in self._values.values()):
            return True
        line = f"{self.field}: {value}"
        for label in list(self._pending):
            if value not in self._texts[label]:
                continue  # no block of this file spells it
            # blocks that spell the field with the value first: usually the first parse
            todo = sorted((b for b in self._pending[label] if value in b.text),
                          key=lambda b: line not in b.text)
            for b in todo:
                if not self._parse(label, b):
                    break  # the whole file was parsed instead
                self._pending[label].remove(b)
                if value in self._values[label]:
                    return True
        return any(value in vs for vs in self._values.values())

    def _add(self, label: str, entry: Any) -> None:
        self._values[label].update(field_values((entry,), self.field))

    def _parse(self, label: str, block: Block) -> bool:
        """One block's value; False when it took a whole-file parse instead."""
        try:
            self._add(label, parse_block(block, label))
            return True
        except Unsplittable:
            self._whole(label)
            return False

    def _whole(self, label: str) -> None:
        from inferencex_tools.errors import InputError
        from inferencex_tools.sweep.load import load_cached

        self._pending.pop(label, None)
        self._values[label] = set()
        try:
            doc = load_cached(self._raw[label], label)
        except (YamlError, InputError):
            return
        if isinstance(doc, dict):
            self._values[label] = field_values(doc.values(), self.field)
