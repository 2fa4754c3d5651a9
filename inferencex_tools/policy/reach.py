"""What a launch can read: the file names shell and Python text can open, list or run,
from their syntax trees (the static half of the ``--base`` selection, docs/policy.md).

A text's reads are **names**: globs on a path's last component that a file (or, for a
listing or a recursive copy, a directory above it) must match.  They come from

* every name-like token of its literal text (``al.txt``, ``site.env`` — in strings,
  here-documents and comments of Python alike: ``_FILE_REF``);
* every word a reading command gets as an operand (``source``, ``bash``, ``python``,
  ``cat``, ``sed``, ``envsubst``, ``cp``, ``ls``, ``find``, a ``[ -f … ]`` test … :
  :data:`READERS`), an input redirection's target, a ``for`` list and a command run by
  path, as a pattern of the strings it can be (:func:`shellsyntax.pattern`: literal parts
  kept, the job's environment and variables assigned only literals substituted, anything
  else a ``*``).  Only the text after the last unknown part of the last component is
  sure (an unknown part may hold a ``/``): ``"${0%.sh}.al"`` reads ``*.al``,
  ``conf.d/*.env`` reads ``*.env``; a word that ends in an unknown part (``source "$f"``)
  reads **anything**.  A name matches a file at its end, or a directory above it (a
  listing, a recursive copy), except the operands of a program that fails on a directory
  (``cat``, ``source``, ``cp`` without ``-r``: :data:`FILE` names); a copy's destination
  is written, not read;
* the operands of other programs (servers, cluster tools) by the names they spell, and
  by a pattern when it ends in a literal suffix (``--config "$D/x.yaml"``);
* Python: its imports by module path (``import a.b`` and ``python -m a.b`` read
  ``a/__init__.py``, ``a/b.py``, ``a/b/__init__.py`` — under any directory, as
  ``sys.path`` may hold any: :func:`module_files`; never every ``b.py``), ``__import__``
  / ``import_module`` of a constant name alike; its string constants (``"al.txt"``; a
  leading-dot suffix ``".al"`` reads ``*.al``); ``__import__``, ``importlib``, ``exec``,
  ``runpy`` or a ``-m`` module built at run time read anything.

Pure: syntax in, names out.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from inferencex_tools import shellsyntax as S

if TYPE_CHECKING:
    from tree_sitter import Node

_FILE_REF = re.compile(r"[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,9}\b")
# programs whose operands are files (or directories) they read, list, run or test
READERS = frozenset({
    "source", ".", "bash", "sh", "dash", "zsh", "ksh", "python", "python3", "perl", "ruby",
    "node", "cat", "tac", "head", "tail", "less", "more", "sed", "awk", "gawk", "grep",
    "egrep", "fgrep", "rg", "jq", "yq", "envsubst", "cp", "rsync", "scp", "tar", "zip",
    "unzip", "ls", "find", "du", "tree", "readlink", "realpath", "stat", "file", "test",
    "diff", "cmp", "sha256sum", "sha1sum", "md5sum", "cksum", "wc", "sort", "uniq",
    "cut", "paste", "join", "base64", "xxd", "od", "hexdump", "strings", "dd", "patch",
    "eval",
})
# readers whose first operand is a program or pattern, not a file
_SCRIPTED = frozenset({"sed", "awk", "gawk", "grep", "egrep", "fgrep", "rg", "jq", "yq"})
_FILE_TESTS = frozenset({"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r",
                         "-s", "-u", "-w", "-x", "-G", "-L", "-N", "-O", "-S"})
# programs that read nothing their operands name (their operands are text or numbers)
_QUIET = frozenset({"echo", "printf", "local", "export", "declare", "typeset", "readonly",
                    "unset", "shift", "return", "exit", "set", "shopt", "true", "false",
                    ":", "sleep", "kill", "wait", "cd", "pushd", "popd", "let", "break",
                    "continue", "mkdir", "basename", "dirname", "seq", "nproc", "date",
                    "hostname", "id", "whoami", "uname", "trap", "ulimit", "umask",
                    "check_env_vars"})
# programs that fail on a directory operand and have no option that makes one a place to
# look for files (``patch -d``, ``jq -L``, ``perl -I`` do: not here): they read no file
# under a directory (``cat dir``, ``source dir``); their operands are :data:`FILE` names.
# ``cp``, ``scp`` and the greps join them unless an option of :data:`_RECURSIVE` is given
_FILE_READERS = frozenset({
    "source", ".", "bash", "sh", "dash", "zsh", "ksh", "cat", "tac", "head", "tail", "less",
    "more", "sed", "awk", "gawk", "envsubst", "wc", "sort", "uniq", "cut", "paste", "join",
    "base64", "xxd", "od", "hexdump", "strings", "dd", "sha256sum", "sha1sum", "md5sum",
    "cksum",
})
# the letters of their short options, and the long options, that read a directory's
# files (a cluster holding one counts, whatever it means there: more is read, not less)
_RECURSIVE = {"cp": "rRa", "scp": "r", "grep": "rRd", "egrep": "rRd", "fgrep": "rRd"}
_RECURSIVE_LONG = ("--recursive", "--archive", "--dereference-recursive", "--directories")
# copiers: their last operand is the destination, written, not read
_COPIERS = frozenset({"cp", "scp", "rsync"})
# a name only a file at its end matches, never a directory above the file (the operand
# of a program in :data:`_FILE_READERS`): this prefix, then the name
FILE = "\x01/"
_DATA_SUFFIX = re.compile(r"\.(?:ya?ml|json|toml|env|txt|cfg|conf|ini|sh|py|bash|patch|diff)$")
_LISTERS = frozenset({"ls", "find", "du", "tree"})


MAX_VALUES = 8  # values of a variable followed; more: not known


def alternatives(w: Node, known: Mapping[str, tuple[str, ...]]) -> list[S.Known]:
    """The environments a word can be evaluated in: one per combination of the values
    of the variables it reads (at most :data:`MAX_VALUES`; beyond, one in which none
    of them is known)."""
    names = sorted({S.text(c) for c in S.walk(w) if c.type == "variable_name"})
    combos: list[dict[str, str]] = [{}]
    for n in names:
        if n not in known:
            continue
        combos = [{**c, n: v} for c in combos for v in known[n]]
        if len(combos) > MAX_VALUES:
            return [S.Known()]
    return [S.Known(c) for c in combos]


@dataclass(frozen=True)
class Reads:
    """Names a text can read (globs on a path's last component), and, when it can read
    anything, why (``unbounded``)."""

    names: frozenset[str] = frozenset()
    unbounded: str | None = None

    def __or__(self, other: Reads) -> Reads:
        return Reads(self.names | other.names, self.unbounded or other.unbounded)


def tail(pattern: str) -> str | None:
    """What a path matching ``pattern`` (unknown parts marked ``shellsyntax.UNKNOWN``)
    is sure to end with, as a glob of one or more components: the components after the
    last unknown part (an unknown part may hold a ``/``), that component's text after
    it behind a ``*`` (``"${0%.sh}.al"`` → ``*.al``; ``"$D/conf.d/a.env"`` →
    ``conf.d/a.env``; a glob that ends it is kept: ``"$D"/al/*`` → ``al/*``, every file
    of a directory ``al``).  ``""``: the empty word, no file.  None when it can be
    anything (an unknown part at its end, ``*`` alone, ``.``, ``..``, ``/``)."""
    if pattern == "":
        return ""
    comps = pattern.split("/")
    marked = [i for i, c in enumerate(comps) if S.UNKNOWN in c]
    if marked:
        i = marked[-1]
        rest = comps[i][comps[i].rindex(S.UNKNOWN) + 1:]
        comps = (["*" + rest] if rest else []) + comps[i + 1:]
    if ".." in comps:
        comps = comps[len(comps) - comps[::-1].index(".."):]
    comps = [c for c in comps if c not in ("", ".")]
    if not any(c.strip("*") for c in comps):
        return None
    return "/".join(comps)


def suffix_match(name: str, path: str) -> bool:
    """Does ``path`` (or a directory above it: a listing, a recursive copy; not for a
    :data:`FILE` name) end with the components of the glob ``name``?  Where the path is
    shorter, its components count (a workspace prefix of an absolute name is no
    repository component) — not for a name a glob alone ends (``al/*``: only what is
    under a directory ``al``)."""
    only_file = name.startswith(FILE)
    want = name.removeprefix(FILE).split("/")
    comps = path.split("/")
    whole = not want[-1].strip("*")  # "al/*": a glob alone needs its directory named
    for end in range(len(comps), len(comps) - 1 if only_file else 0, -1):
        # the path, then each directory above it
        have = comps[:end]
        if whole and len(have) < len(want):
            break
        k = min(len(want), len(have))
        if all(fnmatch.fnmatchcase(h, w) for h, w in zip(have[-k:], want[-k:], strict=True)):
            return True
    return False


def _lead_off(words: list[Node]) -> list[Node]:
    """The words from the program run on (``env X=1``, ``timeout 5``, ``nohup``,
    ``exec``, ``command``, ``sudo`` and their options dropped)."""
    i = 0
    while i < len(words):
        w = S.text(words[i])
        if w in ("env", "nohup", "exec", "command", "builtin", "sudo", "time", "nice"):
            i += 1
            while i < len(words) and (S.text(words[i]).startswith("-") or
                                      re.match(r"[A-Za-z_]\w*=", S.text(words[i]))):
                i += 1
        elif w == "timeout":
            i += 1
            while i < len(words) and not re.fullmatch(r"[\d.]+[smhd]?", S.text(words[i])):
                i += 1
            i += 1
        else:
            break
    return words[i:]


Known = Mapping[str, tuple[str, ...]]


class _Site:
    """A word shell text reads as an operand (``reading``: of a reading command; else
    only a pattern ending in a literal data suffix counts; ``file``: of a program that
    reads no file under a directory, :data:`FILE` names), evaluated with the values of
    its own variables (``names``); what it reads is kept per those values, so jobs that
    differ only in other variables share the work."""

    __slots__ = ("file", "keep", "names", "reading", "seen", "word")

    def __init__(self, word: Node, reading: bool, file: bool, keep: object) -> None:
        self.word, self.reading, self.file, self.keep = word, reading, file, keep
        self.names = tuple(sorted({S.text(c) for c in S.walk(word)
                                   if c.type == "variable_name"}))
        self.seen: dict[tuple[tuple[str, ...] | None, ...], Reads] = {}

    def reads(self, env: Known) -> Reads:
        values = tuple(env.get(n) for n in self.names)
        hit = self.seen.get(values)
        if hit is None:
            if len(self.seen) > 4096:
                self.seen.clear()
            own = {n: v for n, v in zip(self.names, values, strict=True) if v is not None}
            hit = self.seen[values] = self._evaluate(own)
        return hit

    def _evaluate(self, env: Known) -> Reads:
        names: set[str] = set()
        for alt in alternatives(self.word, env):
            name = tail(S.pattern(self.word, alt, unknown=S.UNKNOWN))
            if name is None:
                return Reads(unbounded=f"{S.text(self.word)[:60]}") if self.reading \
                    else Reads()
            if name and (self.reading or _DATA_SUFFIX.search(name)):
                names.add(FILE + name if self.file else name)
        return Reads(frozenset(names))


# what shell text reads, in order: a constant, or a word read with the job's values
_Step = Reads | _Site


def _word(w: Node, out: list[_Step], *, reading: bool, file: bool = False) -> None:
    """The word ``w`` as an operand (see :class:`_Site`)."""
    text = S.text(w)
    if text.startswith("-") and "=" in text:  # --config=FILE
        text = text.split("=", 1)[1]
        syn = S.parse(f": {text}\n")
        cmd = next(S.commands(syn.root), None) if syn.ok else None
        ws = S.command_words(cmd)[1:] if cmd is not None else []
        if ws:
            out.append(_Site(ws[0], reading, file, syn))
        return
    if text.startswith("-"):
        return
    out.append(_Site(w, reading, file, None))


def _files_only(prog: str, args: list[str]) -> bool:
    """Does ``prog`` with the options ``args`` read no file under a directory operand?"""
    if prog in _FILE_READERS:
        return True
    letters = _RECURSIVE.get(prog)
    if letters is None:
        return False
    return not any(a.startswith(_RECURSIVE_LONG) or (
        a.startswith("-") and not a.startswith("--") and any(c in letters for c in a[1:]))
        for a in args)


def _destination(prog: str, operands: list[Node]) -> Node | None:
    """The operand a copier writes (its last, of two or more), None when it has none or
    a target-directory option (``cp -t DIR``) makes every operand other than the
    option's argument a source: then nothing is left out."""
    if prog not in _COPIERS:
        return None
    texts = [S.text(w) for w in operands]
    if prog == "cp" and any(t.startswith("--target-directory") or (
            t.startswith("-") and not t.startswith("--") and "t" in t) for t in texts):
        return None
    plain = [w for w, t in zip(operands, texts, strict=True) if not t.startswith("-")]
    return plain[-1] if len(plain) >= 2 else None


def _command(cmd: Node, out: list[_Step], defined: frozenset[str]) -> None:
    words = _lead_off(S.command_words(cmd))
    if not words:
        return
    head = S.text(words[0])
    prog = head.rsplit("/", 1)[-1]
    if "/" in head or "$" in head:  # run by path
        _word(words[0], out, reading=True)
    if prog in _QUIET or head in defined:
        return  # a function's arguments are read where its body uses them
    reading = prog in READERS or prog.startswith("python")
    operands = words[1:]
    if prog in _SCRIPTED:  # its program or pattern first
        first = next((i for i, w in enumerate(operands) if not S.text(w).startswith("-")),
                     None)
        if first is not None:
            operands = operands[:first] + operands[first + 1:]
    if prog.startswith("python"):
        _module_run(operands, out)
    file = _files_only(prog, [S.text(w) for w in operands])
    dest = _destination(prog, operands)
    for w in operands:
        if w is not dest:  # a copy's destination is written, not read
            _word(w, out, reading=reading, file=file)
    if prog in _LISTERS and not any(not S.text(w).startswith("-") for w in words[1:]):
        out.append(Reads(unbounded=f"line {S.line_of(cmd)}: {prog} of the working directory"))


def _module_run(operands: list[Node], out: list[_Step]) -> None:
    """``python -m a.b``: the files the module's import runs, and its ``__main__``
    (a module named by a computed word reads anything: :func:`_word`)."""
    texts = [S.text(w) for w in operands]
    for i, t in enumerate(texts[:-1]):
        if t == "-m" and re.fullmatch(r"[\w.]+", texts[i + 1]):
            mod = texts[i + 1]
            out.append(Reads(module_files(mod) | {mod.replace(".", "/") + "/__main__.py"}))
            return


def _redirect(r: Node, out: list[_Step]) -> None:
    op = next((S.text(c) for c in r.children if not c.is_named), "")
    if op not in ("<", "<>", "<&"):
        return
    dest = r.child_by_field_name("destination") or (r.named_children[-1]
                                                    if r.named_children else None)
    if dest is not None:
        _word(dest, out, reading=True, file=True)


def shell_reads(text: str, known: Known, defined: frozenset[str]) -> Reads:
    """The names shell ``text`` can read with the values of its variables ``known``
    (``defined``: the functions it can call, whose arguments are not read at the call).
    The text's reading words are found once (:func:`_steps`); each is evaluated with the
    values of the variables it holds, and kept per those values."""
    _syntax, steps = _steps(text, defined & _spelt(text))
    names: set[str] = set()
    unbounded: str | None = None
    for step in steps:
        got = step if isinstance(step, Reads) else step.reads(known)
        names |= got.names
        unbounded = unbounded or got.unbounded
    return Reads(frozenset(names), unbounded)


@lru_cache(maxsize=4096)
def _spelt(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[A-Za-z_][\w-]*", text))


@lru_cache(maxsize=4096)
def _steps(text: str, defined: frozenset[str]) -> tuple[S.Syntax, tuple[_Step, ...]]:
    """What ``text`` reads, in order: its name-like tokens, then, per command,
    redirection, file test and ``for`` list, the words it reads (:class:`_Site`) and
    the listings of the working directory; the refusal when the parser refuses it.
    With the syntax tree the words belong to."""
    syn = S.parse(text)
    if not syn.ok:
        return syn, (Reads(unbounded=f"the parser refuses it ({syn.problem})"),)
    out: list[_Step] = [Reads(frozenset(_tokens(S.without_comments(syn.root))))]
    for n in S.find(syn.root, "command", "file_redirect", "unary_expression",
                    "for_statement"):
        if n.type == "command":
            _command(n, out, defined)
        elif n.type == "file_redirect":
            _redirect(n, out)
        elif n.type == "unary_expression" and n.children and \
                S.text(n.children[0]) in _FILE_TESTS and len(n.children) == 2:
            _word(n.children[1], out, reading=True)
        elif n.type == "for_statement":
            var = n.child_by_field_name("variable")
            for v in n.named_children:
                if v.type not in ("do_group", "comment", "variable_name") and (
                        var is None or v.start_byte != var.start_byte):
                    _word(v, out, reading=True)
    return syn, tuple(out)  # the syntax lives as long as its words


def _tokens(text: str) -> set[str]:
    """Name-like tokens of a text (a file it names, whatever its suffix)."""
    return set(_FILE_REF.findall(text))


@lru_cache(maxsize=2048)
def python_reads(text: str) -> Reads:
    """The names a Python file can read: its imports, its string constants, anything
    when it imports or runs code named at run time."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return Reads(frozenset(_tokens(text)), "Python the parser refuses")
    names = set(_tokens(text))
    why: str | None = None
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and _runs_code(n):
            why = why or f"line {n.lineno}: code named at run time"
        names |= _node_reads(n)
    return Reads(frozenset(names | _built_names(tree)), why)


def _node_reads(n: ast.AST) -> set[str]:
    """The names one node of a Python file reads (:func:`python_reads`)."""
    names: set[str] = set()
    if isinstance(n, ast.Import):
        for a in n.names:
            names |= module_files(a.name)
    elif isinstance(n, ast.ImportFrom):
        stem = n.module or ""
        if stem:
            names |= module_files(stem, relative=bool(n.level))
        for a in n.names:  # `from p import x`: x is p's attribute or its submodule
            names |= module_files(f"{stem}.{a.name}" if stem else a.name,
                                  relative=bool(n.level))
    elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value:
        names.update(_python_string(n.value))
    elif isinstance(n, ast.Call) and (m := _imported_by_name(n)) is not None:
        names |= module_files(m.lstrip("."), relative=m.startswith(".") or
                              any(k.arg == "package" for k in n.keywords))
    if (after := _joined_after_computed(n)) is not None:
        names.update(_python_string(after, joined=True))
    return names


def module_files(dotted: str, *, relative: bool = False) -> frozenset[str]:
    """The files an import of the module ``dotted`` (``a.b.c``) can run, as path ends:
    the ``__init__.py`` of each package on the way (``a/__init__.py``, ``a/b/__init__.py``:
    a module with a dot after it is a package) and the module itself as a file or a
    package (``a/b/c.py``, ``a/b/c/__init__.py``): the import system looks a dotted name
    up by its path under some entry of ``sys.path``, never by its last component alone.
    ``relative`` (``from . import x``, a package argument): the package it is relative
    to is not named, so every ``__init__.py`` may run."""
    parts = [p for p in dotted.split(".") if p]
    out = {"__init__.py"} if relative else set()
    for i in range(1, len(parts) + 1):
        path = "/".join(parts[:i])
        out.add(path + "/__init__.py")
        if i == len(parts):
            out.add(path + ".py")
    return frozenset(out)


def _python_string(s: str, *, joined: bool = False) -> Iterable[str]:
    """The name a string constant can be (``joined``: the text that ends a string built
    at run time, whose start is not known: only what follows its last ``/`` is sure, a
    component it ends behind a ``*`` — when it ends like a file name, ``.txt``, or holds
    a ``/``: the ``s`` of ``f"{t:.1f}s"`` names nothing)."""
    s = s.strip()
    if "\n" in s or len(s) > 200 or not s:
        return ()
    if joined and "/" not in s and not _SUFFIX.search(s):
        return ()  # text after a value ("s" of f"{t:.1f}s"): no file suffix, no name
    if joined or (s.startswith(".") and re.fullmatch(r"\.[\w.-]+", s)):
        s = S.UNKNOWN + s  # a suffix joined to a computed stem
    name = tail(s)
    return (name,) if name is not None and re.fullmatch(r"[\w.*?-]+", name) else ()


_SUFFIX = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,9}$")  # ends like a file name (".txt")
_PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?"
                          r"[diouxXeEfFgGcrsa]|\{[^{}]*\}")  # a % or .format field


def _joined_after_computed(n: ast.AST) -> str | None:
    """The literal text that ends a string ``n`` builds from a computed part and text
    after it, or None: the operand of ``+=`` (``f += "_al.txt"``), a ``%`` or ``.format``
    template's text after its last placeholder.  Only that text is sure of the name the
    string can be (``+``, ``/`` and f-strings: :func:`_built_names`)."""
    if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and \
            isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
        return n.value.value
    if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and \
            isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
        return _after_placeholder(n.left.value)
    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
            n.func.attr == "format" and isinstance(n.func.value, ast.Constant) and \
            isinstance(n.func.value.value, str):
        return _after_placeholder(n.func.value.value)
    return None


_MAX_VALUES = 16  # strings one expression may build before it counts as unknown


def _built_names(tree: ast.AST) -> set[str]:
    """The names the strings a Python file builds can be: every ``+``, ``/`` (a
    ``Path``), f-string and ``os.path.join`` evaluated with the values of the names bound
    only to string constants (``n = "al"; open(f"{here}/{n}.dat")`` → ``al.dat``), any
    other part unknown; a name whose last component is not known whole counts when it
    ends like a file name (``*_al.txt``, see :func:`_python_string`)."""
    consts = _constant_names(tree)
    out: set[str] = set()
    for n in ast.walk(tree):
        if not (isinstance(n, ast.JoinedStr) or _joins(n) or
                (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add | ast.Div))):
            continue
        for v in _values(n, consts):
            last = v.rsplit("/", 1)[-1]
            if S.UNKNOWN in last:  # only the text after its unknown part is sure
                out.update(_python_string(last.rsplit(S.UNKNOWN, 1)[1], joined=True))
            else:
                out.update(_python_string(last))
    return out


def _joins(n: ast.AST) -> bool:
    return isinstance(n, ast.Call) and _call_name(n) == "join" and \
        isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Attribute) and \
        n.func.value.attr == "path" and bool(n.args)


def _values(e: ast.AST, consts: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The strings ``e`` can be, an unknown part marked ``S.UNKNOWN``."""
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return [e.value]
    if isinstance(e, ast.Name) and e.id in consts:
        return list(consts[e.id])
    if isinstance(e, ast.FormattedValue):
        return _values(e.value, consts) if e.format_spec is None and e.conversion == -1 \
            else [S.UNKNOWN]
    if isinstance(e, ast.JoinedStr):
        return _product([_values(v, consts) for v in e.values], "")
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add | ast.Div):
        sep = "/" if isinstance(e.op, ast.Div) else ""
        return _product([_values(e.left, consts), _values(e.right, consts)], sep)
    if _joins(e):
        assert isinstance(e, ast.Call)
        return _product([_values(a, consts) for a in e.args], "/")
    return [S.UNKNOWN]


def _product(parts: list[list[str]], sep: str) -> list[str]:
    out = [""]
    for i, vals in enumerate(parts):
        out = [a + (sep if i else "") + b for a in out for b in vals]
        if len(out) > _MAX_VALUES:
            return [S.UNKNOWN]
    return out


def _constant_names(tree: ast.AST) -> dict[str, tuple[str, ...]]:
    """Names every binding of which (in any scope of the file) is a string constant:
    their values.  A name bound any other way (another value, a loop, an argument, an
    import, a definition) is not among them."""
    values: dict[str, set[str]] = {}
    constant: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign | ast.AnnAssign) and isinstance(n.value, ast.Constant) \
                and isinstance(n.value.value, str):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                if isinstance(t, ast.Name):
                    values.setdefault(t.id, set()).add(n.value.value)
                    constant.add(id(t))
    other: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and \
                id(n) not in constant:
            other.add(n.id)
        elif isinstance(n, ast.arg):
            other.add(n.arg)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            other.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            other.add(n.name)
    return {k: tuple(sorted(v)) for k, v in values.items()
            if k not in other and len(v) <= _MAX_VALUES}


def _after_placeholder(template: str) -> str | None:
    found = list(_PLACEHOLDER.finditer(template))
    return template[found[-1].end():] if found else None


_IMPORTERS = ("__import__", "import_module")


def _imported_by_name(n: ast.Call) -> str | None:
    """The module a call of ``__import__`` / ``importlib.import_module`` with a constant
    name imports (its other calls are :func:`_runs_code`)."""
    if _call_name(n) in _IMPORTERS and n.args and isinstance(n.args[0], ast.Constant) and \
            isinstance(n.args[0].value, str):
        return n.args[0].value
    return None


def _call_name(n: ast.Call) -> str:
    """The name a call calls (``f(…)``, ``m.f(…)``), or ``""``."""
    f = n.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
        else ""


def _runs_code(n: ast.Call) -> bool:
    name = _call_name(n)
    if name in ("__import__", "import_module", "exec", "run_module", "run_path",
                "spec_from_file_location", "load_source"):
        return not (n.args and isinstance(n.args[0], ast.Constant))
    return False
