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

class _Parser:
    def __init__(self, toks: tuple[_Tok, ...], ctx: Mapping[str, Any]) -> None:
        self.toks, self.i, self.ctx, self.depth = toks, 0, ctx, 0

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

    def parse(self) -> Any:
        v = self.or_()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek().text!r}")  # type: ignore[union-attr]
        return v

    def or_(self) -> Any:
        v = self.and_()
        while self.peek("||"):
            self.take()
            rhs = self.and_()
            v = v if truthy(v) else rhs
        return v

    def and_(self) -> Any:
        v = self.eq()
        while self.peek("&&"):
            self.take()
            rhs = self.eq()
            v = rhs if truthy(v) else v
        return v

    def eq(self) -> Any:
        v = self.cmp()
        while (t := self.peek()) is not None and t.text in ("==", "!=") and t.kind == "op":
            self.take()
            rhs = self.cmp()
            v = _equal(v, rhs) if t.text == "==" else not _equal(v, rhs)
        return v

    def cmp(self) -> Any:
        v = self.unary()
        while (t := self.peek()) is not None and t.kind == "op" and t.text in ("<", "<=", ">",
                                                                                ">="):
            self.take()
            rhs = self.unary()
            c = _compare(v, rhs)
            v = c is not None and {"<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[t.text]
        return v

    def unary(self) -> Any:
        if self.peek("!"):
            self.take()
            return not truthy(self.unary())
        return self.postfix()

    def postfix(self) -> Any:
        v = self.primary()
        while True:
            if self.peek("."):
                self.take()
                t = self.take()
                if t.kind == "op" and t.text == "*":
                    v = _Filtered(v.values() if isinstance(v, dict) else
                                  (v if isinstance(v, list) else []))
                    continue
                if t.kind != "name":
                    raise ExpressionError(f"expected a property name after '.', got {t.text!r}")
                v = _index(v, t.text)
            elif self.peek("["):
                self.take()
                key = self.or_()
                self.take("]")
                v = _index(v, key)
            else:
                return v

    def primary(self) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError("expression nested too deeply")
        try:
            t = self.take()
            if t.kind == "num":
                return float(int(t.text, 16)) if t.text.lower().startswith("0x") \
                    else float(t.text)
            if t.kind == "str":
                return t.text[1:-1].replace("''", "'")
            if t.kind == "op" and t.text == "(":
                v = self.or_()
                self.take(")")
                return v
            if t.kind != "name":
                raise ExpressionError(f"unexpected {t.text!r}")
            low = t.text.lower()
            if low in ("true", "false"):
                return low == "true"
            if low == "null":
                return None
            if self.peek("("):
                return self.call(low)
            return self.ctx.get(t.text, self.ctx.get(low))
        finally:
            self.depth -= 1

    def call(self, name: str) -> Any:
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise ExpressionError(f"unknown function {name}()")
        self.take("(")
        args: list[Any] = []
        if not self.peek(")"):
            args.append(self.or_())
            while self.peek(","):
                self.take()
                args.append(self.or_())
        self.take(")")
        try:
            return fn(*args)
        except TypeError:
            raise ExpressionError(f"{name}() called with {len(args)} argument(s)") from None


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


def evaluate(expression: str, context: Mapping[str, Any]) -> Any:
    """The value of one expression (the text between ``${{`` and ``}}``)."""
    return _Parser(_tokens(expression), context).parse()


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
