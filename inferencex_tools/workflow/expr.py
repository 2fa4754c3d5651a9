"""GitHub Actions expressions (``${{ … }}``), evaluated the way the Actions runner does.

Pure and bounded: a hand-written tokenizer and precedence-climbing parser over the
documented grammar (literals, context access with ``.`` and ``[…]``, ``!``, comparison,
``==``/``!=``, ``&&``/``||``, parentheses) and the documented functions (``contains``,
``startsWith``, ``endsWith``, ``format``, ``join``, ``toJSON``, ``fromJSON`` and the
status functions).  Semantics follow the Actions documentation: loose equality with
number coercion, case-insensitive string comparison, ``&&``/``||`` returning an operand,
falsy ``null``/``false``/``0``/``''``/``NaN``, and missing properties reading as ``null``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MAX_EXPRESSION = 64 * 1024
MAX_DEPTH = 64


class ExpressionError(ValueError):
    """An expression the evaluator cannot parse or evaluate."""


class NotScalar(ExpressionError):
    """A lone ``${{ … }}`` giving an object or an array where the workflow takes a scalar
    (an input, an ``env`` value): the runner does not print it, it refuses the template
    ("A mapping was not expected", "A sequence was not expected")."""


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>0x[0-9a-fA-F]+|-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<str>'(?:[^']|'')*')
  | (?P<op>&&|\|\||==|!=|<=|>=|[<>!()\[\].,*])
  | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
""", re.VERBOSE)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str


@lru_cache(maxsize=4096)
def _tokens(src: str) -> tuple[_Tok, ...]:
    if len(src) > MAX_EXPRESSION:
        raise ExpressionError("expression too long")
    out: list[_Tok] = []
    pos = 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            raise ExpressionError(f"unexpected character {src[pos]!r} in {src!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(_Tok(kind, m.group(0)))
    return tuple(out)


# --------------------------------------------------------------------------- values

def truthy(v: Any) -> bool:
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return not (v == 0 or (isinstance(v, float) and math.isnan(v)))
    if isinstance(v, str):
        return v != ""
    return True


def _to_number(v: Any) -> float:
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        if s == "":
            return 0.0
        try:
            return float(int(s, 16)) if s.lower().startswith("0x") else float(s)
        except ValueError:
            return math.nan
    return math.nan


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a is b
    if type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                              and not isinstance(a, bool) and not isinstance(b, bool)):
        if isinstance(a, str):
            return a.lower() == str(b).lower()
        if a is None:
            return True
        return bool(a == b)
    return _to_number(a) == _to_number(b)


def _compare(a: Any, b: Any) -> float | None:
    """-1/0/1 like the runner (strings case-insensitively), None when incomparable."""
    if isinstance(a, str) and isinstance(b, str):
        x, y = a.lower(), b.lower()
        return (x > y) - (x < y)
    na, nb = _to_number(a), _to_number(b)
    if math.isnan(na) or math.isnan(nb):
        return None
    return (na > nb) - (na < nb)


def to_string(v: Any) -> str:
    """How a value is interpolated into a string (``${{ }}`` in a scalar)."""
    if v is None:
        return ""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dict):
        return "Object"
    if isinstance(v, list):
        return "Array"
    return str(v)


def to_json(v: Any) -> str:
    return json.dumps(v, indent=2, ensure_ascii=False)


# --------------------------------------------------------------------------- functions

def _fmt(template: Any, *args: Any) -> str:
    s, out, i = to_string(template), [], 0
    while i < len(s):
        c = s[i]
        if c == "{" and s.startswith("{{", i):
            out.append("{")
            i += 2
        elif c == "}" and s.startswith("}}", i):
            out.append("}")
            i += 2
        elif c == "{":
            j = s.find("}", i)
            if j < 0 or not s[i + 1:j].isdigit():
                raise ExpressionError(f"format: bad placeholder in {s!r}")
            n = int(s[i + 1:j])
            if n >= len(args):
                raise ExpressionError(f"format: no argument {n} for {s!r}")
            out.append(to_string(args[n]))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _contains(hay: Any, needle: Any) -> bool:
    if isinstance(hay, list):
        return any(_equal(x, needle) for x in hay)
    return to_string(needle).lower() in to_string(hay).lower()


def _join(items: Any, sep: Any = ",") -> str:
    if isinstance(items, list):
        return to_string(sep).join(to_string(x) for x in items)
    return to_string(items)


def _from_json(s: Any) -> Any:
    try:
        return json.loads(to_string(s))
    except ValueError as exc:
        raise ExpressionError(f"fromJSON: {exc}") from None


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "contains": _contains,
    "startswith": lambda a, b: to_string(a).lower().startswith(to_string(b).lower()),
    "endswith": lambda a, b: to_string(a).lower().endswith(to_string(b).lower()),
    "format": _fmt,
    "join": _join,
    "tojson": to_json,
    "fromjson": _from_json,
    "success": lambda: True,
    "always": lambda: True,
    "cancelled": lambda: False,
    "failure": lambda: False,
    "hashfiles": lambda *a: "",
}


# --------------------------------------------------------------------------- parser

Node = Callable[[Mapping[str, Any]], Any]


def _const(v: Any) -> Node:
    return lambda ctx: v


def _or(a: Node, b: Node) -> Node:
    def f(ctx: Mapping[str, Any]) -> Any:
        v, rhs = a(ctx), b(ctx)
        return v if truthy(v) else rhs
    return f


def _and(a: Node, b: Node) -> Node:
    def f(ctx: Mapping[str, Any]) -> Any:
        v, rhs = a(ctx), b(ctx)
        return rhs if truthy(v) else v
    return f


def _eq(a: Node, b: Node, negate: bool) -> Node:
    return lambda ctx: _equal(a(ctx), b(ctx)) != negate


_ORDER: dict[str, Callable[[float], bool]] = {
    "<": lambda c: c < 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0, ">=": lambda c: c >= 0}


def _cmp(a: Node, b: Node, op: str) -> Node:
    test = _ORDER[op]

    def f(ctx: Mapping[str, Any]) -> Any:
        c = _compare(a(ctx), b(ctx))
        return c is not None and test(c)
    return f


def _filter(a: Node) -> Node:
    def f(ctx: Mapping[str, Any]) -> Any:
        v = a(ctx)
        return _Filtered(v.values() if isinstance(v, dict) else
                         (v if isinstance(v, list) else []))
    return f


def _lookup(name: str) -> Node:
    low = name.lower()
    return lambda ctx: ctx.get(name, ctx.get(low))


def _call(name: str, fn: Callable[..., Any], args: list[Node]) -> Node:
    def f(ctx: Mapping[str, Any]) -> Any:
        vals = [a(ctx) for a in args]
        try:
            return fn(*vals)
        except TypeError:
            raise ExpressionError(f"{name}() called with {len(vals)} argument(s)") from None
    return f


class _Parser:
    """Recursive descent over the tokens, compiling to closures over the context."""

    def __init__(self, toks: tuple[_Tok, ...]) -> None:
        self.toks, self.i, self.depth = toks, 0, 0

    def peek(self, text: str | None = None) -> _Tok | None:
        t = self.toks[self.i] if self.i < len(self.toks) else None
        if text is not None and (t is None or t.text != text or t.kind == "str"):
            return None
        return t

    def take(self, text: str | None = None) -> _Tok:
        t = self.peek(text) if text is not None else self.peek()
        if t is None:
            raise ExpressionError(f"expected {text or 'a value'}")
        self.i += 1
        return t

    def parse(self) -> Node:
        v = self.or_()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek().text!r}")  # type: ignore[union-attr]
        return v

    def or_(self) -> Node:
        v = self.and_()
        while self.peek("||"):
            self.take()
            v = _or(v, self.and_())
        return v

    def and_(self) -> Node:
        v = self.eq()
        while self.peek("&&"):
            self.take()
            v = _and(v, self.eq())
        return v

    def eq(self) -> Node:
        v = self.cmp()
        while (t := self.peek()) is not None and t.text in ("==", "!=") and t.kind == "op":
            self.take()
            v = _eq(v, self.cmp(), t.text == "!=")
        return v

    def cmp(self) -> Node:
        v = self.unary()
        while (t := self.peek()) is not None and t.kind == "op" and t.text in _ORDER:
            self.take()
            v = _cmp(v, self.unary(), t.text)
        return v

    def unary(self) -> Node:
        if self.peek("!"):
            self.take()
            inner = self.unary()
            return lambda ctx: not truthy(inner(ctx))
        return self.postfix()

    def postfix(self) -> Node:
        v = self.primary()
        while True:
            if self.peek("."):
                self.take()
                t = self.take()
                if t.kind == "op" and t.text == "*":
                    v = _filter(v)
                    continue
                if t.kind != "name":
                    raise ExpressionError(f"expected a property name after '.', got {t.text!r}")
                v = (lambda a, k: lambda ctx: _index(a(ctx), k))(v, t.text)
            elif self.peek("["):
                self.take()
                key = self.or_()
                self.take("]")
                v = (lambda a, k: lambda ctx: _index(a(ctx), k(ctx)))(v, key)
            else:
                return v

    def primary(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError("expression nested too deeply")
        try:
            t = self.take()
            if t.kind == "num":
                return _const(float(int(t.text, 16)) if t.text.lower().startswith("0x")
                              else float(t.text))
            if t.kind == "str":
                return _const(t.text[1:-1].replace("''", "'"))
            if t.kind == "op" and t.text == "(":
                v = self.or_()
                self.take(")")
                return v
            if t.kind != "name":
                raise ExpressionError(f"unexpected {t.text!r}")
            low = t.text.lower()
            if low in ("true", "false"):
                return _const(low == "true")
            if low == "null":
                return _const(None)
            if self.peek("("):
                return self.call(low)
            return _lookup(t.text)
        finally:
            self.depth -= 1

    def call(self, name: str) -> Node:
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise ExpressionError(f"unknown function {name}()")
        self.take("(")
        args: list[Node] = []
        if not self.peek(")"):
            args.append(self.or_())
            while self.peek(","):
                self.take()
                args.append(self.or_())
        self.take(")")
        return _call(name, fn, args)


class _Filtered(list[Any]):
    """The result of an object filter (``a.*``): further access maps over the items."""


def _index(v: Any, key: Any) -> Any:
    if isinstance(v, _Filtered):
        return _Filtered(x for x in (_index(i, key) for i in v) if x is not None)
    if isinstance(v, dict):
        if isinstance(key, str):
            if key in v:
                return v[key]
            low = key.lower()
            return next((x for k, x in v.items() if isinstance(k, str) and k.lower() == low),
                        None)
        return None
    if isinstance(v, list):
        n = _to_number(key)
        if not math.isnan(n) and n.is_integer() and 0 <= int(n) < len(v):
            return v[int(n)]
    return None


@lru_cache(maxsize=4096)
def compile_expression(expression: str) -> Node:
    """One expression compiled (cached by its text): call the result with a context."""
    return _Parser(_tokens(expression)).parse()


def evaluate(expression: str, context: Mapping[str, Any]) -> Any:
    """The value of one expression (the text between ``${{`` and ``}}``)."""
    return compile_expression(expression)(context)


_INTERP = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_LONE = re.compile(r"\$\{\{((?:(?!\}\}).)*)\}\}", re.DOTALL)


def interpolate(text: str, context: Mapping[str, Any]) -> str:
    """Every ``${{ … }}`` in ``text`` replaced by its string value."""
    return _INTERP.sub(lambda m: to_string(evaluate(m.group(1), context)), text)


def evaluate_value(value: Any, context: Mapping[str, Any]) -> Any:
    """A workflow scalar: a lone ``${{ … }}`` keeps its type, anything else is a string."""
    if not isinstance(value, str):
        return value
    m = _LONE.fullmatch(value.strip())
    if m is not None:
        return evaluate(m.group(1), context)
    return interpolate(value, context)


def evaluate_scalar(value: Any, context: Mapping[str, Any]) -> Any:
    """A workflow scalar where the runner takes only a scalar (a ``with:`` input, an
    ``env:`` value): as :func:`evaluate_value`, but a lone expression whose value is an
    object or an array raises :class:`NotScalar`.  Inside a longer string the same value
    reads "Object"/"Array" (:func:`to_string`), as the runner coerces it."""
    v = evaluate_value(value, context)
    if isinstance(v, (dict, list)):
        kind = "mapping" if isinstance(v, dict) else "sequence"
        raise NotScalar(f"a {kind} was not expected: {str(value).strip()} gives "
                        f"{'an object' if kind == 'mapping' else 'an array'}, and the "
                        "runner refuses the template (it prints no object into a string)")
    return v
