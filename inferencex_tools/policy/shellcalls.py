"""Can shell text call a function whose name it never spells?

The ``--base`` selection skips a row when a change edits only bodies of functions that
the text the row can run never names.  That holds only while every function call spells
its name: a command word built at run time (``"${f}al"``, ``$a$b``, ``${!ref}``,
``$(printf …)``, ``fo''o``, ``fo{o,}``, a glob, a positional ``"$1"``), ``eval``, a
``trap`` or ``bash -c`` string that does so, the function table (``compgen``,
``declare -F``), aliases, and shells fed text from a pipe or a here-string defeat it.

The text is read through the one shell front end (:mod:`inferencex_tools.shellsyntax`):
every simple command of it (in substitutions, and here-documents a shell reads, too) and
its command word (:func:`calls`); a word with a literal character no function name has
(``/``, ``.``) is never dynamic.  A pure ``"$X"``/``"${X[@]}"`` command word is dynamic
when an assignment to ``X`` anywhere in the text (:func:`reaches_every_function` takes
all the text one shell runs) can build a name: an expansion joined to literals, a command
substitution, ``+=``, ``read``/``mapfile``/``printf -v``/``getopts``, a ``for`` list,
``declare``/``local``/``export``, ``${X:=…}``, or the shell itself (``$_``, ``REPLY``,
``BASH_REMATCH``, the positional parameters …); copies ``X=$Y`` are followed.  A variable
assigned only literals (spelt) or only from the job's environment (its values count as
spelt) stays selective.  Run unquoted (``$X``), the command is the value's first field:
one with a path character, a spelt literal, or one variable's own first field
(``X="$CLI profile …"``, ``${V:-default}``, text appended after a blank) builds no
name; ``read … <<< "$V"`` split at non-name characters copies ``V``.  A child shell fed
a download (``curl … | sh``) can call only the functions the text exports.  Text the
parser refuses is dynamic.  Pure: text in, a verdict out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from inferencex_tools import shellsyntax as S

if TYPE_CHECKING:
    from tree_sitter import Node

_NAME = re.compile(r"[A-Za-z_][\w-]*")  # a function name (they may hold hyphens)
# a pure expansion: $V, ${V}, ${V[@]}, ${V[2]}, $1, $@, ${V:-literal}
_PURE = re.compile(r"\$(?:[A-Za-z_]\w*|[0-9@*]|\{(?:[A-Za-z_]\w*(?:\[(?:[@*]|\d+)\])?"
                   r"(?::?-[\w./-]*)?|[0-9@*])\})")
# words before a command word that can still run a function (wrappers)
_LEAD = frozenset({"!", "time", "command", "builtin", "exec", "nohup", "env", "timeout",
                   "coproc", "-p", "--"})
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
_WHERE = re.compile(r"\$\(\s*(?:command\s+-v|type\s+-P)\s+[\w.+-]+\s*\)")
_TABLE = re.compile(r"(?:compgen|alias)\b"
                    r"|(?:declare|typeset|local|export|readonly)(?:\s+-\w+)*\s+-[A-Za-z]*[fF]"
                    r"|shopt(?:\s+-\w+)*\s+.*(?:expand_aliases|extglob)"
                    r"|(?:mapfile|readarray)(?:\s+-\w+)*\s+-C")
_SUBS = ("command_substitution", "process_substitution")


@dataclass(frozen=True)
class _Parts:
    lit: str  # the literal characters (quotes removed)
    exps: int  # expansions and substitutions
    glob: bool  # an unquoted glob or brace character
    alone: bool  # one pure expansion and nothing else


def _parts(w: Node) -> _Parts:
    """What the word ``w`` is made of (from its syntax tree)."""
    lit: list[str] = []
    exps: list[Node] = []
    glob = False

    def visit(n: Node, quoted: bool) -> None:
        nonlocal glob
        t = n.type
        if t in ("word", "number", "extglob_pattern", "regex"):
            raw = S.text(n)
            glob = glob or (not quoted and bool(re.search(r"(?<!\\)[*?\[{]", raw)))
            lit.append(re.sub(r"\\(.)", r"\1", raw))
        elif t == "raw_string":
            lit.append(S.text(n)[1:-1])
        elif t == "ansi_c_string":
            if "\\" in S.text(n):
                exps.append(n)  # escapes build the name
            else:
                lit.append(S.text(n)[2:-1])
        elif t == "string_content":
            lit.append(S.text(n))
        elif t == "string":
            for c in n.named_children:
                visit(c, True)
        elif t == "concatenation":
            for c in n.children:
                visit(c, quoted)
        elif t in _SUBS and _WHERE.fullmatch(S.text(n)):
            lit.append("/")  # $(command -v lit): a path, or the spelt name
        elif n.is_named:
            exps.append(n)
        else:
            lit.append(S.text(n))

    visit(w, False)
    alone = len(exps) == 1 and not lit and exps[0].type in (
        "simple_expansion", "expansion") and bool(_PURE.fullmatch(S.text(exps[0])))
    return _Parts("".join(lit), len(exps), glob, alone)


def built_name(w: Node) -> bool:
    """Can the command word ``w`` name a function its text does not spell?"""
    if S.text(w) in ("[", "[["):
        return False
    p = _parts(w)
    if re.search(r"[^\w*?\[\]{},-]", p.lit):
        return False  # a path or file name: never a function name
    if p.glob or (p.exps and not p.alone):
        return True
    return not p.exps and bool(_NAME.fullmatch(p.lit)) and p.lit not in _NAME.findall(S.text(w))


# variables the shell itself sets to text a script may build (``"$_"`` runs the last
# argument, ``read`` without a name sets REPLY, ``$1`` is what the caller passed …)
_SHELL_SET = frozenset({"_", "REPLY", "MAPFILE", "OPTARG", "BASH_REMATCH", "BASH_COMMAND",
                        "BASH_ARGV", "BASH_EXECUTION_STRING", "READLINE_LINE", "COMPREPLY",
                        *"0123456789", "@", "*"})
_DECLARE = frozenset({"declare", "typeset", "local", "export", "readonly"})
# builtins that store text they read or format: (the options taking an argument, the
# option whose argument is the variable)
_READS = {"read": ("adinNptu", "a"), "mapfile": ("dnOsuCc", ""),
          "readarray": ("dnOsuCc", ""), "printf": ("v", "v")}
_COPY = re.compile(r"\$\{?([A-Za-z_]\w*|[0-9@*])")
ANY = "<any>"  # an assignment to a variable whose name is built: any variable


@dataclass(frozen=True)
class Calls:
    """What text's commands tell of the functions they can run (``mode`` True: a value
    used quoted, ``"$X"``; False: split into words and globbed, ``$X``)."""

    dynamic: bool = False  # a command runs a built name whatever the variables hold
    called: frozenset[tuple[str, bool]] = frozenset()  # (variable, mode) run as a command
    built: frozenset[tuple[str, bool]] = frozenset()  # (variable, mode) may hold a built name
    copies: frozenset[tuple[str, str, bool]] = frozenset()  # (X, Y, split): X holds Y's value
    # a child shell runs downloaded text (``curl … | sh``): it can call the functions the
    # text exports to it, none other (see :func:`reaches_every_function`)
    remote: bool = False
    # (X, Y): run unquoted, X's first field is Y's (``X="$Y --flag"``): a split use only
    firsts: frozenset[tuple[str, str]] = frozenset()

    def __or__(self, other: Calls) -> Calls:
        return Calls(self.dynamic or other.dynamic, self.called | other.called,
                     self.built | other.built, self.copies | other.copies,
                     self.remote or other.remote, self.firsts | other.firsts)


_DYNAMIC = Calls(dynamic=True)


def _var(w: Node) -> str:
    """The variable a word names as a target (``"$n"``-like: :data:`ANY`)."""
    t = S.text(w).strip("\"'")
    return t if re.fullmatch(r"[A-Za-z_]\w*", t) else ANY


def _source(w: Node, every: bool) -> str:
    """The variable a pure expansion ``w`` reads: ``Y``, or ``Y[*]`` (any element) for
    ``${Y[2]}``, or for ``${Y[@]}`` when ``every`` element counts (not only the first)."""
    t = S.text(w).replace('"', "")
    m = _COPY.match(t[t.index("$"):])
    assert m is not None
    sub = re.search(r"\[([@*]|\d+)\]", t)
    whole = sub is not None and sub.group(1) in "@*"
    return m.group(1) + ("[*]" if sub and sub.group(1) != "0" and (every or not whole)
                         else "")


def _judge(target: str, value: Node | None) -> Calls:
    """What assigning ``value`` (None: a built one) to ``target`` tells."""
    if value is None:
        return Calls(built=frozenset({(target, True), (target, False)}))
    split = value.type not in ("string", "raw_string")
    p = _parts(value)
    if p.alone:
        return Calls(copies=frozenset({(target, _source(value, target.endswith("]")),
                                        split)}))
    # used quoted: a name unless a literal character no name has; split: what its first
    # field can be (:func:`_first_field`)
    out = Calls(built=frozenset({(target, True)})) if built_name(value) else Calls()
    if p.glob or re.search(r"[*?[]", p.lit):
        return out | Calls(built=frozenset({(target, False)}))
    return out | _first_field(target, _tokens(value), _NAME.findall(S.text(value)))


_Token = tuple[str, "Node | str"]  # ("lit", text) or ("exp", an expansion node)


def _tokens(n: Node) -> list[_Token]:
    """A value's text as literals and expansions, quotes removed (a quoted blank is still
    a blank of the value: it splits the value where the value is used unquoted)."""
    t = n.type
    if t in ("word", "number"):
        return [("lit", re.sub(r"\\(.)", r"\1", S.text(n)))]
    if t == "raw_string":
        return [("lit", S.text(n)[1:-1])]
    if t == "string_content":
        return [("lit", S.text(n))]
    if t == "string":  # the text between its parts too (blanks the tree leaves out)
        raw, base = n.text or b"", n.start_byte
        out: list[_Token] = []
        pos = base + 1  # after the opening quote
        for c in n.named_children:
            if c.start_byte > pos:
                out.append(("lit", raw[pos - base:c.start_byte - base].decode(
                    "utf-8", "surrogateescape")))
            blank = S.text(c)[:len(S.text(c)) - len(S.text(c).lstrip())]
            if blank:  # (the tree may start a part at the blanks before it)
                out.append(("lit", blank))
            out += _tokens(c)
            pos = c.end_byte
        if n.end_byte - 1 > pos:
            out.append(("lit", raw[pos - base:n.end_byte - 1 - base].decode(
                "utf-8", "surrogateescape")))
        return out
    if t == "concatenation":
        return [tok for c in n.children if c.is_named for tok in _tokens(c)]
    if t in _SUBS and _WHERE.fullmatch(S.text(n)):
        return [("lit", "/")]  # $(command -v lit): a path, or the spelt name
    return [("exp", n)]


def _first_field(target: str, toks: list[_Token], spelt: list[str]) -> Calls:
    """What a value made of ``toks`` tells when ``$target`` runs unquoted: the command
    word is its first field.  A field that holds a character no function name has (a
    path) is never one; a spelt literal is spelt; one variable's value alone (``$Y``, then
    a blank, the end or a path character) is a copy of ``Y``, and ``${Y:-w}`` also ``w``
    followed by the rest; anything else (a join of an expansion with name characters,
    two expansions, a substitution) may build one."""
    built = Calls(built=frozenset({(target, False)}))
    exps: list[Node] = []
    name = ""
    for i, (kind, tok) in enumerate(toks):
        if kind == "exp":
            assert not isinstance(tok, str)
            if name:
                return built  # a name joined to an expansion
            exps.append(tok)
            if len(exps) > 1:
                return built
            continue
        assert isinstance(tok, str)
        for j, ch in enumerate(tok):
            if ch.isspace():
                if not name and not exps:
                    continue  # leading blanks are no field
                return _one_source(target, exps, toks[i + 1:], spelt, name)
            if re.fullmatch(r"[\w-]", ch):
                if exps:
                    return built  # an expansion joined to a name
                name += ch
            else:  # a path or file name character ends the name part
                return _one_source(target, exps, [("lit", tok[j:]), *toks[i + 1:]], spelt,
                                   name, path=True)
    return _one_source(target, exps, [], spelt, name)


def _one_source(target: str, exps: list[Node], rest: list[_Token], spelt: list[str],
                name: str, path: bool = False) -> Calls:
    """The first field was ``name`` (literal name characters), or one expansion."""
    if not exps:
        ok = path or not name or name in spelt or not _NAME.fullmatch(name)
        return Calls() if ok else Calls(built=frozenset({(target, False)}))
    e = exps[0]
    kids = [c for c in e.children if c.type not in ("${", "}", "$")]
    if e.type == "simple_expansion" and bool(_PURE.fullmatch(S.text(e).lstrip())):
        return Calls(firsts=frozenset({(target, _source(e, False))}))
    if e.type == "expansion" and kids and kids[0].type == "variable_name" and (
            len(kids) == 1 or (len(kids) >= 2 and S.text(kids[1]) in (":-", "-"))):
        var = S.text(kids[0])
        out = Calls(firsts=frozenset({(target, var)}))
        if len(kids) > 2:  # the default's value, then what follows the expansion
            toks = [tok for k in kids[2:] for tok in _tokens(k)]
            out |= _first_field(target, [*toks, *rest], spelt)
        return out
    return Calls(built=frozenset({(target, False)}))


def _assignment(a: Node, nameref: bool = False) -> Calls:
    """An assignment node: an array literal gives each element (the first is what
    ``"${X[@]}"`` runs), ``X+=v`` a built value, a nameref a copy."""
    name_node = a.child_by_field_name("name")
    value = a.child_by_field_name("value")
    if name_node is None:
        return _judge(ANY, None)
    name = S.text(name_node).split("[", 1)[0]
    if name_node.type == "subscript":
        name = S.text(name_node.named_children[0])
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return _judge(ANY, None)
    if value is not None and value.type == "array":  # (X+=( …) appends: judged alike)
        elems = [e for e in value.named_children if e.type != "comment"]
        out = Calls()
        for k, e in enumerate(elems):
            if k == 0:
                out |= _judge(name, e)
            out |= _judge(name + "[*]", e)
        return out
    if any(c.type == "+=" for c in a.children):
        return _appended(name, value)
    if value is None:
        return Calls()
    if nameref:
        target = _var(value)
        return Calls(copies=frozenset({(name, target, False)})) if target != ANY \
            else _judge(name, None)
    if name_node.type == "subscript":
        return _judge(name + "[*]", value) | _judge(name, value)
    return _judge(name, value)


def _appended(name: str, value: Node | None) -> Calls:
    """``X+=value``: text that starts with a blank joins no name to what is there; run
    unquoted, the first field is the old one or (nothing there) the text's own."""
    toks = _tokens(value) if value is not None else []
    if value is not None and toks and toks[0][0] == "lit" and str(toks[0][1])[:1].isspace():
        return Calls(built=frozenset({(name, True)})) | _first_field(
            name, toks, _NAME.findall(S.text(value)))
    return _judge(name, None)


def _defaults(n: Node) -> Calls:
    """The assignments ``${X:=v}`` (``${X=v}``) inside ``n``."""
    out = Calls()
    for e in S.walk(n):
        if e.type != "expansion":
            continue
        kids = [c for c in e.children if c.type not in ("${", "}")]
        if len(kids) >= 2 and kids[0].type == "variable_name" and \
                S.text(kids[1]) in (":=", "="):
            operand = kids[2:]
            out |= _judge(S.text(kids[0]), operand[0] if len(operand) == 1 else None)
    return out


def _operands(args: list[Node], with_arg: str, target: str) -> list[str]:
    """The variables a read-like builtin stores into: its operands and the argument of
    its option ``target``."""
    out: list[str] = []
    i = 0
    while i < len(args):
        w = S.text(args[i])
        if w.startswith("-") and len(w) > 1:
            if w[-1] in with_arg:
                if w[-1] == target and i + 1 < len(args):
                    out.append(_var(args[i + 1]))
                i += 1
        elif not with_arg.startswith("v"):  # printf's operands are its format and data
            out.append(_var(args[i]))
        i += 1
    return out


def _lead_off(words: list[Node]) -> list[Node]:
    """``words`` from its command word on (wrappers and their options dropped)."""
    i = 0
    while i < len(words):
        w = S.text(words[i])
        if w == "timeout":  # its options, then its duration
            i += 1
            while i < len(words) and not re.fullmatch(r"[\d.]+[smhd]?|\$.*",
                                                      S.text(words[i])):
                i += 1
        elif not (w in _LEAD or (w.startswith("-") and i and
                                 S.text(words[i - 1]) in ("env", "command", "exec", "-p",
                                                          "--"))):
            break
        elif w == "env":  # env NAME=value … command
            while i + 1 < len(words) and re.match(r"[A-Za-z_]\w*=", S.text(words[i + 1])):
                i += 1
        i += 1
    return words[i:]


def _declared(cmd: Node) -> Calls:
    """``declare``/``local``/``export``/``readonly``/``typeset`` arguments."""
    args = [c for c in cmd.children[1:] if c.is_named]
    nameref = any(re.fullmatch(r"-\w*n\w*", S.text(w)) for w in args)
    out = Calls()
    for w in args:
        if w.type == "variable_assignment":
            out |= _assignment(w, nameref)
        elif re.match(r"[\"']?\$[^=]*=", S.text(w)):  # declare "$n=…": any variable
            out |= _judge(ANY, None)
    if _TABLE.match(S.text(cmd)):
        return _DYNAMIC
    return out


def _read_copy(cmd: Node, words: list[Node]) -> Calls | None:
    """``[IFS=,] read [-r] [-a] X… <<< "$V"``: each X holds a field of ``V``'s value,
    split at characters no name has (the default blanks, or such an ``IFS``), so a name
    in X is a whole name of V's value (a copy, used split); None for any other ``read``."""
    if S.text(words[0]) != "read" or any(
            re.fullmatch(r"-[a-zA-Z]*[dnNptu][a-zA-Z]*", S.text(w)) for w in words[1:]):
        return None
    var = _here_source(cmd)
    if var is None:
        return None
    targets = [S.text(w) for w in words[1:] if not S.text(w).startswith("-")]
    if not targets or not all(re.fullmatch(r"[A-Za-z_]\w*", t) for t in targets):
        return None
    return Calls(copies=frozenset((t + sfx, var, True) for t in targets for sfx in ("", "[*]")))


def _here_source(cmd: Node) -> str | None:
    """The variable a command's here-string is (``<<< "$V"``), when its ``IFS`` prefix,
    if any, holds no name character; else None."""
    ifs = [c for c in cmd.children if c.type == "variable_assignment"
           and S.text(c).startswith("IFS=")]
    if ifs and re.search(r"[\w-]", S.text(ifs[0])[4:].strip("'\"")):
        return None
    here = [c for c in cmd.children if c.type == "herestring_redirect"]
    src = here[0].named_children[-1] if here and here[0].named_children else None
    if src is None or not _parts(src).alone:
        return None
    return _source(src, False)


def _stored(cmd: list[Node]) -> Calls:
    """What a read-like builtin, ``getopts`` or a prefix assignment stores."""
    head = S.text(cmd[0]) if cmd else ""
    out = Calls()
    if head in _READS:
        for v in _operands(cmd[1:], *_READS[head]):
            out |= _judge(v, None)
    elif head == "getopts" and len(cmd) > 2:
        out |= _judge(_var(cmd[2]), None)
    return out


def _shell_input(cmd: Node, words: list[Node]) -> bool:
    """Does a shell (or ``source``) read text that cannot be known: stdin, a
    here-string, a process substitution, ``/dev/stdin``?"""
    head = S.text(words[0])
    if head.rsplit("/", 1)[-1] not in _SHELLS and head not in ("source", "."):
        return False
    nxt = S.text(words[1]) if len(words) > 1 else ""
    if nxt in ("", "-s", "-") or nxt.startswith(("<(", "/dev/", "/proc/")):
        return True
    parent = cmd.parent
    redirects = parent.children if parent is not None and \
        parent.type == "redirected_statement" else []
    return any(r.type == "herestring_redirect" or (
        r.type == "file_redirect" and any(c.type == "process_substitution"
                                          for c in r.children)) for r in redirects)


def _downloaded(cmd: Node, words: list[Node]) -> bool:
    """Is ``cmd`` a child shell (not ``source``) reading its standard input at the end
    of a pipe whose first command downloads (``curl``/``wget``): text that is no
    repository file's, run in another process?"""
    if S.text(words[0]).rsplit("/", 1)[-1] not in _SHELLS or len(words) > 2:
        return False
    pipe = cmd.parent
    if pipe is None or pipe.type != "pipeline" or pipe.named_children[-1] != cmd:
        return False
    first = pipe.named_children[0]
    lead = _lead_off(S.command_words(first)) if first.type == "command" else []
    return bool(lead) and S.text(lead[0]).rsplit("/", 1)[-1] in ("curl", "wget")


# what makes a shell's functions visible to a child shell
_EXPORTS = re.compile(r"\b(?:export|declare|typeset|local|readonly)\s+(?:-\w+\s+)*-\w*f"
                      r"|\bset\s+(?:-\w*a|[-+]o\s+allexport)|\bBASH_FUNC_")


def _strings_run(words: list[Node]) -> list[str] | None:
    """The strings a command gives to a shell to run (a ``trap`` action, ``bash -c``'s
    argument); None when one cannot be known."""
    out: list[Node] = []
    if S.text(words[0]) == "trap" and len(words) > 1 and not S.text(words[1]).startswith("-"):
        out.append(words[1])
    for k, w in enumerate(words[:-1]):
        if S.text(w).rsplit("/", 1)[-1] in _SHELLS:
            j, c_flag = k + 1, False
            while j < len(words) and S.text(words[j]).startswith("-"):
                c_flag = c_flag or bool(re.fullmatch(r"-[a-z]*c[a-z]*", S.text(words[j])))
                j += 1
            if c_flag and j < len(words):
                out.append(words[j])
    strings: list[str] = []
    for n in out:
        if _parts(n).exps:  # text built at run time
            return None
        strings.append(_parts(n).lit)
    return strings


def _heredoc_for_shell(cmd: Node, words: list[Node]) -> Iterator[str]:
    """The bodies of here-documents a shell (or ``source``) reads as commands."""
    parent = cmd.parent
    if parent is None or parent.type != "redirected_statement":
        return
    head = S.text(words[0]) if words else ""
    if head.rsplit("/", 1)[-1] not in _SHELLS and head not in ("source", "."):
        return
    for r in parent.children:
        if r.type == "heredoc_redirect":
            body = next((c for c in r.children if c.type == "heredoc_body"), None)
            if body is not None:
                yield S.text(body)


def _command(cmd: Node) -> Calls:
    """One simple command: its assignments and whether its command word is dynamic."""
    out = _defaults(cmd)
    for c in cmd.children:
        if c.type == "variable_assignment":
            out |= _assignment(c)
    words = _lead_off(S.command_words(cmd))
    if not words:
        return out
    out |= _read_copy(cmd, words) or _stored(words)
    head = words[0]
    if S.text(head) == "eval" or built_name(head) or _TABLE.match(
            " ".join(S.text(w) for w in words)):
        return _DYNAMIC
    if _parts(head).alone:
        out |= Calls(called=frozenset({(_source(head, False), S.text(head)[0] == '"')}))
    if _shell_input(cmd, words):
        return out | Calls(remote=True) if _downloaded(cmd, words) else _DYNAMIC
    strings = _strings_run(words)
    if strings is None:
        return _DYNAMIC
    for s in [*strings, *_heredoc_for_shell(cmd, words)]:
        out |= calls(s)
    return out


def _loop(n: Node) -> Calls:
    """``for X in …`` / ``select X in …``: X holds each value (``"$@"`` without a list)."""
    var = n.child_by_field_name("variable")
    if var is None:
        return Calls()
    values = [c for c in n.children if c.is_named and c.start_byte != var.start_byte
              and c.type not in ("do_group", "comment")]
    if not values:
        return _judge(S.text(var), None)
    return _union(_judge(S.text(var), v) for v in values)


def _union(cs: Iterable[Calls]) -> Calls:
    out = Calls()
    for c in cs:
        out |= c
    return out


@lru_cache(maxsize=8192)
def calls(text: str) -> Calls:
    """What the commands of ``text`` tell of the functions they can run: a command word
    built at run time (dynamic), the variables run as commands, and what is assigned to
    variables (the strings a ``trap`` or ``bash -c`` runs included)."""
    syn = S.parse(text)
    if not syn.ok:
        return _DYNAMIC
    out = Calls()
    for n in S.walk(syn.root):
        t = n.type
        if t == "function_definition" and S.function_name(n) in ("command", "type",
                                                                  "builtin"):
            return _DYNAMIC
        if t == "command":
            out |= _command(n)
        elif t == "declaration_command":
            d = _declared(n)
            if d.dynamic:
                return d
            out |= d | _defaults(n)
        elif t == "variable_assignment" and n.parent is not None and \
                n.parent.type not in ("command", "declaration_command"):
            out |= _assignment(n) | _defaults(n)
        elif t == "for_statement":
            out |= _loop(n)
        if out.dynamic:
            return out
    return out


def reaches_every_function(parts: Iterable[str]) -> bool:
    """Can text made of ``parts`` (shell text run in one shell and its children) run a
    function whose name it never spells: a command word built at run time, or a pure
    ``"$X"`` command word whose variable (or, through copies ``X=$Y``, one it copies) an
    assignment of the text, or the shell itself, can give a built name?  A child shell
    fed downloaded text (``curl … | sh``) counts only when the text exports functions
    (``export -f``, ``declare -fx``, ``set -a``): another process sees no other; what
    the download holds is no repository byte (a gate cannot see it either way)."""
    c = Calls()
    parts = list(parts)
    for part in parts:
        c |= calls(part)
    if c.dynamic or (c.remote and any(_EXPORTS.search(p) for p in parts)):
        return True
    built = c.built | {(v, mode) for v in _SHELL_SET for mode in (True, False)}
    seen: set[tuple[str, bool]] = set()
    todo = list(c.called)
    while todo:
        var, mode = todo.pop()
        if (var, mode) in seen:
            continue
        seen.add((var, mode))
        if (var, mode) in built or (ANY, mode) in built:
            return True
        todo += [(y, mode and not split) for x, y, split in c.copies if x in (var, ANY)]
        if not mode:
            todo += [(y, False) for x, y in c.firsts if x in (var, ANY)]
        if var.endswith("[*]"):  # any element: the first too
            todo.append((var[:-3], mode))
    return False
