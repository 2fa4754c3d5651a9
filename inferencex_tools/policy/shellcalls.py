"""Can shell text call a function whose name it never spells?

The ``--base`` selection (:class:`~.base.ShellDelta`) skips a row when a change edits only
bodies of functions that the text the row can run never names.  That holds only while
every function call spells its name: a command word built at run time (``"${f}al"``,
``$a$b``, ``${!ref}``, ``$(printf …)``, ``fo''o``, ``fo{o,}``, a glob), ``eval``, a
``trap`` or ``bash -c`` string that does so, the function table (``compgen``,
``declare -F``), aliases, and shells fed text from a pipe or a here-string defeat it.

:func:`dynamic_command` cuts the text into simple commands (quotes, ``$( )``, backticks,
``${ }``, arithmetic, ``[[ ]]``, ``case`` patterns, array literals and here-documents
followed; the commands inside substitutions and unquoted here-document expansions count)
and judges each command word (:func:`calls`); a word with a literal character no function
name has (``/``, ``.``) is never dynamic.  A pure ``"$X"``/``"${X[@]}"`` command word is
dynamic when an assignment to ``X`` anywhere in the text (:func:`reaches_every_function`
takes all the text one shell runs) can build a name: an expansion joined to literals, a
command substitution, ``+=``, ``read``/``mapfile``/``printf -v``/``getopts``, a ``for``
list, ``declare``/``local``/``export``, ``${X:=…}``, or the shell itself (``$_``,
``REPLY``, ``BASH_REMATCH`` …); copies ``X=$Y`` are followed.  A variable assigned only
literals (spelt) or only from the job's environment (its values count as spelt) stays
selective, and so does a positional ``"$1"``/``"$@"`` command word.  Shell is read
roughly and errs towards "dynamic".  Pure: text in, a verdict out.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

_NAME = re.compile(r"[A-Za-z_][\w-]*")  # the function names split_functions knows
# a pure expansion: $V, ${V}, ${V[@]}, ${V[2]}, $1, $@, ${V:-literal}
_PURE = re.compile(r"\$(?:[A-Za-z_]\w*|[0-9@*]|\{(?:[A-Za-z_]\w*(?:\[(?:[@*]|\d+)\])?"
                   r"(?::?-[\w./-]*)?|[0-9@*])\})")
# words before a command word that can still run a function (keywords, wrappers)
_LEAD = frozenset({"!", "if", "then", "do", "else", "elif", "while", "until", "time", "{",
                   "}", "fi", "done", "esac", "command", "builtin", "exec", "nohup", "env",
                   "timeout", "coproc", "-p", "--"})
_ASSIGN = re.compile(r"[A-Za-z_]\w*(?:\[[^]]*\])?\+?=")
_OP = r"<<<|<<-?|&>>?|[<>]&|>>|<>|>\||[<>]"
_REDIRECT = re.compile(rf"[0-9]*(?:{_OP})")
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
# commands that reach the function table, define aliases or callbacks
_TABLE = re.compile(r"(?:compgen|alias)\b"
                    r"|(?:declare|typeset|local|export|readonly)(?:\s+-\w+)*\s+-[A-Za-z]*[fF]"
                    r"|shopt(?:\s+-\w+)*\s+.*(?:expand_aliases|extglob)"
                    r"|(?:mapfile|readarray)(?:\s+-\w+)*\s+-C")
SUB = "$()"  # what a substitution leaves in its word
# ``$(command -v python3)``: where a literal command is (``command``/``type`` never
# functions here: text defining one is dynamic, see _OVERRIDE)
_WHERE = re.compile(r"\s*(?:command\s+-v|type\s+-P)\s+[\w.+-]+\s*")
_OVERRIDE = re.compile(r"(?:^|[\s;&|({])(?:function\s+)?(?:command|type|builtin)\s*\(\s*\)"
                       r"|\bfunction\s+(?:command|type|builtin)\b")
_SEP = "\x00"  # between the elements of an array literal in its word ``X=(a\x00b)``


class _Lexer:
    """Simple commands (lists of raw words) of shell text from ``i``; the commands of its
    substitutions go to ``sink`` too (``out`` None: an array literal, no commands)."""

    def __init__(self, text: str, i: int, sink: list[list[str]],
                 out: list[list[str]] | None) -> None:
        self.t, self.i, self.sink, self.out = text, i, sink, out
        self.cmd: list[str] = []
        self.word: list[str] = []
        self.test = False  # inside [[ ]]
        self.case: list[bool] = []  # per open case: expecting a pattern
        self.docs: list[tuple[str, bool, bool]] = []  # (delimiter, expands, shell reads)
        self.elements: list[str] = []  # the words of an array literal (``out`` None)

    def run(self, stop: str = "") -> int:
        """Lex to the end, or to the unmatched ``stop`` (``)``/`````): its index."""
        t, depth = self.t, 0
        while self.i < len(t):
            c = t[self.i]
            if self.case and self.case[-1] and not self.word and self._pattern():
                continue
            if c == stop and depth == 0 and not self.test:
                break
            if c in "()" and not self.test:
                if not self._paren(c):  # a subshell's parenthesis
                    depth += 1 if c == "(" else -1
                    self._end_command()
            elif c in " \t\n;&|<>()":
                self._separator(c)
            else:
                self._word_char(c)
        self._end_command()
        return self.i

    def _paren(self, c: str) -> bool:
        """An array literal ``x=(``, ``((``/``<(``-like groups: handled here (True)."""
        t, i = self.t, self.i
        if c == "(" and self.word and _ASSIGN.fullmatch("".join(self.word)):
            sub = _Lexer(t, i + 1, self.sink, None)
            self.i = sub.run(")") + 1
            self.word.append("(" + _SEP.join(sub.elements) + ")")
            return True
        if c == "(" and t.startswith("((", i) and not self.word and (
                not _lead_off(self.cmd) or self.cmd[-1:] == ["for"]):
            self.i = self._arith(i + 2)
            self.cmd.append("((")
            return True
        self.i += 1
        return False

    def _separator(self, c: str) -> None:
        t, i = self.t, self.i
        if not self.test and (c in "<>" or t.startswith("&>", i)):
            self._redirect()
            return
        self._end_word()
        branch = re.compile(r";;&|;;|;&").match(t, i) if self.case else None
        self.i = i + 1 if branch is None else branch.end()
        if self.test or c in " \t":
            return
        self._end_command()
        if branch is not None:
            self.case[-1] = True
        elif c == "\n":
            self._heredocs()

    def _word_char(self, c: str) -> None:
        t, i = self.t, self.i
        if c == "#" and not self.word:
            end = t.find("\n", i)
            self.i = len(t) if end < 0 else end
        elif c == "\\":
            self.word.append(t[i:i + 2] if t[i + 1:i + 2] != "\n" else "")
            self.i += 2
        elif c == "'":
            end = t.find("'", i + 1)
            end = len(t) if end < 0 else end
            self.word.append(t[i:end + 1])
            self.i = end + 1
        elif c == '"':
            self.i = self._dquote(i + 1)
        elif c == "$" or c == "`":
            self.i = self._dollar(i)
        else:
            self.word.append(c)
            self.i += 1

    def _dquote(self, i: int) -> int:
        """Read a double-quoted string from ``i`` (after the quote): the index after it."""
        t = self.t
        self.word.append('"')
        while i < len(t) and t[i] != '"':
            if t[i] == "\\":
                self.word.append(t[i:i + 2])
                i += 2
            elif t[i] in "$`":
                i = self._dollar(i)
            else:
                self.word.append(t[i])
                i += 1
        self.word.append('"')
        return i + 1

    def _dollar(self, i: int) -> int:
        """An expansion at ``i`` (``$…`` or a backtick): the index after it."""
        t = self.t
        if t.startswith("$((", i):
            self.word.append(SUB)
            return self._arith(i + 3)
        if t.startswith("$(", i) or t[i] == "`":
            start = i + (2 if t[i] == "$" else 1)
            end = _Lexer(t, start, self.sink, self.sink).run(")" if t[i] == "$" else "`")
            # a path, or the literal name when it is a function: never a built name
            self.word.append("/" if _WHERE.fullmatch(t, start, end) else SUB)
            return end + 1
        if t.startswith("${", i):
            end = self._braces(i + 2)
            self.word.append(t[i:end])
            return end
        if t.startswith("$'", i):
            end = t.find("'", i + 2)
            while end > 0 and t[end - 1] == "\\":
                end = t.find("'", end + 1)
            end = len(t) if end < 0 else end
            self.word.append(t[i:end + 1])
            return end + 1
        m = re.compile(r"\$(?:[A-Za-z_]\w*|[0-9@*#?$!-])?").match(t, i)
        assert m is not None
        self.word.append(m.group(0))
        return m.end()

    def _braces(self, i: int) -> int:
        """The index after the ``}`` closing a ``${`` whose body starts at ``i`` (the
        substitutions inside run)."""
        t, depth = self.t, 1
        while i < len(t):
            if t[i] == "\\":
                i += 2
                continue
            if t[i] in "$`" and (t.startswith("$(", i) or t[i] == "`"):
                i = _Lexer(t, i, self.sink, self.sink)._dollar(i)
                continue
            depth += {"{": 1, "}": -1}.get(t[i], 0)
            i += 1
            if depth == 0:
                break
        return i

    def _arith(self, i: int) -> int:
        """Skip arithmetic from ``i`` to its closing ``))`` (the substitutions inside
        run): the index after it."""
        t, depth = self.t, 2
        while i < len(t) and depth > 0:
            if t.startswith("$(", i) or t[i] == "`":
                i = _Lexer(t, i, self.sink, self.sink)._dollar(i)
                continue
            depth += {"(": 1, ")": -1}.get(t[i], 0)
            i += 1
        return i

    def _redirect(self) -> None:
        """A redirection operator (``>``, ``2>&1``, ``<<EOF``, ``<(…)``) at ``self.i``."""
        t, i = self.t, self.i
        if t.startswith(("<(", ">("), i):  # a process substitution: a word
            sub = _Lexer(t, i + 2, self.sink, self.sink)
            self.i = sub.run(")") + 1
            self.word.append("<" + SUB)
            return
        fd = "".join(self.word) if "".join(self.word).isdigit() else ""
        if not fd:
            self._end_word()
        self.word = []
        m = re.compile(_OP).match(t, i)
        assert m is not None
        self.i = m.end()
        self.cmd.append(fd + m.group(0))
        if m.group(0).startswith("<<") and m.group(0) != "<<<":
            self._heredoc_word()

    def _heredoc_word(self) -> None:
        t = self.t
        m = re.compile(r"[ \t]*(['\"]?)\\?([^\s;&|<>()'\"]+)\1").match(t, self.i)
        if m is None:
            return
        self.i = m.end()
        self.cmd.append(m.group(0))
        shell = any(w.rsplit("/", 1)[-1] in _SHELLS for w in self.cmd)
        self.docs.append((m.group(2), not m.group(1), shell))

    def _heredocs(self) -> None:
        """Here-document bodies after a line end: data (their expansions run when the
        delimiter is unquoted), or commands when a shell reads them."""
        t = self.t
        for delim, expands, shell in self.docs:
            start = self.i
            end = start
            while end < len(t):
                nl = t.find("\n", end)
                nl = len(t) if nl < 0 else nl
                if t[end:nl].strip() == delim:
                    break
                end = nl + 1
            body = t[start:end]
            if shell:
                _Lexer(body, 0, self.sink, self.sink).run()
            elif expands:
                for m in re.finditer(r"\$\(|`", body):
                    _Lexer(body, m.start(), self.sink, self.sink)._dollar(m.start())
            nl = t.find("\n", end)
            self.i = len(t) if nl < 0 else nl + 1
        self.docs = []

    def _pattern(self) -> bool:
        """In a ``case``, expecting a pattern: skip it and its ``)`` (True), or close the
        ``case`` at ``esac`` (True); False at blanks and line ends."""
        t, i = self.t, self.i
        if t[i] in " \t\n":
            self.i += 1
            if t[i] == "\n":
                self._heredocs()
            return True
        if re.compile(r"esac\b").match(t, i):
            self.case.pop()
            self.i += 4
            return True
        self.case[-1] = False
        probe = _Lexer(t, i + (t[i] == "("), self.sink, None)
        probe.test = True  # | and ( ) are pattern syntax here
        while probe.i < len(t) and t[probe.i] != ")":
            c = t[probe.i]
            if c in " \t\n|":
                probe._separator(c)
            else:
                probe._word_char(c)
        self.i = probe.i + 1
        return True

    def _end_word(self) -> None:
        if self.word:
            w = "".join(self.word)
            self.word = []
            if self.test and w == "]]":
                self.test = False
            elif w == "[[" and not self.test:
                self.test = True
            self.cmd.append(w)
            if len(self.cmd) > 2 and self.cmd[-1] == "in" and self.cmd[-3] == "case":
                self._end_command()  # the patterns follow

    def _end_command(self) -> None:
        self._end_word()
        if self.cmd:
            if self.out is None:
                self.elements += self.cmd
            else:
                self.out.append(self.cmd)
                if _lead_off(self.cmd)[:1] == ["case"]:
                    self.case.append(True)
                elif _lead_off(self.cmd)[:1] == ["esac"] and self.case:
                    self.case.pop()
            self.cmd = []


def _lead_off(words: list[str]) -> list[str]:
    """``words`` from its command word on (keywords, wrappers, assignments and
    redirections before it dropped)."""
    i = 0
    while i < len(words):
        w = words[i]
        if w == "timeout":  # its options, then its duration
            i += 1
            while i < len(words) and not re.fullmatch(r"[\d.]+[smhd]?|\$.*", words[i]):
                i += 1
        elif _REDIRECT.fullmatch(w):
            i += 1  # and its target
        elif not (w in _LEAD or _ASSIGN.match(w) or (w.startswith("-") and i and
                  words[i - 1] in ("env", "command", "exec", "-p", "--"))):
            break
        i += 1
    return words[i:]


def _parts(word: str) -> tuple[str, int, bool, bool]:
    """(literal characters, expansions, a glob or brace, an expansion alone) of a raw
    word (quotes removed from the literal)."""
    lit: list[str] = []
    exps: list[str] = []
    glob = False
    rest = word
    quoted = False
    while rest:
        m = re.match(r"\$\{[^}]*\}|\$\(\)|\$'[^']*\\[^']*'|\$[A-Za-z_]\w*|\$[0-9@*#?$!-]"
                     r"|<\$\(\)", rest)  # ($'…' with an escape: built)
        if m is not None:
            exps.append(m.group(0))
            rest = rest[m.end():]
        elif rest[0] == '"':
            quoted = not quoted
            rest = rest[1:]
        elif (rest[0] == "'" and not quoted) or rest.startswith("$'"):
            end = rest.find("'", 2 if rest[0] == "$" else 1)
            end = len(rest) if end < 0 else end
            lit.append(rest[2 if rest[0] == "$" else 1:end])
            rest = rest[end + 1:]
        elif rest[0] == "\\":
            lit.append(rest[1:2])
            rest = rest[2:]
        else:
            glob = glob or (not quoted and rest[0] in "*?[{")
            lit.append(rest[0])
            rest = rest[1:]
    alone = len(exps) == 1 and not lit and bool(_PURE.fullmatch(exps[0]))
    return "".join(lit), len(exps), glob, alone


def built_name(word: str) -> bool:
    """Can the raw command word ``word`` name a function its text does not spell?"""
    if word in ("[", "[["):
        return False
    lit, exps, glob, alone = _parts(word)
    if re.search(r"[^\w*?\[\]{},-]", lit):
        return False  # a path or file name: never a function name
    if glob or (exps and not alone):
        return True
    return not exps and bool(_NAME.fullmatch(lit)) and lit not in _NAME.findall(word)


def _unquoted(word: str) -> str | None:
    try:
        return " ".join(shlex.split(word))
    except ValueError:
        return None


def _strings_run(cmd: list[str]) -> list[str] | None:
    """The strings a command gives to a shell to run (a ``trap`` action, ``bash -c``'s
    argument); None when a shell reads text that cannot be known (stdin, ``<<<``,
    ``<(…)``, ``source /dev/stdin``)."""
    out: list[str] = []
    if cmd[0] == "trap" and len(cmd) > 1 and not cmd[1].startswith("-"):
        out.append(cmd[1])
    nxt = cmd[1] if len(cmd) > 1 else ""
    if (cmd[0].rsplit("/", 1)[-1] in _SHELLS or cmd[0] in ("source", ".")) and (
            nxt in ("", "-s", "-", "<<<") or nxt.startswith(("<" + SUB, "/dev/", "/proc/"))):
        return None
    for k, w in enumerate(cmd[:-1]):
        if w.rsplit("/", 1)[-1] in _SHELLS:
            j, c_flag = k + 1, False
            while j < len(cmd) and cmd[j].startswith("-"):
                c_flag = c_flag or bool(re.fullmatch(r"-[a-z]*c[a-z]*", cmd[j]))
                j += 1
            if c_flag and j < len(cmd):
                out.append(cmd[j])
    unq = [_unquoted(s) for s in out]
    return None if None in unq else [s for s in unq if s is not None]


# variables the shell itself sets to text a script may build (``"$_"`` runs the last
# argument, ``read`` without a name sets REPLY …): their value is always built
_SHELL_SET = frozenset({"_", "REPLY", "MAPFILE", "OPTARG", "BASH_REMATCH", "BASH_COMMAND",
                        "BASH_ARGV", "BASH_EXECUTION_STRING", "READLINE_LINE", "COMPREPLY"})
_DECLARE = frozenset({"declare", "typeset", "local", "export", "readonly"})
# builtins that store text they read or format: (the options taking an argument, the
# option whose argument is the variable)
_READS = {"read": ("adinNptu", "a"), "mapfile": ("dnOsuCc", ""),
          "readarray": ("dnOsuCc", ""), "printf": ("v", "v")}
_TARGET = re.compile(r"""(["']?)([A-Za-z_]\w*)(?:\[[^]]*\])?(\+?)=""")
_COPY = re.compile(r"\$\{?([A-Za-z_]\w*|[0-9@*])")
_DEFAULT = re.compile(r"\$\{([A-Za-z_]\w*):?=")  # ${X:=v} assigns v to X
ANY = "*"  # an assignment to a variable whose name is built: any variable


@dataclass(frozen=True)
class Calls:
    """What text's commands tell of the functions they can run (``mode`` True: a value
    used quoted, ``"$X"``; False: split into words and globbed, ``$X``)."""

    dynamic: bool = False  # a command runs a built name whatever the variables hold
    called: frozenset[tuple[str, bool]] = frozenset()  # (variable, mode) run as a command
    built: frozenset[tuple[str, bool]] = frozenset()  # (variable, mode) may hold a built name
    copies: frozenset[tuple[str, str, bool]] = frozenset()  # (X, Y, split): X holds Y's value

    def __or__(self, other: Calls) -> Calls:
        return Calls(self.dynamic or other.dynamic, self.called | other.called,
                     self.built | other.built, self.copies | other.copies)


def _var(word: str) -> str:
    """The variable a word names as a target (``"$n"``-like: :data:`ANY`)."""
    w = word.strip("\"'")
    return w if re.fullmatch(r"[A-Za-z_]\w*", w) else ANY


def _operands(args: list[str], with_arg: str, target: str) -> list[str]:
    """The variables a read-like builtin stores into: its operands (redirections
    dropped) and the argument of its option ``target``."""
    out: list[str] = []
    i = 0
    while i < len(args):
        w = args[i]
        if _REDIRECT.fullmatch(w):
            i += 1
        elif w.startswith("-") and len(w) > 1:
            if w[-1] in with_arg:
                if w[-1] == target and i + 1 < len(args):
                    out.append(_var(args[i + 1]))
                i += 1
        elif not with_arg.startswith("v"):  # printf's operands are its format and data
            out.append(_var(w))
        i += 1
    return out


def _assignment(word: str, nameref: bool = False) -> list[tuple[str, str | None, bool]]:
    """(variable, raw value or None when built, split) of an assignment word: an array
    literal gives each element (an unquoted one is split), ``X+=v`` a built value."""
    m = _TARGET.match(word)
    if m is None:
        if re.match(r"[\"']?\$[^=]*=", word):  # declare "$n=…": any variable
            return [(ANY, v, s) for _, v, s in _assignment("N=" + word.split("=", 1)[1])]
        return []
    name, value = m.group(2), word[m.end():].rstrip(m.group(1) or " ")
    if value.startswith("(") and value.endswith(")"):  # X[*]: any element, X: the first
        elems = [(e, not e.startswith('"')) for e in value[1:-1].split(_SEP) if e]
        return [(name, *e) for e in elems[:1]] + [(name + "[*]", *e) for e in elems]
    if nameref:
        return [(name, "$" + value if _var(value) != ANY else None, False)]
    return [(name, None if m.group(3) else value, False)]
def _defaults(word: str) -> list[tuple[str, str | None, bool]]:
    """The assignments ``${X:=v}`` (``${X=v}``) of a raw word."""
    out: list[tuple[str, str | None, bool]] = []
    for m in _DEFAULT.finditer(word):
        depth, j = 1, m.end()
        while j < len(word) and depth:
            depth += {"{": 1, "}": -1}.get(word[j], 0)
            j += 1
        out.append((m.group(1), word[m.end():j - 1], False))
    return out


def _assigned(full: list[str], cmd: list[str]) -> list[tuple[str, str | None, bool]]:
    """(variable, raw value or None when built, split) of each assignment a simple command
    makes (``full``: its words, ``cmd``: from its command word on)."""
    out = [a for w in full[:len(full) - len(cmd)] for a in _assignment(w)]
    out += [a for w in full for a in _defaults(w)]
    head = cmd[0] if cmd else ""
    if head in _DECLARE:
        nameref = any(re.fullmatch(r"-\w*n\w*", w) for w in cmd[1:])
        out += [a for w in cmd[1:] for a in _assignment(w, nameref)]
    elif head in _READS:
        out += [(v, None, False) for v in _operands(cmd[1:], *_READS[head])]
    elif head == "getopts" and len(cmd) > 2:
        out.append((_var(cmd[2]), None, False))
    elif head in ("for", "select") and len(cmd) > 1 and cmd[1] != "((":
        values = cmd[3:] if cmd[2:3] == ["in"] else ['"$@"']
        out += [(_var(cmd[1]), v, not v.startswith('"')) for v in values]
    return out


def _source(word: str, every: bool) -> str:
    """The variable a pure expansion ``word`` reads: ``Y``, or ``Y[*]`` (any element) for
    ``${Y[2]}``, or for ``${Y[@]}`` when ``every`` element counts (not only the first)."""
    m = _COPY.match(word.replace('"', ""))
    assert m is not None
    sub = re.search(r"\[([@*]|\d+)\]", word)
    whole = sub is not None and sub.group(1) in "@*"
    return m.group(1) + ("[*]" if sub and sub.group(1) != "0" and (every or not whole)
                         else "")


def _judge(target: str, value: str | None, split: bool) -> Calls:
    """What assigning the raw ``value`` (None: a built one) to ``target`` tells."""
    if value is None:
        return Calls(built=frozenset({(target, True), (target, False)}))
    lit, exps, glob, alone = _parts(value)
    if alone:
        return Calls(copies=frozenset({(target, _source(value, target.endswith("]")),
                                        split)}))
    # used quoted: a name unless a literal character no name has; split: any join or glob
    spelt = _NAME.findall(value)
    modes = {mode for mode, b in (
        (True, built_name(value)),
        (False, bool(exps) or glob or bool(re.search(r"[*?[]", lit)) or any(
            t not in spelt for t in _NAME.findall(lit)))) if b}
    return Calls(built=frozenset((target, mode) for mode in modes))


@lru_cache(maxsize=8192)
def calls(text: str) -> Calls:
    """What the commands of ``text`` tell of the functions they can run: a command word
    built at run time (dynamic), the variables run as commands, and what is assigned to
    variables (the strings a ``trap`` or ``bash -c`` runs included)."""
    if _OVERRIDE.search(text):
        return Calls(dynamic=True)
    cmds: list[list[str]] = []
    _Lexer(text, 0, cmds, cmds).run()
    out = Calls()
    for full in cmds:
        cmd = _lead_off(full)
        for target, value, split in _assigned(full, cmd):
            out |= _judge(target, value, split)
        if not cmd:
            continue
        if cmd[0] == "eval" or built_name(cmd[0]) or _TABLE.match(" ".join(cmd)):
            return Calls(dynamic=True)
        if _parts(cmd[0])[3]:
            out |= Calls(called=frozenset({(_source(cmd[0], False), cmd[0][0] == '"')}))
        strings = _strings_run(cmd)
        if strings is None:
            return Calls(dynamic=True)
        for string in strings:
            out |= calls(string)
    return out


def reaches_every_function(parts: Iterable[str]) -> bool:
    """Can text made of ``parts`` (shell text run in one shell and its children) run a
    function whose name it never spells: a command word built at run time, or a pure
    ``"$X"`` command word whose variable (or, through copies ``X=$Y``, one it copies) an
    assignment of the text, or the shell itself, can give a built name?"""
    c = Calls()
    for part in parts:
        c |= calls(part)
    if c.dynamic:
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
        if var.endswith("[*]"):  # any element: the first too
            todo.append((var[:-3], mode))
    return False
