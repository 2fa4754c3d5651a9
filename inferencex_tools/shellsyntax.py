"""The one bash front end: syntax trees of shell text (tree-sitter-bash), and what the
judging code reads from them (functions, commands, words and their values).

Every part of ixtool that reads bash — the ``--base`` selection and the static reach of a
row (:mod:`inferencex_tools.policy.reach`), the trace-sharing analysis
(:mod:`inferencex_tools.policy.effective`), the function-call analysis
(:mod:`inferencex_tools.policy.shellcalls`) and the workflow ``run:`` steps
(:mod:`inferencex_tools.workflow.shell`) — reads it through this module.  Nothing else
splits shell text.

A parse is **refused** (:attr:`Syntax.problem`, the caller treats the file as reaching
everything) when the grammar reports an error or a missing token, or when the tree does
not account for an expansion bash would perform: a literal leaf (a word, the content of a
double-quoted string, an unquoted here-document's body) that still holds ``$(``, ``${``,
``$NAME`` or a backquote, or an escaped backquote inside a backquoted substitution (a
nested substitution).  Measured on the real tree (docs/architecture.md): tree-sitter-bash
parses 262 of its 263 shell files (``exec 3<>"/dev/tcp/…"`` in a subshell is the one it
cannot), and the expansion check found the two silent misparses seen in probing (a
``<<-`` body whose expansion follows a tab, nested escaped backquotes).

Parses are cached by the text's git blob hash.  Pure: text in, trees out.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Query

_CACHE_SIZE = 4096
_lock = threading.Lock()
_cache: OrderedDict[str, Syntax] = OrderedDict()
_by_text: OrderedDict[str, Syntax] = OrderedDict()  # a str's own hash: no re-hashing
_local = threading.local()


@cache
def _language() -> object:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


def _parser() -> Parser:
    p: Parser | None = getattr(_local, "parser", None)
    if p is None:
        import tree_sitter

        p = tree_sitter.Parser(_language())  # type: ignore[arg-type]
        _local.parser = p
    return p


@dataclass(frozen=True, eq=False)
class Syntax:
    """One parsed text: its bytes, the tree's root and, when the parse is refused, why
    (``line N: …``)."""

    source: bytes
    root: Node
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def blob_hash(data: bytes) -> str:
    h = hashlib.sha1(usedforsecurity=False)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def parse(text: str | bytes) -> Syntax:
    """The syntax of ``text`` (cached by its blob hash)."""
    if isinstance(text, str):
        with _lock:
            known = _by_text.get(text)
        if known is not None:
            return known
        syn = parse(text.encode("utf-8", "surrogateescape"))
        with _lock:
            _by_text[text] = syn
            while len(_by_text) > _CACHE_SIZE:
                _by_text.popitem(last=False)
        return syn
    data = text
    key = blob_hash(data)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    tree = _parser().parse(data)
    syn = Syntax(data, tree.root_node, _problem(tree.root_node, data))
    with _lock:
        _cache[key] = syn
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return syn


# ------------------------------------------------------------------ refusing a parse

# an expansion bash performs that a literal leaf must not hold
# (``$$``, ``$!``, ``$?``, ``$#``, ``$-`` hold numbers or flags: never a name or a path)
_INTRODUCER = re.compile(r"(?<!\\)(?:\\\\)*(\$[({A-Za-z_0-9@*]|`)")
_SPECIAL = re.compile(r"(?<!\\)\$[$!#?*@0-9-]")
_LITERAL_LEAVES = frozenset({"word", "string_content", "heredoc_content", "heredoc_body",
                             "extglob_pattern", "regex"})


def _problem(root: Node, data: bytes) -> str | None:
    if root.has_error:
        for n in walk(root):
            if n.is_error or n.is_missing:
                what = "missing " + n.type if n.is_missing else "cannot parse"
                return f"line {n.start_point[0] + 1}: {what}"
        return "cannot parse"
    for n in find(root, *_LITERAL_LEAVES, "command_substitution"):
        if n.type in _LITERAL_LEAVES and n.child_count == 0 and \
                _INTRODUCER.search(text(n)) and _expands(n):
            return (f"line {n.start_point[0] + 1}: an expansion the parser left in literal "
                    f"text ({text(n)[:40]!r})")
        if n.type == "command_substitution" and text(n).startswith("`") and \
                "\\`" in text(n):
            return f"line {n.start_point[0] + 1}: nested backquoted substitution"
    return None


def _expands(n: Node) -> bool:
    """Does bash expand ``$``/backquotes in the literal leaf ``n``?  Not in a quoted
    here-document's body, a ``[[ =~ ]]`` regex or a case pattern's quoted part."""
    p = n.parent
    while p is not None:
        if p.type == "heredoc_redirect":
            start = next((c for c in p.children if c.type == "heredoc_start"), None)
            return start is None or not re.search(r"['\"\\]", text(start))
        if p.type in ("raw_string", "ansi_c_string"):
            return False
        p = p.parent
    return n.type != "regex"


# ------------------------------------------------------------------ tree helpers

def text(n: Node) -> str:
    return (n.text or b"").decode("utf-8", "surrogateescape")


def walk(n: Node) -> Iterator[Node]:
    """``n`` and every node below it, in source order."""
    stack = [n]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(x.children))


@cache
def _query(types: tuple[str, ...]) -> Query:
    import tree_sitter

    pattern = "[" + " ".join(f"({t})" for t in types) + "] @n"
    return tree_sitter.Query(_language(), pattern)  # type: ignore[arg-type]


def find(n: Node, *types: str) -> list[Node]:
    """The nodes of the named ``types`` at ``n`` and below it, in source order (what
    :func:`walk` filtered by type gives, found by the parser's own query engine)."""
    import tree_sitter

    got = tree_sitter.QueryCursor(_query(tuple(sorted(types)))).captures(n).get("n", [])
    got.sort(key=lambda x: (x.start_byte, -x.end_byte))
    return got


def line_of(n: Node) -> int:
    return n.start_point[0] + 1


def function_name(n: Node) -> str:
    name = n.child_by_field_name("name")
    return text(name) if name is not None else ""


def function_body(n: Node) -> Node | None:
    return n.child_by_field_name("body")


def functions(syn: Syntax) -> dict[str, list[Node]]:
    """Every function definition (at any depth: bash defines it when the definition
    runs), by name: the bodies."""
    out: dict[str, list[Node]] = {}
    for n in find(syn.root, "function_definition"):
        body = function_body(n)
        if body is not None:
            out.setdefault(function_name(n), []).append(body)
    return out


def skeleton(n: Node, *, cut: Callable[[Node], bool] = lambda _: False) -> str:
    """The structure of ``n`` as text (node types and leaf text, no comments, no layout):
    two texts with the same skeleton are the same commands.  Subtrees for which ``cut``
    holds are left out (their place kept)."""
    out: list[str] = []
    stack: list[Node | str] = [n]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
            continue
        if x.type == "comment":
            continue
        if cut(x):
            out.append("(…)")
            continue
        if x.child_count == 0:
            out.append(repr(text(x)))
            continue
        out.append("(" + x.type)
        stack.append(")")
        stack.extend(reversed(x.children))
    return " ".join(out)


def without_comments(n: Node, *, cut: tuple[str, ...] = ()) -> str:
    """The source text of ``n`` with its comments blanked out, and each subtree of a
    type in ``cut`` replaced by the no-op command ``:`` (the text stays valid shell)."""
    src = n.text or b""
    base = n.start_byte
    holes: list[tuple[int, int, bytes]] = []
    end = -1  # the end of the last subtree cut: what lies inside it is gone already
    for c in find(n, "comment", *cut):
        if c.start_byte < end or c == n:
            continue
        if c.type == "comment":
            holes.append((c.start_byte - base, c.end_byte - base, b""))
        else:
            holes.append((c.start_byte - base, c.end_byte - base, b":"))
            end = c.end_byte
    if not holes:
        return src.decode("utf-8", "surrogateescape")
    out = bytearray(src)
    for a, b, fill in holes:
        out[a:b] = fill + re.sub(rb"[^\n]", b" ", bytes(out[a + len(fill):b]))
    return bytes(out).decode("utf-8", "surrogateescape")


def commands(n: Node, *, into_functions: bool = False) -> Iterator[Node]:
    """Every ``command`` node under ``n`` (in substitutions too), not inside function
    bodies unless ``into_functions``."""
    for x in _walk_cut(n, into_functions):
        if x.type == "command":
            yield x


def _walk_cut(n: Node, into_functions: bool) -> Iterator[Node]:
    stack = [n]
    while stack:
        x = stack.pop()
        yield x
        if x.type == "function_definition" and not into_functions and x is not n:
            continue
        stack.extend(reversed(x.children))


def command_words(cmd: Node) -> list[Node]:
    """The words of a ``command`` node in order: its name, then its arguments
    (prefix assignments and redirections left out)."""
    out: list[Node] = []
    for c in cmd.children:
        if c.type == "command_name":
            out.extend(c.children or [c])
        elif c.is_named and c.type not in ("variable_assignment", "file_redirect",
                                           "heredoc_redirect", "herestring_redirect",
                                           "comment"):
            out.append(c)
    return out


# ------------------------------------------------------------------ values of words

class Unknown(ValueError):
    """A word's value depends on something not known (a command's output, a variable
    the environment does not give)."""


_ESC_DQ = re.compile(r"\\([\\$`\"\n])")
_ESC_WORD = re.compile(r"\\(.)", re.DOTALL)


def value(n: Node, env: Mapping[str, str]) -> str:
    """The value of the word ``n`` (quotes removed, no splitting, no globbing) with the
    variables of ``env``; :class:`Unknown` when it cannot be known."""
    return "".join(p for p, _ in pieces(n, env))


def pieces(n: Node, env: Mapping[str, str]) -> list[tuple[str, bool]]:
    """(text, quoted) pieces of the word ``n``; :class:`Unknown` as for :func:`value`."""
    t = n.type
    if t in ("word", "number", "extglob_pattern", "regex"):
        if _SPECIAL.search(text(n)):
            raise Unknown(text(n))
        return [(_ESC_WORD.sub(r"\1", text(n)), False)]
    if t == "raw_string":
        return [(text(n)[1:-1], True)]
    if t == "string":
        out: list[tuple[str, bool]] = [("", True)]
        for c in n.named_children:
            out += [(s, True) for s, _ in pieces(c, env)]
        return out
    if t == "string_content":
        return [(_ESC_DQ.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text(n)),
                 True)]
    if t == "concatenation":
        return [p for c in n.children for p in pieces(c, env)]
    if t == "simple_expansion":
        return [(_variable(text(n)[1:], env), False)]
    if t == "expansion":
        return [(expansion(n, env), False)]
    if t == "arithmetic_expansion":
        inner = [c for c in n.named_children]
        if len(inner) != 1:
            raise Unknown(text(n))
        return [(str(arithmetic(inner[0], env)), False)]
    raise Unknown(text(n))


class Known(dict[str, str]):
    """An environment that holds every variable whose value is known: one it lacks is
    :class:`Unknown` (a plain mapping's missing variable is unset, empty)."""


def _variable(name: str, env: Mapping[str, str]) -> str:
    if name in env:
        return env[name]
    if re.fullmatch(r"[A-Za-z_]\w*", name) and not isinstance(env, Known):
        return ""
    raise Unknown("$" + name)


def fields(n: Node, env: Mapping[str, str]) -> list[str]:
    """The word ``n`` after expansion and field splitting of its unquoted parts."""
    out: list[str] = []
    cur: list[str] = []
    have = False
    for piece, quoted in pieces(n, env):
        if quoted or n.type in ("word", "number"):
            cur.append(piece)
            have = True
            continue
        for k, part in enumerate(re.split(r"[ \t\n]+", piece)):
            if k > 0 and (cur or have):
                out.append("".join(cur))
                cur, have = [], False
            if part:
                cur.append(part)
                have = True
    if cur or have:
        out.append("".join(cur))
    return out


_OPS = (":-", "-", ":=", "=", ":+", "+", ":?", "?", "%%", "%", "##", "#", "//", "/", ":")


def expansion(n: Node, env: Mapping[str, str]) -> str:
    """``${…}``: the parameter operators ``:-`` ``-`` ``:=`` ``=`` ``:+`` ``+`` ``#``
    ``##`` ``%`` ``%%`` ``:off:len`` and ``${#X}``; :class:`Unknown` otherwise."""
    kids = [c for c in n.children if c.type not in ("${", "}")]
    if len(kids) == 2 and kids[0].type == "#" and kids[1].type == "variable_name":
        return str(len(_variable(text(kids[1]), env)))
    if not kids or kids[0].type != "variable_name":
        raise Unknown(text(n))
    val = _lookup(n, text(kids[0]), env)
    if len(kids) == 1:
        return val or ""
    op, rest = text(kids[1]), kids[2:]
    if op == ":":
        nums = [arithmetic(c, env) for c in rest if c.type != ":"]
        return substring(val or "", nums[0], nums[1] if len(nums) > 1 else None) \
            if nums else (val or "")
    return _operate(n, op, val, "".join(value(c, env) for c in rest))


def _lookup(n: Node, name: str, env: Mapping[str, str]) -> str | None:
    """A variable's value (None: unset); :class:`Unknown` for a special parameter the
    environment lacks, or any variable a :class:`Known` environment lacks."""
    if name not in env and (isinstance(env, Known) or not re.fullmatch(r"[A-Za-z_]\w*",
                                                                       name)):
        raise Unknown(text(n))
    return env.get(name)


def _operate(n: Node, op: str, val: str | None, operand: str) -> str:
    if op in (":-", "-", ":=", "="):
        return operand if val is None or (op.startswith(":") and val == "") else val
    if op in (":+", "+"):
        return "" if val is None or (op.startswith(":") and val == "") else operand
    if op in ("%%", "%", "##", "#"):
        return strip_pattern(op, val or "", operand)
    raise Unknown(text(n))


def strip_pattern(op: str, v: str, pat: str) -> str:
    """``${v#pat}``, ``${v##pat}``, ``${v%pat}``, ``${v%%pat}``."""
    import fnmatch

    rx = re.compile(f"(?s){fnmatch.translate(pat)[4:-3]}")
    n = len(v)
    if op in ("#", "##"):  # remove a matching prefix (shortest / longest)
        cuts = range(n + 1) if op == "#" else range(n, -1, -1)
        return next((v[c:] for c in cuts if rx.fullmatch(v[:c])), v)
    cuts = range(n, -1, -1) if op == "%" else range(n + 1)  # suffix
    return next((v[:c] for c in cuts if rx.fullmatch(v[c:])), v)


def substring(v: str, off: int, ln: int | None) -> str:
    """``${v:off}`` / ``${v:off:len}`` (negative values count from the end)."""
    start = off if off >= 0 else max(0, len(v) + off)
    if ln is None:
        return v[start:]
    return v[start:start + ln] if ln >= 0 else v[start:len(v) + ln]


def arithmetic(n: Node, env: Mapping[str, str]) -> int:
    """An arithmetic expression's value (``+ - * / %``, unary ``-``/``+``, parentheses,
    numbers and variables holding integers); :class:`Unknown` otherwise."""
    t = n.type
    if t == "number":
        return int(text(n), 10) if re.fullmatch(r"-?\d+", text(n)) else _bad(n)
    if t in ("variable_name", "word", "simple_expansion", "expansion"):
        return _integer(n, env)
    if t == "parenthesized_expression":
        return arithmetic(n.named_children[0], env)
    if t == "unary_expression" and n.child_count == 2:
        u = arithmetic(n.children[1], env)
        return -u if text(n.children[0]) == "-" else u if text(n.children[0]) == "+" else \
            _bad(n)
    if t == "binary_expression" and n.child_count == 3:
        a, op, b = n.children
        return _binary(n, text(op), arithmetic(a, env), arithmetic(b, env))
    return _bad(n)


def _integer(n: Node, env: Mapping[str, str]) -> int:
    """A variable (or a word naming one) holding an integer."""
    bare = n.type == "variable_name" or (n.type == "word" and
                                         re.fullmatch(r"[A-Za-z_]\w*", text(n)) is not None)
    v = (env.get(text(n), "0") if bare else value(n, env)) or "0"
    if not re.fullmatch(r"\s*-?\d+\s*", v):
        raise Unknown(f"{text(n)}={v!r} is not an integer")
    return int(v)


def _binary(n: Node, o: str, x: int, y: int) -> int:
    if o in ("/", "%") and y == 0:
        raise Unknown(f"{text(n)}: division by zero")
    q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1) if o in ("/", "%") else 0
    ops = {"+": x + y, "-": x - y, "*": x * y, "/": q, "%": x - q * y}
    return ops[o] if o in ops else _bad(n)


def _bad(n: Node) -> int:
    raise Unknown(text(n))


UNKNOWN = "\x00"  # what :func:`pattern` puts for a part not known when asked to mark it


def pattern(n: Node, env: Mapping[str, str], *, unknown: str = "*") -> str:
    """The word ``n`` as a glob pattern of the strings it can be: literal parts kept
    (unquoted ``*?[`` stay glob characters, quoted ones are escaped), a part whose value
    is not known becomes ``*`` (``"${0%.sh}.al"`` → ``*.al`` without ``$0``; pass a
    :class:`Known` environment to make every variable it lacks unknown)."""
    try:
        return "".join(_glob_piece(p, q) for p, q in pieces(n, env))
    except Unknown:
        pass
    if n.type in ("concatenation", "string"):
        kids = n.children if n.type == "concatenation" else n.named_children
        out = "".join(pattern(c, env, unknown=unknown) for c in kids)
        return re.sub(re.escape(unknown) + "+", unknown, out)
    return unknown


def _glob_piece(p: str, quoted: bool) -> str:
    return _escape(p) if quoted else p


def _escape(p: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", p)
