"""A small, pure evaluator for the bash subset that workflow ``run:`` steps use before
they hand over to a launcher: assignments and ``export`` (with quoting, ``$VAR``,
``${VAR…}`` parameter operators and ``$(( ))`` arithmetic), ``if [ … ]; then … fi``
with string tests, and the first command that runs a script (the launcher).

It never executes anything.  Constructs outside the subset are reported as notes
and skipped, so a caller can tell a complete evaluation from a partial one.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

MAX_SCRIPT = 256 * 1024


@dataclass
class RunEvaluation:
    """What a ``run:`` script does up to (and including) the command that runs a script."""

    exports: dict[str, str] = field(default_factory=dict)  # exported in this step
    variables: dict[str, str] = field(default_factory=dict)  # every variable as set
    command: list[str] | None = None  # argv of the first script-running command
    notes: list[str] = field(default_factory=list)  # what was not evaluated


class _Unsupported(ValueError):
    pass


# --------------------------------------------------------------------------- words

def _find_close(s: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one opened just before ``i``."""
    depth, q = 1, None
    while i < len(s):
        c = s[i]
        if q:
            if c == "\\" and q == '"':
                i += 2
                continue
            if c == q:
                q = None
        elif c in "'\"":
            q = c
        elif s.startswith(open_, i):
            depth += 1
            i += len(open_) - 1
        elif s.startswith(close, i):
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise _Unsupported(f"unbalanced {open_!r}")


def _glob_re(pat: str) -> str:
    return fnmatch.translate(pat)[4:-3]  # strip (?s: … )\Z


def _param(body: str, env: Mapping[str, str]) -> str:
    if body.startswith("#") and re.fullmatch(r"#[A-Za-z_][A-Za-z0-9_]*", body):
        return str(len(env.get(body[1:], "")))
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", body)
    if m is None:
        raise _Unsupported(f"${{{body}}}")
    name, op = m.group(0), body[m.end():]
    val = env.get(name)
    if op == "":
        return val or ""
    for sym in (":-", "-", ":=", "=", ":+", "+"):
        if op.startswith(sym):
            word = _expand(op[len(sym):], env)
            unset = val is None or (sym.startswith(":") and val == "")
            if sym in (":-", "-", ":=", "="):
                return word if unset else (val or "")
            return "" if unset else word
    if op.startswith(("%%", "%", "##", "#")):
        return _strip_pattern(op, val or "", env)
    m3 = re.fullmatch(r":\s*(-?\d+)(?::\s*(-?\d+))?", op)
    if m3:
        return _substring(val or "", int(m3.group(1)),
                          None if m3.group(2) is None else int(m3.group(2)))
    raise _Unsupported(f"${{{body}}}")


def _strip_pattern(op: str, v: str, env: Mapping[str, str]) -> str:
    """``${v#pat}``, ``${v##pat}``, ``${v%pat}``, ``${v%%pat}``."""
    sym = op[:2] if op[:2] in ("%%", "##") else op[:1]
    rx = re.compile(f"(?s){_glob_re(_expand(op[len(sym):], env))}")
    n = len(v)
    if sym in ("#", "##"):  # remove a matching prefix (shortest / longest)
        cuts = range(n + 1) if sym == "#" else range(n, -1, -1)
        return next((v[c:] for c in cuts if rx.fullmatch(v[:c])), v)
    cuts = range(n, -1, -1) if sym == "%" else range(n + 1)  # suffix
    return next((v[:c] for c in cuts if rx.fullmatch(v[c:])), v)


def _substring(v: str, off: int, ln: int | None) -> str:
    """``${v:off}`` / ``${v:off:len}`` (negative values count from the end)."""
    start = off if off >= 0 else max(0, len(v) + off)
    if ln is None:
        return v[start:]
    return v[start:start + ln] if ln >= 0 else v[start:len(v) + ln]


def _arith(expr: str, env: Mapping[str, str]) -> str:
    text = _expand(expr, env)

    def var(m: re.Match[str]) -> str:
        v = env.get(m.group(0), "0") or "0"
        if not re.fullmatch(r"-?\d+", v.strip()):
            raise _Unsupported(f"$(( {expr} )): {m.group(0)}={v!r} is not an integer")
        return v.strip()

    text = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", var, text)
    toks = re.findall(r"\d+|[-+*/%()]|\S", text)
    pos = 0

    def atom() -> int:
        nonlocal pos
        if pos >= len(toks):
            raise _Unsupported(f"$(( {expr} ))")
        t = toks[pos]
        pos += 1
        if t == "(":
            v = add()
            if pos >= len(toks) or toks[pos] != ")":
                raise _Unsupported(f"$(( {expr} ))")
            pos += 1
            return v
        if t in "+-":
            v = atom()
            return v if t == "+" else -v
        if not t.isdigit():
            raise _Unsupported(f"$(( {expr} ))")
        return int(t)

    def mul() -> int:
        nonlocal pos
        v = atom()
        while pos < len(toks) and toks[pos] in ("*", "/", "%"):
            op = toks[pos]
            pos += 1
            r = atom()
            if op != "*" and r == 0:
                raise _Unsupported(f"$(( {expr} )): division by zero")
            q = abs(v) // abs(r) * (1 if (v >= 0) == (r >= 0) else -1) if op != "*" else 0
            v = v * r if op == "*" else (q if op == "/" else v - q * r)
        return v

    def add() -> int:
        nonlocal pos
        v = mul()
        while pos < len(toks) and toks[pos] in ("+", "-"):
            op = toks[pos]
            pos += 1
            v = v + mul() if op == "+" else v - mul()
        return v

    value = add()
    if pos != len(toks):
        raise _Unsupported(f"$(( {expr} ))")
    return str(value)


def _dollar(s: str, i: int, env: Mapping[str, str]) -> tuple[str, int]:
    """Expand the ``$…`` starting at ``s[i]``; return (text, next index)."""
    if s.startswith("$((", i):
        j = _find_close(s, i + 3, "((", "))")
        return _arith(s[i + 3:j], env), j + 2
    if s.startswith("$(", i) or s.startswith("`", i):
        raise _Unsupported("command substitution")
    if s.startswith("${", i):
        j = _find_close(s, i + 2, "{", "}")
        return _param(s[i + 2:j], env), j + 1
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9?#$!@*-]", s[i + 1:])
    if m is None:
        return "$", i + 1
    name = m.group(0)
    if not re.match(r"[A-Za-z_]", name):
        raise _Unsupported(f"${name}")
    return env.get(name, ""), i + 1 + len(name)


def _expand(s: str, env: Mapping[str, str]) -> str:
    """Expand one word's text (quotes removed, no splitting)."""
    return "".join(p for p, _ in _expand_parts(s, env))


def _expand_parts(s: str, env: Mapping[str, str]) -> list[tuple[str, bool]]:
    """(text, quoted) pieces of a word, in order."""
    out: list[tuple[str, bool]] = []
    i = 0
    buf: list[str] = []

    def flush(quoted: bool) -> None:
        if buf:
            out.append(("".join(buf), quoted))
            buf.clear()

    while i < len(s):
        c = s[i]
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                raise _Unsupported("unterminated quote")
            flush(False)
            out.append((s[i + 1:j], True))
            i = j + 1
        elif c == '"':
            flush(False)
            j = i + 1
            while j < len(s) and s[j] != '"':
                if s[j] == "\\" and j + 1 < len(s) and s[j + 1] in '"\\$`':
                    buf.append(s[j + 1])
                    j += 2
                elif s[j] in "$`":
                    text, j = _dollar(s, j, env)
                    buf.append(text)
                else:
                    buf.append(s[j])
                    j += 1
            if j >= len(s):
                raise _Unsupported("unterminated quote")
            flush(True)
            out.append(("", True))
            i = j + 1
        elif c == "\\" and i + 1 < len(s):
            buf.append(s[i + 1])
            i += 2
        elif c in "$`":
            flush(False)
            text, i = _dollar(s, i, env)
            out.append((text, False))
        else:
            buf.append(c)
            i += 1
    flush(False)
    return out


def _substitution_end(line: str, i: int) -> int:
    """The end of the ``$((…))``, ``${…}`` or ``$(…)`` starting at ``i``."""
    op = "((" if line.startswith("$((", i) else ("{" if line[i + 1] == "{" else "(")
    cl = "))" if op == "((" else ("}" if op == "{" else ")")
    return _find_close(line, i + 1 + len(op), op, cl) + len(cl)


def _quoted(line: str, i: int, q: str, cur: list[str]) -> tuple[int, str | None]:
    """One character inside quote ``q`` (a backslash escape inside double quotes takes
    two): the next index and the quote still open (None when this one closed it)."""
    c = line[i]
    cur.append(c)
    if c == "\\" and q == '"' and i + 1 < len(line):
        cur.append(line[i + 1])
        return i + 2, q
    return i + 1, (None if c == q else q)


def _split_words(line: str) -> list[str]:
    """Shell words of one simple command (quotes kept, operators split off)."""
    words: list[str] = []
    i, cur, q = 0, [], None
    while i < len(line):
        c = line[i]
        if q:
            i, q = _quoted(line, i, q, cur)
            continue
        if c in "'\"":
            q = c
            cur.append(c)
        elif c == "$" and line.startswith(("$((", "${", "$("), i):
            j = _substitution_end(line, i)
            cur.append(line[i:j])
            i = j
            continue
        elif c == "\\" and i + 1 < len(line):
            cur.append(line[i:i + 2])
            i += 2
            continue
        elif c == "#" and not cur:
            break
        elif c.isspace() or c in ";&|<>":
            if cur:
                words.append("".join(cur))
                cur = []
            if not c.isspace():
                op = line[i:i + 2] if line[i:i + 2] in (">>", "&&", "||", "2>", ";;") else c
                words.append(op)
                i += len(op)
                continue
        else:
            cur.append(c)
        i += 1
    if q:
        raise _Unsupported("unterminated quote")
    if cur:
        words.append("".join(cur))
    return words


def _fields(word: str, env: Mapping[str, str]) -> list[str]:
    """One word after expansion and field splitting of its unquoted parts."""
    fields: list[str] = []
    cur: list[str] = []
    have = False
    for text, quoted in _expand_parts(word, env):
        if quoted:
            cur.append(text)
            have = True
            continue
        parts = re.split(r"[ \t\n]+", text)
        for k, p in enumerate(parts):
            if k > 0 and (cur or have):
                fields.append("".join(cur))
                cur, have = [], False
            if p:
                cur.append(p)
                have = True
    if cur or have:
        fields.append("".join(cur))
    return fields


# --------------------------------------------------------------------------- statements

@lru_cache(maxsize=256)
def _statements_cached(script: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(s) for s in _statements(script))


@lru_cache(maxsize=8192)
def _line_words(line: str) -> tuple[str, ...]:
    return tuple(_split_words(line))


def _statements(script: str) -> list[list[str]]:
    """Shell words per simple statement (newline / ``;`` separated)."""
    out: list[list[str]] = []
    lines = script.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        while line.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i]
        i += 1
        words = _line_words(line)
        cur: list[str] = []
        for w in words:
            if w == ";":
                if cur:
                    out.append(cur)
                cur = []
            else:
                cur.append(w)
        if cur:
            out.append(cur)
    return out


_TEST_OPS = {"=", "==", "!="}


def _test(words: list[str], env: Mapping[str, str]) -> bool:
    inner = words[1:-1] if words[0] in ("[", "[[") else words
    neg = False
    if inner and inner[0] == "!":
        neg, inner = True, inner[1:]
    vals = [_expand(w, env) for w in inner]
    if len(vals) == 2 and inner[0] in ("-n", "-z"):
        r = (vals[1] != "") if inner[0] == "-n" else (vals[1] == "")
    elif len(vals) == 3 and inner[1] in _TEST_OPS:
        same = vals[0] == vals[2] if inner[0].startswith('"') or inner[1] == "=" or \
            not any(ch in vals[2] for ch in "*?[") else fnmatch.fnmatchcase(vals[0], vals[2])
        r = same if inner[1] in ("=", "==") else not same
    elif len(vals) == 1:
        r = vals[0] != ""
    else:
        raise _Unsupported("test " + " ".join(inner))
    return r != neg


def _runs_script(argv: list[str]) -> bool:
    if not argv:
        return False
    prog = argv[0].rsplit("/", 1)[-1]
    if prog in ("bash", "sh") and len(argv) > 1 and not argv[1].startswith("-"):
        return argv[1].endswith(".sh")
    return argv[0].endswith(".sh")


def evaluate_run(script: str, env: Mapping[str, str]) -> RunEvaluation:
    """Evaluate ``script`` with ``env`` up to the first command that runs a script."""
    if len(script) > MAX_SCRIPT:
        return RunEvaluation(notes=["run script too long; not evaluated"])
    res = RunEvaluation(variables=dict(env))
    try:
        stmts = [list(st) for st in _statements_cached(script)]
    except _Unsupported as exc:
        res.notes.append(f"not evaluated: {exc}")
        return res
    # a stack of (taking, any_branch_taken) for if/elif/else/fi
    stack: list[tuple[bool, bool]] = []
    for words in stmts:
        try:
            if _control(words, stack, res):
                return res
        except _Unsupported as exc:
            res.notes.append(f"not evaluated: {' '.join(words)[:120]} ({exc})")
        except IndexError:
            res.notes.append(f"not evaluated: {' '.join(words)[:120]}")
            stack.clear()
    return res


def _control(words: list[str], stack: list[tuple[bool, bool]], res: RunEvaluation) -> bool:
    """One statement with its ``if``/``then``/``else``/``fi`` keywords; True at the launch."""
    while words:
        head = words[0]
        if head in ("if", "elif"):
            cond = [w for w in words[1:] if w != "then"]
            if head == "elif":
                _, done = stack.pop()
                outer = all(t for t, _ in stack)
                take = outer and not done and _test(cond, res.variables)
                stack.append((take, done or take))
            else:
                take = all(t for t, _ in stack) and _test(cond, res.variables)
                stack.append((take, take))
            return False
        if head == "then":
            words = words[1:]
            continue
        if head == "else":
            _, done = stack.pop()
            stack.append((not done and all(t for t, _ in stack), True))
            words = words[1:]
            continue
        if head == "fi":
            stack.pop()
            words = words[1:]
            continue
        if not all(t for t, _ in stack):
            return False
        return _statement(words, res)
    return False


_NAME_EQ = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def _set(res: RunEvaluation, name: str, value: str, *, export: bool) -> None:
    res.variables[name] = value
    if export or name in res.exports:
        res.exports[name] = value


def _export(words: list[str], res: RunEvaluation) -> None:
    """``export`` arguments: NAME=word (one expansion, no splitting) or expanded words
    (NAME=value as they are, NAME of a set variable)."""
    for w in words:
        if w.startswith("-"):
            continue
        m = _NAME_EQ.match(w)
        if m is not None:
            _set(res, m.group(1), _expand(m.group(2), res.variables), export=True)
            continue
        for f in _fields(w, res.variables):
            mf = _NAME_EQ.match(f)
            if mf is not None:
                _set(res, mf.group(1), mf.group(2), export=True)
            elif f in res.variables:
                res.exports[f] = res.variables[f]


def _statement(words: list[str], res: RunEvaluation) -> bool:
    """Evaluate one simple statement; True when it is the script-running command."""
    if any(w in ("|", "&&", "||", "&") for w in words):
        words = words[:next(i for i, w in enumerate(words) if w in ("|", "&&", "||", "&"))]
    redirect = next((i for i, w in enumerate(words) if w in (">", ">>", "<", "2>")), None)
    if redirect is not None:
        words = words[:redirect]
    if not words:
        return False
    head = words[0]
    if head == "export":
        _export(words[1:], res)
        return False
    if (m := _NAME_EQ.match(head)) is not None:
        if len(words) == 1:
            _set(res, m.group(1), _expand(m.group(2), res.variables), export=False)
            return False
        raise _Unsupported("command with a prefix assignment")
    if head in ("set", "echo", "printf", "true", ":", "shopt", "unset", "cd", "exit"):
        if head == "unset":
            for w in words[1:]:
                res.variables.pop(w, None)
                res.exports.pop(w, None)
        return False
    argv = [f for w in words for f in _fields(w, res.variables)]
    if _runs_script(argv):
        res.command = argv
        return True
    raise _Unsupported(f"command {head!r}")


def test_words(condition: str, env: Mapping[str, str]) -> bool:
    """Evaluate one ``[ … ]`` / ``[[ … ]]`` test (ValueError when outside the subset)."""
    words = list(_line_words(condition.strip()))
    if not words or words[0] not in ("[", "[[") or words[-1] not in ("]", "]]"):
        raise _Unsupported(f"not a simple test: {condition!r}")
    if any(w in ("&&", "||", "-a", "-o", "(", ")") for w in words):
        raise _Unsupported(f"compound test: {condition!r}")
    return _test(words, env)


def expand_param(body: str, env: Mapping[str, str]) -> str:
    """``${body}`` with ``env`` (ValueError when outside the subset)."""
    return _param(body, env)
