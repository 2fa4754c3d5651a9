"""Which part of an environment a traced script can observe (for deduplicating traces).

Two traces of the same script are identical when the script cannot tell their
environments apart.  This module over-approximates what a script observes, from its
text and the text of every repository file it names (sourced libraries, helpers,
Python files it runs), transitively:

* a variable counts when its name occurs anywhere in that text (as ``$NAME``,
  ``${NAME…}`` or a bare word such as ``check_env_vars NAME``);
* when every occurrence is a pattern operator (``${NAME%%_*}``, ``${NAME#*/}``,
  ``${NAME:0:4}``), only the results of those operators count;
* top-level ``if [ … ]; then … else … fi`` blocks whose test reads only variables the
  script never assigns are pruned to the branch the environment takes;
* ``eval``, ``printenv``, ``declare -p``/``export -p``, ``compgen -v`` make every
  variable count, and so do names read by the recording stubs themselves
  (:data:`ALWAYS`, any name with a prefix in :data:`ALWAYS_PREFIXES`).

Pure: texts in, a key out.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from inferencex_tools import shellsyntax as S
from inferencex_tools.policy.reach import MAX_VALUES, alternatives
from inferencex_tools.policy.shellcalls import reaches_every_function

if TYPE_CHECKING:
    from tree_sitter import Node

ALWAYS = frozenset({"HF_HUB_CACHE", "HF_HOME", "PATH", "EVAL_ONLY", "RUN_EVAL"})
ALWAYS_PREFIXES = ("SGLANG_", "TLLM_", "DYN_", "AIPERF_", "VLLM_", "SYNTHETIC_",
                   "THINKING", "IXTRACE")
_DYNAMIC_PY = re.compile(r"environ\s*\.\s*(items|keys|values)\s*\(|in\s+os\.environ\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z_][\w-]*")  # a function name
# a file a script names: a script (.sh/.py/.bash: followed, its own names read) or any
# other file with a suffix (al.txt, site.env, tuned.yaml): a leaf of the closure, a
# recipe can read it at run time
_FILE_REF = re.compile(r"[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,9}\b")
_SCRIPTS = (".sh", ".py", ".bash")
# functions that change what a spelt name runs (``command -v x`` answers through them)
_OVERRIDES = frozenset({"command", "type", "builtin"})
NAME_MAX = 255  # bytes of one path component (Linux): no longer file name exists


@dataclass(frozen=True)
class Closure:
    """The text a script can run, reduced to the variable references that matter."""

    plain: frozenset[str]
    projections: dict[str, tuple[str, ...]] = field(default_factory=dict)
    everything: bool = False
    files: tuple[str, ...] = ()
    # plain names whose value the text only prints or tests for
    # presence (see :func:`inert_names`): jobs may share a trace across their values
    inert: frozenset[str] = frozenset()




# variables bash (or the sandbox) sets whatever the job's environment holds
_SHELL_SET = frozenset({"HOME", "PATH", "PWD", "OLDPWD", "TMPDIR", "USER", "LOGNAME",
                        "SHELL", "TERM", "LANG", "HOSTNAME", "RANDOM", "SRANDOM", "SECONDS",
                        "EPOCHSECONDS", "EPOCHREALTIME", "LINENO", "UID", "EUID", "PPID",
                        "SHLVL", "IFS", "OSTYPE", "HOSTTYPE", "MACHTYPE", "GROUPS",
                        "FUNCNAME", "PIPESTATUS", "DIRSTACK", "REPLY", "OPTARG", "OPTIND",
                        "COLUMNS", "LINES", "HISTFILE", "PS4", "_"})


class _Assignments:
    """What the assignments of shell texts make of their variables: per variable its
    value nodes (None: one the texts build from something not known — a command's
    output, ``+=``, ``read``, ``for``), the variables the texts name, and per variable
    the variables its values can be built from, transitively (:meth:`inputs`)."""

    def __init__(self, parts: tuple[str, ...]) -> None:
        assigns: dict[str, list[Node] | None] = {}
        named: set[str] = set()
        for part in parts:
            got, spelt = _part_assigns(part)
            named |= spelt
            for k, nodes in got.items():
                have = assigns.setdefault(k, [])
                if nodes is None or have is None:
                    assigns[k] = None
                else:
                    have.extend(nodes)
        self.assigns, self.named = assigns, frozenset(named)
        self._deps = {k: frozenset(S.text(c) for n in nodes for c in S.walk(n)
                                   if c.type == "variable_name")
                      for k, nodes in assigns.items() if nodes is not None}
        self._inputs: dict[str, tuple[str, ...]] = {}
        # (variable, exact, the job's values of its inputs) → its values
        self.values: dict[tuple[Any, ...], tuple[str, ...] | None] = {}

    def inputs(self, var: str) -> tuple[str, ...]:
        """``var`` and every variable its values can be built from (sorted)."""
        if var not in self._inputs:
            seen, todo = {var}, [var]
            while todo:
                for d in self._deps.get(todo.pop(), ()):
                    if d not in seen:
                        seen.add(d)
                        todo.append(d)
            self._inputs[var] = tuple(sorted(seen))
        return self._inputs[var]

    def _start(self, names: tuple[str, ...], env: Mapping[str, str], exact: bool
               ) -> dict[str, tuple[str, ...]]:
        """Before any assignment is followed: the job's values of the variables the
        texts can follow, and (``exact``) empty for one nothing sets."""
        assigns = self.assigns
        known: dict[str, tuple[str, ...]] = {
            k: (env[k],) for k in names if k in env and assigns.get(k, []) is not None}
        if exact:
            known.update({v: ("",) for v in names if v in self.named and v not in env
                          and v not in assigns and v not in _SHELL_SET
                          and not v.startswith("BASH")})
        return known

    def solve(self, names: tuple[str, ...], env: Mapping[str, str], exact: bool
              ) -> dict[str, tuple[str, ...]]:
        """The known values of ``names`` (closed under :meth:`inputs`): each value an
        assignment gives a variable (evaluated with the job's environment and the
        variables already known; every branch counts), or the job's value when the texts
        never assign it; rounds until nothing changes, at most six.  A closed set's
        values do not depend on the variables outside it, so this is the whole texts'
        answer for them."""
        assigns = self.assigns
        known = self._start(names, env, exact)
        built = [k for k in names if k in assigns]
        for _ in range(6):  # values built from other variables: until nothing changes
            new = {k: v for k, v in known.items() if k not in assigns}
            for var in built:
                nodes = assigns[var]
                vals = _values_of(nodes, known) if nodes is not None else None
                if vals is not None and var in env:
                    vals = tuple(sorted({*vals, env[var]}))
                if vals is not None and len(vals) <= MAX_VALUES:
                    new[var] = vals
            if new == known:
                break
            known = new
        return known


@lru_cache(maxsize=512)
def _assignments(parts: tuple[str, ...]) -> _Assignments:
    return _Assignments(parts)


class _Known(Mapping[str, tuple[str, ...]]):
    """The values a variable of shell text can hold, where they are known
    (:meth:`_Assignments.solve`), found when asked: a variable the text builds from
    something not known, or that neither the text nor the job sets, is missing — with
    ``exact`` (the job's environment is all there is) it is empty.  A variable's values
    are kept per the job's values of its inputs, for every job of the same texts."""

    def __init__(self, a: _Assignments, env: Mapping[str, str], exact: bool) -> None:
        self._a, self._env, self._exact = a, env, exact
        self._memo: dict[str, tuple[str, ...] | None] = {}

    def _value(self, var: str) -> tuple[str, ...] | None:
        if var in self._memo:
            return self._memo[var]
        a, env = self._a, self._env
        names = a.inputs(var)
        key = (var, self._exact, tuple(env.get(n) for n in names))
        if key in a.values:
            got = a.values[key]
        else:
            got = a.values[key] = a.solve(names, env, self._exact).get(var)
        self._memo[var] = got
        return got

    def __getitem__(self, var: str) -> tuple[str, ...]:
        got = self._value(var)
        if got is None:
            raise KeyError(var)
        return got

    def get(self, var: str, default: Any = None) -> Any:
        got = self._value(var)
        return default if got is None else got

    def __contains__(self, var: object) -> bool:
        return isinstance(var, str) and self._value(var) is not None

    def __iter__(self) -> Iterator[str]:
        every = {*self._env, *self._a.assigns, *(self._a.named if self._exact else ())}
        return iter(sorted(v for v in every if self._value(v) is not None))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _known(parts: Iterable[str], env: Mapping[str, str], exact: bool = False
           ) -> Mapping[str, tuple[str, ...]]:
    """The values the variables of shell text can hold (:class:`_Known`)."""
    return _Known(_assignments(tuple(parts)), env, exact)


@lru_cache(maxsize=4096)
def _part_assigns(part: str) -> tuple[dict[str, list[Node] | None], frozenset[str]]:
    """The assignments of shell text (variable → value nodes; None: one it cannot
    follow) and the variables it names."""
    syn = S.parse(part)
    if not syn.ok:
        return {}, frozenset()
    assigns: dict[str, list[Node] | None] = {}
    named: set[str] = set()
    for n in S.find(syn.root, "variable_name", "variable_assignment"):
        if n.type == "variable_name" and re.fullmatch(r"[A-Za-z_]\w*", S.text(n)):
            named.add(S.text(n))
        if n.type != "variable_assignment":
            continue
        name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
        if name is None or name.type != "variable_name":
            continue
        got = assigns.setdefault(S.text(name), [])
        if got is None or value is None or value.type == "array" or \
                any(c.type == "+=" for c in n.children):
            assigns[S.text(name)] = None
        else:
            got.append(value)
    for other in _assigned(syn.root):  # read, for, mapfile, declare …
        assigns.setdefault(other, None)
    return assigns, frozenset(named)


def _values_of(nodes: list[Node], known: Mapping[str, tuple[str, ...]]
               ) -> tuple[str, ...] | None:
    out: set[str] = set()
    for v in nodes:
        printed = _printed(v)
        if printed is not None:
            out |= printed
            continue
        for alt in alternatives(v, known):
            try:
                out.add(S.value(v, alt))
            except S.Unknown:
                return None
            if len(out) > MAX_VALUES:
                return None
    return tuple(sorted(out)) if len(out) <= MAX_VALUES else None


def _printed(v: Node) -> set[str] | None:
    """What a substitution made only of tests and ``printf``/``echo`` of literal words
    can print (``$([[ $X == mtp ]] && printf '_mtp' || printf '')``); None otherwise."""
    if v.type != "command_substitution":
        return None
    out: set[str] = set()
    for n in S.walk(v):
        if n.type in ("command_substitution", "list", "test_command", "binary_expression",
                      "unary_expression", "string", "raw_string", "string_content", "word",
                      "simple_expansion", "expansion", "variable_name", "test_operator",
                      "command_name", "extglob_pattern", "regex", "number") or \
                not n.is_named:
            continue
        if n.type != "command":
            return None
        words = S.command_words(n)
        if not words or S.text(words[0]) not in ("printf", "echo") or len(words) > 2:
            return None
        try:
            out.add("".join(S.value(w, {}) for w in words[1:]) if len(words) > 1 else "")
        except S.Unknown:
            return None
    return out or None


_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution",
                         "process_substitution", "arithmetic_expansion"})


def _assigned(root: Node) -> set[str]:
    """The variables a text assigns, reads into, loops over or unsets."""
    out: set[str] = set()
    for n in S.find(root, "variable_assignment", "for_statement", "command",
                    "declaration_command"):
        if n.type == "variable_assignment":
            name = n.child_by_field_name("name")
            if name is not None:
                out.add(S.text(name).split("[", 1)[0])
        elif n.type == "for_statement":
            var = n.child_by_field_name("variable")
            if var is not None:
                out.add(S.text(var))
        elif n.type in ("command", "declaration_command"):
            words = S.command_words(n) if n.type == "command" else n.named_children
            head = S.text(words[0]) if n.type == "command" and words else ""
            if head in ("read", "unset", "mapfile", "readarray", "getopts", "printf") or \
                    n.type == "declaration_command":
                out.update(S.text(w) for w in words if _WORD.fullmatch(S.text(w)))
    return out


@lru_cache(maxsize=1024)
def _assigned_of(text: str) -> frozenset[str]:
    syn = S.parse(text)
    return frozenset(_assigned(syn.root)) if syn.ok else frozenset()


def _arms(st: Node) -> list[tuple[Node | None, list[Node]]]:
    """The arms of an ``if`` statement: (test or None for ``else``, statements)."""
    arms: list[tuple[Node | None, list[Node]]] = []
    cond: Node | None = None
    body: list[Node] = []
    for c in st.children:
        if c.type in ("elif_clause", "else_clause"):
            break
        if not c.is_named or c.type == "comment":
            continue
        if cond is None:
            cond = c
        else:
            body.append(c)
    arms.append((cond, body))
    for c in st.children:
        kids = [k for k in c.named_children if k.type != "comment"]
        if c.type == "elif_clause" and kids:
            arms.append((kids[0], kids[1:]))
        elif c.type == "else_clause":
            arms.append((None, kids))
    return arms


def _taken(st: Node, env: Mapping[str, str], assigned: frozenset[str]
           ) -> list[Node] | None:
    """The statements of the arm of ``st`` that ``env`` takes (empty: none), or None
    when a test reads a variable the text assigns or is not a simple test."""
    from inferencex_tools.workflow.shell import condition_holds

    for cond, stmts in _arms(st):
        if cond is None:
            return stmts
        if set(_WORD.findall(S.text(cond))) & assigned:
            return None
        try:
            if condition_holds(cond, env):
                return stmts
        except ValueError:
            return None
    return []


def prune(text: str, env: Mapping[str, str]) -> str:
    """Drop the untaken arms of top-level ``if [ … ]; then … fi`` blocks whose tests read
    only variables the text never assigns (see module doc)."""
    syn = S.parse(text)
    if not syn.ok:
        return text
    return "\n".join(_pruned(syn.root.named_children, env, _assigned_of(text)))


def _pruned(stmts: list[Node], env: Mapping[str, str], assigned: frozenset[str]
            ) -> list[str]:
    out: list[str] = []
    for st in stmts:
        if st.type == "comment":
            continue
        chosen = _taken(st, env, assigned) if st.type == "if_statement" else None
        if chosen is None:
            out.append(S.text(st))
            continue
        # the tests themselves are read
        out.extend(S.text(c) for c, _ in _arms(st) if c is not None)
        out.extend(_pruned(chosen, env, assigned))
    return out


def _conditions(root: Node) -> frozenset[str]:
    """The names read by the tests of top-level ``if`` statements (pruning inputs)."""
    out: set[str] = set()
    for st in root.named_children:
        if st.type == "if_statement":
            for cond, _ in _arms(st):
                if cond is not None:
                    out |= set(_WORD.findall(S.text(cond)))
    return frozenset(out)


def _reads_everything(text: str) -> bool:
    """Does shell text read the whole environment (``eval``, ``printenv``, ``env`` or
    ``set`` alone, ``declare -p``/``export -p``, ``compgen -v``)?  Text the parser
    refuses does."""
    syn = S.parse(text)
    if not syn.ok:
        return True
    for n in S.find(syn.root, "command", "declaration_command"):
        if n.type == "command":
            words = [S.text(w) for w in S.command_words(n)]
            if not words:
                continue
            if words[0] in ("eval", "printenv") or (words[0] in ("env", "set") and
                                                    len(words) == 1):
                return True
            if words[0] == "compgen" and any(re.fullmatch(r"-[a-zA-Z]*v[a-zA-Z]*", w)
                                             for w in words[1:]):
                return True
        elif n.type == "declaration_command" and S.text(n.children[0]) in (
                "declare", "typeset", "export") and any(
                re.fullmatch(r"-[a-zA-Z]*p[a-zA-Z]*", S.text(w)) for w in n.named_children):
            return True
    return False


def _projections(text: str) -> dict[str, set[str]]:
    """``${NAME%%…}``, ``${NAME#…}``, ``${NAME:off:len}`` of a text: name → bodies."""
    out: dict[str, set[str]] = {}
    syn = S.parse(text)
    for n in S.find(syn.root, "expansion"):
        kids = [c for c in n.children if c.type not in ("${", "}")]
        if len(kids) >= 2 and kids[0].type == "variable_name" and \
                S.text(kids[1]) in ("%%", "%", "##", "#", ":") and \
                (S.text(kids[1]) != ":" or all(k.type in ("number", ":") for k in kids[2:])):
            out.setdefault(S.text(kids[0]), set()).add(S.text(n)[2:-1])
    return out


def _project(body: str, env: Mapping[str, str]) -> str:
    """The value of ``${body}`` with ``env`` (ValueError when it cannot be known)."""
    syn = S.parse(f"x=${{{body}}}")
    a = syn.root.named_children[0] if syn.ok and syn.root.named_children else None
    value = a.child_by_field_name("value") if a is not None else None
    if value is None:
        raise ValueError(body)
    return S.value(value, env)


class _Reach(NamedTuple):
    """The shell text a set of files can run: its top levels and the bodies of the
    functions they call (``parts``), its words, whether a file in it is dynamic, and the
    function names it spells."""

    text: str
    words: set[str]
    everything: bool
    parts: tuple[str, ...]
    names: frozenset[str]
    shell: tuple[str, ...]  # the parts that are shell text (Python files are not)


@dataclass(frozen=True)
class _Parsed:
    top: str
    funcs: dict[str, str]
    refs: frozenset[str]
    dynamic: bool  # Python: reads the whole environ; shell: the parser refuses it
    conditions: frozenset[str]  # names read by if tests (pruning inputs)


def _shell_file(text: str) -> _Parsed:
    """A shell file from its syntax tree: the text outside function definitions, each
    function's body, comments left out; a file the parser refuses is dynamic (whole)."""
    syn = S.parse(text)
    if not syn.ok:
        return _Parsed(text, {}, frozenset(_FILE_REF.findall(text)), True, frozenset())
    funcs = {name: "\n".join(S.without_comments(b) for b in bodies)
             for name, bodies in S.functions(syn).items()}
    whole = S.without_comments(syn.root)
    return _Parsed(S.without_comments(syn.root, cut=("function_definition",)), funcs,
                   frozenset(_FILE_REF.findall(whole)) | _read_names([text], {}, set(funcs)),
                   False, _conditions(syn.root))


_DATA_WORD = re.compile(r"[\w.][\w./+-]*")
MAX_DATA_TEXT = 1 << 20  # the part of a data file whose words are names


def data_names(text: str) -> frozenset[str]:
    """The files a data file a launch reads can name — a list a script reads names from
    (``while read f; do cat "$D/$f"; done < list``, ``xargs cat < list``, a JSON index a
    helper opens the entries of): every path-like word, as the name of a file (never of
    the files under a directory: :data:`.reach.FILE`)."""
    from inferencex_tools.policy.reach import FILE, tail

    out: set[str] = set()
    for w in _DATA_WORD.findall(text[:MAX_DATA_TEXT]):
        name = tail(w.rstrip("./"))
        if name and not name.startswith("*"):
            out.add(FILE + name)
    return frozenset(out)


def _read_names(parts: list[str], env: Mapping[str, str], defined: Iterable[str],
                exact: bool = False) -> frozenset[str]:
    """The file-name globs shell text can read that its syntax bounds (:mod:`.reach`:
    operands of reading commands, input redirections, ``for`` lists, commands run by
    path; a name computed whole is not among them)."""
    from inferencex_tools.policy.reach import shell_reads

    known = _known(parts, env, exact)
    funcs = frozenset(defined)
    out: set[str] = set()
    for part in parts:
        out |= shell_reads(part, known, funcs).names
    return frozenset(out)


@lru_cache(maxsize=1)
def _clients() -> frozenset[str]:
    from inferencex_tools.sandbox import CLIENT_SCRIPTS

    return frozenset(CLIENT_SCRIPTS)


class Analyzer:
    """Closures of repository scripts, cached (``read`` gives a file's text or None;
    ``by_name`` maps a base name to repository paths; ``changed``: the files that differ
    from the base, in PR mode — a benchmark client whose code is among them is no
    leaf, :meth:`client`)."""

    def __init__(self, read: Callable[[str], str | None],
                 by_name: Mapping[str, list[str]], *,
                 link: Callable[[str], str | None] | None = None,
                 changed: Iterable[str] = (), clients: bool = True,
                 modelled: Callable[[str], bool] | None = None) -> None:
        self.read, self.by_name, self.link = read, by_name, link
        self.changed = frozenset(changed)
        self.modelled = modelled or (lambda _path: False)
        self._leaf_clients = clients  # False: every file is read as it is (client())
        self._client_code: dict[str, tuple[str, ...] | None] = {}
        self._plain: Analyzer | None = None
        self._matches: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._dir_index: dict[str, set[str]] | None = None
        self._parsed: dict[str, _Parsed | None] = {}
        self._files: dict[str, tuple[str, ...]] = {}
        self._closures: dict[tuple[Any, ...], Closure] = {}
        self._pruned: dict[tuple[Any, ...], str] = {}
        self._reached: dict[tuple[Any, ...], _Reach] = {}
        self._by_text: dict[str, Closure] = {}
        self._data_words: dict[frozenset[str], frozenset[str] | None] = {}
        # reachable_files: per entry and read names; per reach (id: kept in _reached)
        self._reachable: dict[tuple[str, frozenset[str]], frozenset[str]] = {}
        self._unknown_calls: dict[tuple[tuple[str, ...], int], bool] = {}
        self._defines: dict[tuple[str, ...], frozenset[str]] = {}
        self._refs_of: dict[int, frozenset[str]] = {}
        self._targets: dict[str, str | None] = {}
        self._names: dict[str, tuple[tuple[str, str | None], ...]] = {}
        self._listed: dict[str, frozenset[str]] = {}
        self._files_listed: dict[str, frozenset[str]] = {}

    def parsed(self, path: str) -> _Parsed | None:
        if path not in self._parsed:
            text = self.read(path) if path.endswith(_SCRIPTS) else ""
            if text is None:
                self._parsed[path] = None
            elif not path.endswith(_SCRIPTS):  # data a script reads: a leaf, no text
                self._parsed[path] = _Parsed("", {}, frozenset(), False, frozenset())
            elif path.endswith(".py"):
                from inferencex_tools.policy.reach import python_reads

                if self._leaf_clients and self.client(path) is not None:
                    # a benchmark client the trace records instead of running (a leaf:
                    # what it imports or names is no launch's read; the file itself
                    # still is, and one that is not Python is not a client)
                    self._parsed[path] = _Parsed("", {}, frozenset(), False, frozenset())
                else:
                    reads = python_reads(text)
                    self._parsed[path] = _Parsed(text, {}, reads.names,
                                                 bool(_DYNAMIC_PY.search(text)), frozenset())
            else:
                self._parsed[path] = _shell_file(text)
        return self._parsed[path]

    def client(self, path: str) -> tuple[str, ...] | None:
        """The code of a benchmark client the trace may record instead of running
        (``sandbox.CLIENT_SCRIPTS``: python runs it by such a name): the file and the
        scripts its closure reaches, read as they are (what it imports, runs or names),
        none of them changed from the base.  None: ``path`` is no such client (another
        name, not Python, an import or read it computes), or its code changed — then
        it runs in the trace and its closure counts like any script's (a PR cannot hide
        a launch in a client or in what a client imports)."""
        if path not in self._client_code:
            code: tuple[str, ...] | None = None
            text = self.read(path) if path.rsplit("/", 1)[-1] in _clients() and \
                path.endswith(".py") else None
            if text is not None:
                from inferencex_tools.policy.reach import python_reads

                if python_reads(text).unbounded is None:
                    if self._plain is None:
                        self._plain = Analyzer(self.read, self.by_name, link=self.link,
                                               clients=False, modelled=self.modelled)
                    code = tuple(f for f in self._plain.files(path) if f.endswith(_SCRIPTS))
                    if self.changed & set(code):
                        code = None
            self._client_code[path] = code
        return self._client_code[path]

    def files(self, entry: str) -> tuple[str, ...]:
        if entry not in self._files:
            seen: list[str] = []
            known: set[str] = set()
            todo = [entry]
            while todo:
                path = todo.pop()
                if path in known:
                    continue
                seen.append(path)
                known.add(path)
                for q, t in self._named(path):
                    if q not in known:
                        todo.append(q)
                        if t is not None and t not in known:
                            todo.append(t)
            self._files[entry] = tuple(seen)
        return self._files[entry]

    def files_listed(self, entry: str) -> frozenset[str]:
        """:meth:`files` and what ``entry`` can read in any environment
        (:meth:`reachable_files`: with the files the data it reads can name, a list a
        script reads names from): the files it can reach at all."""
        if entry not in self._files_listed:
            runs = self.reachable_files(entry, {})
            # (what data an entry of unknown reads holds is not followed: its files are
            # the names its text holds, as before)
            self._files_listed[entry] = frozenset(self.files(entry)) | (
                runs or frozenset())
        return self._files_listed[entry]

    def _named(self, path: str) -> tuple[tuple[str, str | None], ...]:
        """The repository files a file names (sorted), each with its link's target:
        a script under a listed directory or matched by a glob is data there, not run
        (a script a launcher runs by a computed name is a job's entry)."""
        if path not in self._names:
            p = self.parsed(path)
            self._names[path] = () if p is None else tuple(
                (q, self.target(q)) for q in sorted(self.matching(p.refs, scripts=False)))
        return self._names[path]

    def closure(self, entry: str, env: Mapping[str, str]) -> Closure:
        files = self.files(entry)
        conds = sorted({n for f in files if (p := self.parsed(f)) for n in p.conditions})
        ck = (entry, tuple(env.get(n) for n in conds))
        if ck not in self._closures:
            self._closures[ck] = self._closure(files, env)
        return self._closures[ck]

    def reachable_shell_text(self, entry: str, env: Mapping[str, str]) -> str:
        """The shell text ``entry`` can run: top levels (branches pruned by ``env``) of it
        and the files it names, plus the bodies of the functions they call."""
        return self._reach(self._shell_files(entry), env).text

    def reachable_files(self, entry: str, env: Mapping[str, str], *, exact: bool = False
                        ) -> frozenset[str] | None:
        """The files of ``entry``'s closure it can read: itself, the files the shell text
        it can run (:meth:`reachable_shell_text`) names or reads (:func:`_read_names`:
        globs, a directory's files), the targets of symbolic links among them, and,
        transitively, what the Python files among them import or name; None when a file
        it reaches is dynamic (anything may run).  ``exact``: ``env`` is the whole
        environment (a launcher's): a variable nothing sets is empty."""
        shell = self._shell_files(entry)
        r = self._reach(shell, env)
        if self._calls_unknown(shell, r):
            return None
        defined = self._defined(shell)
        names = frozenset(self._file_refs(r) | _read_names(list(r.shell), env, defined,
                                                           exact))
        key = (entry, names)
        if key not in self._reachable:
            self._reachable[key] = self._reachable_from(entry, set(names))
        return self._reachable[key]

    def _reachable_from(self, entry: str, names: set[str]) -> frozenset[str]:
        own = self.parsed(entry)
        if entry.endswith(".py") and own is not None:
            names |= own.refs
        files = set(self.files(entry))
        out = {entry}
        listed: set[str] = set()  # the names data it reads holds: any file of the tree
        grew = True
        while grew:
            grew = False
            for f in sorted(((self.matching(frozenset(names)) & files) |
                             self._listed_files(frozenset(listed))) - out):
                out.add(f)
                grew = True
                t = self.target(f)
                if t is not None:
                    out.add(t)
                p = self.parsed(f)
                if f.endswith(".py") and p is not None:
                    names |= p.refs
                elif not f.endswith(_SCRIPTS):
                    listed |= self.listed(f)
        return frozenset(out)

    def _listed_files(self, names: frozenset[str]) -> set[str]:
        """The files names out of data can be (never one the check judges by its role:
        ``modelled``)."""
        return {f for f in self.matching(names) if not self.modelled(f)}

    def listed(self, path: str) -> frozenset[str]:
        """The files a data file a launch reads can name (:func:`data_names`)."""
        if path not in self._listed:
            self._listed[path] = data_names(self.read(path) or "")
        return self._listed[path]

    def _shell_files(self, entry: str) -> tuple[str, ...]:
        """The files of ``entry``'s closure that are not Python (shell text, data)."""
        return tuple(f for f in self.files(entry) if not f.endswith(".py"))

    def _calls_unknown(self, shell: tuple[str, ...], r: _Reach) -> bool:
        """Can the text call a function without spelling its name, or is a file of it
        dynamic (see :meth:`reachable_words`)?  Kept per reach (they live as long as
        this analyzer)."""
        key = (shell, id(r))
        if key not in self._unknown_calls:
            self._unknown_calls[key] = r.everything or reaches_every_function(r.shell) or \
                any(_OVERRIDES & (p.funcs.keys() if p else set())
                    for p in map(self.parsed, shell))
        return self._unknown_calls[key]

    def _defined(self, shell: tuple[str, ...]) -> frozenset[str]:
        if shell not in self._defines:
            self._defines[shell] = frozenset(
                n for f in shell if (p := self.parsed(f)) for n in p.funcs)
        return self._defines[shell]

    def _file_refs(self, r: _Reach) -> frozenset[str]:
        if id(r) not in self._refs_of:
            self._refs_of[id(r)] = frozenset(_FILE_REF.findall(r.text))
        return self._refs_of[id(r)]

    def observed(self, entry: str, env: Mapping[str, str], *, exact: bool = False
                 ) -> frozenset[str] | None:
        """The names ``entry`` can observe in ``env``: the words of the shell text of
        its closure (:meth:`closure` reads the same), of the Python files it can run and
        of the data files it can read (:meth:`reachable_files`; a template a program
        expands names variables no shell text spells) — not of every Python file its
        closure names (a name in a docstring, a string, a module no reached function
        runs).  None: it may read anything (a dynamic file, a read of the whole
        environment, a Python file that reads ``os.environ`` as a whole, a read set that
        is not known, a data file that cannot be read)."""
        runs = self.reachable_files(entry, env, exact=exact)
        if runs is None:
            return None
        shell = self._shell_files(entry)
        r = self._reach(shell, env)
        data = self._words_of_data(runs)
        if data is None or r.everything or any(_reads_everything(t) for t in r.shell):
            return None
        words = set(r.words) | data
        for f in sorted(runs):
            if f.endswith(".py"):
                p = self.parsed(f)
                if p is None or p.dynamic:
                    return None
                words.update(_WORD.findall(p.top))
        return frozenset(words)

    def _words_of_data(self, files: Iterable[str]) -> frozenset[str] | None:
        data = frozenset(f for f in files if not f.endswith(_SCRIPTS))
        if data not in self._data_words:
            texts = [self.read(f) for f in sorted(data)]
            self._data_words[data] = None if None in texts else frozenset(
                w for t in texts if t is not None for w in _WORD.findall(t))
        return self._data_words[data]

    def matching(self, names: frozenset[str], *, scripts: bool = True) -> set[str]:
        """The repository files a name glob (:func:`.reach.tail`: one or more last
        components) matches: by their path's end, or by a directory above them (a
        listing, a recursive copy).  ``scripts`` False: a script only when a name spells
        it (not through a glob or a directory)."""
        from inferencex_tools.policy.reach import suffix_match

        out: set[str] = set()
        for name in names:
            if name not in self._matches:
                last = name.rsplit("/", 1)[-1]
                glob = any(c in last for c in "*?[")
                dirs = self._dirs()
                if "[" not in last and len(last.replace("*", "").encode()) > NAME_MAX:
                    bases: list[str] = []  # no file or directory has so long a name
                    under_dirs: list[str] = []
                elif glob:
                    bases = fnmatch.filter(self.by_name, last)
                    under_dirs = fnmatch.filter(dirs, last)
                else:
                    bases, under_dirs = [last], [last]
                hit: set[str] = set()
                for base in bases:
                    hit.update(p for p in self.by_name.get(base, ()) if suffix_match(name, p))
                under: set[str] = set()
                for d in under_dirs:
                    under.update(f for f in dirs.get(d, ()) if suffix_match(name, f))
                self._matches[name] = (frozenset(hit), frozenset(under - hit))
            by_base, by_dir = self._matches[name]
            spelt = scripts or not any(c in name for c in "*?[")
            out |= {f for f in by_base | by_dir if (spelt and f in by_base) or
                    scripts or not f.endswith(_SCRIPTS)}
        return out

    def _dirs(self) -> dict[str, set[str]]:
        """Directory name → the files under a directory of that name."""
        if self._dir_index is None:
            self._dir_index = {}
            for paths in self.by_name.values():
                for f in paths:
                    for d in f.split("/")[:-1]:
                        self._dir_index.setdefault(d, set()).add(f)
        return self._dir_index

    def target(self, path: str) -> str | None:
        """The repository path a symbolic link leads to (None: not a link)."""
        if path not in self._targets:
            t = self.link(path) if self.link is not None else None
            self._targets[path] = None if t is None else \
                posixpath.normpath(posixpath.join(posixpath.dirname(path), t))
        return self._targets[path]

    def reachable_words(self, entry: str, env: Mapping[str, str]) -> frozenset[str] | None:
        """The names spelt in the shell text ``entry`` can run (:meth:`reachable_shell_text`)
        and in the job's environment values (a ``"$VAR"`` command word runs one): every
        function it can call is among them.  None (anything may run) when a file it names
        is dynamic, or when that text can call a function without spelling its name
        (:func:`~.shellcalls.reaches_every_function`: ``eval``, ``"${f}al"``, ``compgen``,
        ``X="${f}al"; "$X"`` …)."""
        shell = self._shell_files(entry)
        r = self._reach(shell, env)
        if self._calls_unknown(shell, r):
            return None
        return r.names | {w for v in env.values() for w in _NAME.findall(v)}

    def _reach(self, files: tuple[str, ...], env: Mapping[str, str]) -> _Reach:
        tops: list[str] = []
        # the text that can run: scripts (a data file a script reads is a leaf, no text)
        files = tuple(f for f in files if f.endswith(_SCRIPTS) and self.parsed(f) is not None)
        for path in files:
            p = self.parsed(path)
            assert p is not None
            tops.append(p.top if path.endswith(".py") else self._prune(path, p, env))
        rk = (files, tuple(tops))
        if rk not in self._reached:
            self._reached[rk] = self._reach_from(files, tops)
        return self._reached[rk]

    def _reach_from(self, files: tuple[str, ...], tops: list[str]) -> _Reach:
        funcs: dict[str, str] = {}
        everything = False
        for path in files:
            p = self.parsed(path)
            if p is None:
                continue
            everything = everything or p.dynamic
            for name, body in p.funcs.items():
                funcs[name] = funcs[name] + "\n" + body if name in funcs else body
        parts = list(tops)
        shell = [t for f, t in zip(files, tops, strict=True) if not f.endswith(".py")]
        reached: set[str] = set()
        words = set(_WORD.findall("\n".join(parts)))
        # function names keep their hyphens; bash calls this one for any unknown command
        names = set(_NAME.findall("\n".join(parts))) | {"command_not_found_handle"}
        while True:
            new = {n for n in names if n in funcs and n not in reached}
            if not new:
                break
            reached |= new
            for n in sorted(new):
                parts.append(funcs[n])
                shell.append(funcs[n])
                words |= set(_WORD.findall(funcs[n]))
                names |= set(_NAME.findall(funcs[n]))
        return _Reach("\n".join(parts), words, everything, tuple(parts), frozenset(names),
                      tuple(shell))

    def _prune(self, path: str, p: _Parsed, env: Mapping[str, str]) -> str:
        pk = (path, tuple(env.get(n) for n in sorted(p.conditions)))
        if pk not in self._pruned:
            self._pruned[pk] = prune(p.top, env)
        return self._pruned[pk]

    def _closure(self, files: tuple[str, ...], env: Mapping[str, str]) -> Closure:
        r = self._reach(files, env)
        whole, words = r.text, r.words
        done = self._by_text.get(whole)
        if done is not None and done.files == files:
            return done
        c = self._closure_of(files, r)
        if not c.everything and c.plain:
            segments: list[tuple[str, bool, bool]] = []
            funcs: dict[str, str] = {}
            for f in files:
                p = self.parsed(f)
                if p is None:
                    continue
                # a top-level echo prints to the trace's stdout only in the entry script
                # (a sourced file's output may be redirected where it is sourced)
                segments.append((p.top, False, False) if f.endswith(".py")
                                else (self._prune(f, p, env), f == files[0], True))
                for name, body in p.funcs.items():
                    funcs[name] = funcs[name] + "\n" + body if name in funcs else body
            segments.extend((body, False, True) for n, body in sorted(funcs.items())
                            if n in words)
            inert = inert_names(c.plain - ALWAYS, segments, funcs)
            c = Closure(c.plain, c.projections, c.everything, c.files, inert)
        self._by_text[whole] = c
        return c

    def _closure_of(self, files: tuple[str, ...], r: _Reach) -> Closure:
        whole, words = r.text, r.words
        everything = r.everything or any(_reads_everything(t) for t in r.shell)
        # a data file the closure names may name a variable a program expands (an
        # envsubst template, a sourced .env): observed, never inert
        data = self._words_of_data(files)
        everything = everything or data is None
        proj: dict[str, set[str]] = {}
        for t in r.shell:
            for name, bodies in _projections(t).items():
                proj.setdefault(name, set()).update(bodies)
        plain: set[str] = set()
        projections: dict[str, tuple[str, ...]] = {}
        for name in words:
            if name in proj:
                n_all = len(re.findall(rf"(?<![\w]){re.escape(name)}(?![\w])", whole))
                n_proj = sum(whole.count("${" + q + "}") for q in proj[name])
                if n_all == n_proj and (data is None or name not in data):
                    projections[name] = tuple(sorted(proj[name]))
                    continue
            plain.add(name)
        plain |= data or frozenset()
        return Closure(frozenset(plain), projections, everything, files)




INERT_VALUE = re.compile(r"0|[1-9][0-9]{0,17}")  # the values jobs may share a trace across
_OCC = re.compile(r"(?<![\w])[A-Za-z_]\w*")
_ASSIGN_OP = re.compile(r"(?:[-+*/%&|^]|<<|>>)?=(?!=)")
# where a command is still one simple statement: not in a pipeline, a list, a
# redirection, a substitution, a subshell or the background
_PLAIN = frozenset({"program", "compound_statement", "if_statement", "elif_clause",
                    "else_clause", "for_statement", "c_style_for_statement",
                    "while_statement", "do_group", "case_statement", "case_item"})


def presence_checkers(funcs: Mapping[str, str]) -> frozenset[str]:
    """Functions whose arguments are variable names they only test for being set
    (every indirect expansion ``${!name}`` is a ``-z``/``-n`` test, no nameref, no
    assignment through a name): they observe whether a variable is empty, not its value."""
    out = set()
    for name, body in funcs.items():
        syn = S.parse(body)
        if not syn.ok:
            continue
        indirect = [n for n in S.walk(syn.root)
                    if n.type == "expansion" and S.text(n).startswith("${!")]
        if indirect and all(_presence_test(n) for n in indirect) and \
                not _writes_by_name(syn.root):
            out.add(name)
    return frozenset(out)


def _presence_test(n: Node) -> bool:
    """Is the expansion ``n`` (``${!v}``, ``${!v:-}``) the operand of a ``-z``/``-n``?"""
    if not re.fullmatch(r"\$\{![A-Za-z_]\w*(?::-)?\}", S.text(n)):
        return False
    p = n.parent
    if p is not None and p.type == "string":
        p = p.parent
    return p is not None and p.type == "unary_expression" and \
        S.text(p.children[0]) in ("-z", "-n")


def _writes_by_name(root: Node) -> bool:
    """A nameref, ``printf -v``, ``read``, ``eval`` or ``unset``: a write through a name."""
    for n in S.walk(root):
        if n.type == "declaration_command" and any(
                re.fullmatch(r"-\w*n\w*", S.text(w)) for w in n.named_children):
            return True
        if n.type == "command":
            words = [S.text(w) for w in S.command_words(n)]
            if words and (words[0] in ("read", "eval", "unset") or
                          (words[0] == "printf" and "-v" in words[1:])):
                return True
    return False


@dataclass(frozen=True)
class _Simple:
    """A simple command that is a statement of its own: its command word, whether it is
    a top-level statement, whether it is an ``echo``/``printf`` without ``-v``, and per
    name occurring in it: (the name, is not assigned there, is a bare name)."""

    head: str
    top: bool
    echo: bool
    occs: tuple[tuple[str, bool, bool], ...]


@lru_cache(maxsize=1024)
def _simple_commands(text: str) -> tuple[tuple[_Simple, ...], str] | None:
    """The simple statements of shell text, and the text with them blanked out (where
    every other occurrence of a name is); None when the parser refuses it."""
    syn = S.parse(text)
    if not syn.ok:
        return None
    out: list[_Simple] = []
    holes: list[tuple[int, int]] = []
    for cmd in S.commands(syn.root, into_functions=True):
        if not _plain(cmd):
            continue
        words = S.command_words(cmd)
        line = S.text(cmd)
        occs = []
        for m in _OCC.finditer(line):
            before, after = line[:m.start()].rstrip(), line[m.end():].lstrip()
            unassigned = not (before.endswith(("++", "--")) or after.startswith(("++", "--"))
                              or _ASSIGN_OP.match(after))
            bare = not before.endswith(("$", "{")) and not after.startswith("}")
            occs.append((m.group(0), unassigned, bare))
        head = S.text(words[0]) if words else ""
        top = cmd.parent is not None and cmd.parent.type == "program"
        echo = head in ("echo", "printf") and not any(S.text(w) == "-v" for w in words)
        out.append(_Simple(head, top, echo, tuple(occs)))
        holes.append((cmd.start_byte, cmd.end_byte))
    rest = bytearray(syn.source)
    for a, b in holes:
        rest[a:b] = b" " * (b - a)
    return tuple(out), rest.decode("utf-8", "surrogateescape")


def _plain(cmd: Node) -> bool:
    """Is ``cmd`` one simple statement: no prefix assignment, substitution, redirection,
    pipe, list or background around or inside it?"""
    if any(c.type in ("variable_assignment", "file_redirect", "heredoc_redirect",
                      "herestring_redirect") for c in cmd.children):
        return False
    if any(n.type in ("command_substitution", "process_substitution") for n in S.walk(cmd)):
        return False
    nxt = cmd.next_sibling
    if nxt is not None and nxt.type in ("&", "|", "|&", "&&", "||"):
        return False
    p = cmd.parent
    while p is not None:
        if p.type not in _PLAIN:
            return False
        p = p.parent
    return True


def _exec_redirect(text: str) -> bool:
    """Does shell text send its own output elsewhere (``exec > file``)?"""
    syn = S.parse(text)
    for n in S.walk(syn.root):
        if n.type == "redirected_statement":
            body = n.child_by_field_name("body") or n.named_children[0]
            if body.type == "command" and [S.text(w) for w in S.command_words(body)] == \
                    ["exec"] and any(r.type == "file_redirect" and ">" in S.text(r)
                                     for r in n.children):
                return True
    return not syn.ok


def _judge_segment(text: str, may_print: bool, shell: bool,
                   checkers: frozenset[str], left: set[str], counts: dict[str, int]) -> None:
    """Judge the occurrences of the names still ``left`` in one segment (see
    :func:`inert_names`): discard a name whose occurrence can steer the script."""
    simple = _simple_commands(text) if shell else None
    rest = text if simple is None else simple[1]
    for name in left & set(_OCC.findall(rest)):
        left.discard(name)  # an occurrence outside a simple statement
        counts[name] = counts.get(name, 0) + 1
    for cmd in (simple[0] if simple else ()):
        prints = cmd.echo and cmd.top and may_print
        for name, unassigned, bare in cmd.occs:
            if name not in left:
                continue
            counts[name] = counts.get(name, 0) + 1
            if prints:  # printed, never assigned
                ok = unassigned
            elif cmd.head in checkers:  # a bare name: its presence is tested
                ok = bare
            else:
                ok = False
            if not ok:
                left.discard(name)


def inert_names(names: frozenset[str], segments: list[tuple[str, bool, bool]],
                funcs: Mapping[str, str]) -> frozenset[str]:
    """The names of ``names`` whose every occurrence in ``segments`` (text, may print,
    is shell) is one that cannot make the script's behaviour depend on the value, as long
    as the value is a plain decimal number (:data:`INERT_VALUE`, the same for every job in
    arithmetic, never empty):

    * a bare ``NAME`` in a call of a presence checker (:func:`presence_checkers`);
    * ``$NAME``/``${NAME}`` in an ``echo``/``printf`` that is a top-level statement of
      the entry script (its output goes to the trace's stdout, which only a failed
      trace reports).

    A command counts only when it is one simple statement (syntax tree): no pipe, list,
    redirection, command substitution or background, no prefix assignment; any other
    occurrence (a test, an assignment, a here-document, Python) does not."""
    checkers = presence_checkers(funcs)
    may_print = not any(_exec_redirect(t) for t, _, sh in segments if sh)
    left = set(names)
    counts: dict[str, int] = {}
    for text, top, shell in segments:
        _judge_segment(text, top and may_print, shell, checkers, left, counts)
    return frozenset(n for n in left if counts.get(n))


def closure(entry: str, read: Callable[[str], str | None], by_name: Mapping[str, list[str]],
            env: Mapping[str, str]) -> Closure:
    """One closure without a shared cache (see :class:`Analyzer`)."""
    return Analyzer(read, by_name).closure(entry, env)


INERT = "<inert>"  # a key's stand-in for the value of an inert variable


def key(env: Mapping[str, str], c: Closure, *extra: Any, soft: bool = False
        ) -> tuple[Any, ...]:
    """What of ``env`` the closure observes, as a hashable key.  ``soft``: the values of
    the closure's inert variables (:func:`inert_names`) count only as "a plain number"
    (jobs with equal soft keys behave alike as long as the trace succeeds)."""
    if c.everything:
        return (tuple(sorted(env.items())), *extra)
    items: list[tuple[str, Any]] = []
    for name in sorted(env):
        v = env[name]
        if soft and name in c.inert and INERT_VALUE.fullmatch(v) and \
                not (name in ALWAYS or name.startswith(ALWAYS_PREFIXES)):
            items.append((name, INERT))
        elif name in ALWAYS or name.startswith(ALWAYS_PREFIXES) or name in c.plain:
            items.append((name, v))
        elif name in c.projections:
            try:
                items.append((name, tuple(_project(p, env) for p in c.projections[name])))
            except ValueError:
                items.append((name, v))
    return (tuple(items), *extra)
