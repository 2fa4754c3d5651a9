"""A small, pure evaluator for the bash subset that workflow ``run:`` steps use before
they hand over to a launcher: assignments and ``export`` (with quoting, ``$VAR``,
``${VAR…}`` parameter operators and ``$(( ))`` arithmetic), ``if [ … ]; then … fi``
with string tests, and the first command that runs a script (the launcher).

The script is read through the one shell front end (:mod:`inferencex_tools.shellsyntax`);
this module only evaluates its syntax tree.  It never executes anything.  Constructs
outside the subset are reported as notes and skipped, so a caller can tell a complete
evaluation from a partial one.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inferencex_tools import shellsyntax as S

if TYPE_CHECKING:
    from tree_sitter import Node

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


def _value(n: Node, env: Mapping[str, str]) -> str:
    try:
        return S.value(n, env)
    except S.Unknown as exc:
        raise _Unsupported(_why(n, exc)) from None


def _fields(n: Node, env: Mapping[str, str]) -> list[str]:
    try:
        return S.fields(n, env)
    except S.Unknown as exc:
        raise _Unsupported(_why(n, exc)) from None


def _why(n: Node, exc: Exception) -> str:
    subs = [x for x in S.walk(n) if x.type in ("command_substitution", "process_substitution")]
    return "command substitution" if subs else str(exc)


# --------------------------------------------------------------------------- tests

def _test(n: Node, env: Mapping[str, str]) -> bool:
    """A ``[ … ]`` / ``[[ … ]]`` test: ``-n``/``-z``, ``=``/``==``/``!=`` (a pattern on the
    right of ``[[ == ]]`` unless quoted), a bare word, ``!``."""
    if n.type != "test_command":
        raise _Unsupported(f"not a simple test: {S.text(n)!r}")
    inner = [c for c in n.children if c.type not in ("[", "]", "[[", "]]")]
    if len(inner) != 1:
        raise _Unsupported(f"test {S.text(n)}")
    return _test_expr(inner[0], env)


def _test_expr(e: Node, env: Mapping[str, str]) -> bool:
    if e.type == "unary_expression":
        op, arg = e.children[0], e.children[-1]
        if S.text(op) == "!":
            return not _test_expr(arg, env)
        if S.text(op) in ("-n", "-z") and len(e.children) == 2:
            v = _value(arg, env)
            return (v != "") if S.text(op) == "-n" else (v == "")
        raise _Unsupported(f"test {S.text(e)}")
    if e.type == "binary_expression" and len(e.children) == 3:
        a, op, b = e.children
        o = S.text(op)
        if o not in ("=", "==", "!="):
            raise _Unsupported(f"compound test: {S.text(e)!r}")
        left, right = _value(a, env), _value(b, env)
        glob = b.type in ("word", "extglob_pattern", "concatenation") and o != "=" \
            and any(ch in right for ch in "*?[")
        same = fnmatch.fnmatchcase(left, right) if glob else left == right
        return same if o in ("=", "==") else not same
    if e.type in ("word", "string", "raw_string", "simple_expansion", "expansion",
                  "concatenation", "number"):
        return _value(e, env) != ""
    raise _Unsupported(f"compound test: {S.text(e)!r}")


# --------------------------------------------------------------------------- statements

def evaluate_run(script: str, env: Mapping[str, str]) -> RunEvaluation:
    """Evaluate ``script`` with ``env`` up to the first command that runs a script."""
    if len(script) > MAX_SCRIPT:
        return RunEvaluation(notes=["run script too long; not evaluated"])
    res = RunEvaluation(variables=dict(env))
    syn = S.parse(script)
    if not syn.ok:
        res.notes.append(f"not evaluated: {syn.problem}")
        return res
    _block(syn.root.named_children, res)
    return res


def _block(stmts: list[Node], res: RunEvaluation) -> bool:
    """Statements in order; True once the script-running command is found."""
    for st in stmts:
        if st.type == "comment":
            continue
        try:
            if _statement(st, res):
                return True
        except _Unsupported as exc:
            res.notes.append(f"not evaluated: {S.text(st)[:120]} ({exc})")
    return False


def _statement(st: Node, res: RunEvaluation) -> bool:
    """Evaluate one statement; True when it is (or holds) the script-running command."""
    t = st.type
    if t == "if_statement":
        return _if(st, res)
    if t in ("redirected_statement",):
        body = st.child_by_field_name("body") or st.named_children[0]
        return _statement(body, res)
    if t in ("list", "pipeline"):  # the first command only
        return _statement(st.named_children[0], res)
    if t == "variable_assignment":
        _assign(st, res, export=False)
        return False
    if t == "variable_assignments":
        for a in st.named_children:
            _assign(a, res, export=False)
        return False
    if t == "declaration_command":
        if S.text(st.children[0]) != "export":
            raise _Unsupported(f"command {S.text(st.children[0])!r}")
        _export(st.named_children, res)
        return False
    if t == "command":
        return _command(st, res)
    raise _Unsupported(t.replace("_", " "))


def _if(st: Node, res: RunEvaluation) -> bool:
    """``if``/``elif``/``else``: the first arm whose test holds."""
    arms: list[tuple[Node | None, list[Node]]] = []
    cond: Node | None = None
    body: list[Node] = []
    for c in st.children:
        if c.type in ("elif_clause", "else_clause"):
            break
        if c.type in ("if", "then", "fi", ";", "\n") or not c.is_named:
            continue
        if cond is None:
            cond = c
        else:
            body.append(c)
    arms.append((cond, body))
    for c in st.children:
        if c.type == "elif_clause":
            kids = [k for k in c.named_children if k.type != "comment"]
            arms.append((kids[0], kids[1:]))
        elif c.type == "else_clause":
            arms.append((None, [k for k in c.named_children if k.type != "comment"]))
    for test, stmts in arms:
        if test is None or _test(test, res.variables):
            return _block(stmts, res)
    return False


def _assign(a: Node, res: RunEvaluation, *, export: bool) -> None:
    name = a.child_by_field_name("name")
    val = a.child_by_field_name("value")
    if name is None or name.type != "variable_name":
        raise _Unsupported(S.text(a))
    if any(c.type == "+=" for c in a.children):
        raise _Unsupported(f"{S.text(a)}: +=")
    _set(res, S.text(name), "" if val is None else _value(val, res.variables), export=export)


def _set(res: RunEvaluation, name: str, value: str, *, export: bool) -> None:
    res.variables[name] = value
    if export or name in res.exports:
        res.exports[name] = value


def _export(args: list[Node], res: RunEvaluation) -> None:
    """``export`` arguments: NAME=word (one expansion, no splitting) or expanded words
    (NAME=value as they are, NAME of a set variable)."""
    for w in args:
        if w.type == "variable_assignment":
            _assign(w, res, export=True)
            continue
        for f in _fields(w, res.variables):
            if f.startswith("-"):
                continue
            name, eq, val = f.partition("=")
            if eq and name.isidentifier():
                _set(res, name, val, export=True)
            elif f in res.variables:
                res.exports[f] = res.variables[f]


_INERT = ("set", "echo", "printf", "true", ":", "shopt", "unset", "cd", "exit")


def _command(st: Node, res: RunEvaluation) -> bool:
    if any(c.type == "variable_assignment" for c in st.children):
        raise _Unsupported("command with a prefix assignment")
    words = S.command_words(st)
    if not words:
        return False
    head = S.text(words[0])
    if head in _INERT:
        if head == "unset":
            for w in words[1:]:
                res.variables.pop(S.text(w), None)
                res.exports.pop(S.text(w), None)
        return False
    argv = [f for w in words for f in _fields(w, res.variables)]
    if _runs_script(argv):
        res.command = argv
        return True
    raise _Unsupported(f"command {head!r}")


def _runs_script(argv: list[str]) -> bool:
    if not argv:
        return False
    prog = argv[0].rsplit("/", 1)[-1]
    if prog in ("bash", "sh") and len(argv) > 1 and not argv[1].startswith("-"):
        return argv[1].endswith(".sh")
    return argv[0].endswith(".sh")


def condition_holds(cond: Node, env: Mapping[str, str]) -> bool:
    """Evaluate one ``[ … ]`` / ``[[ … ]]`` test node (ValueError when outside the
    subset)."""
    return _test(cond, env)
