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
* bodies of functions the tracing shim replaces (:data:`REPLACED`) do not count;
* ``eval``, ``printenv``, ``declare -p``/``export -p``, ``compgen -v`` make every
  variable count, and so do names read by the recording stubs themselves
  (:data:`ALWAYS`, any name with a prefix in :data:`ALWAYS_PREFIXES`).

Pure: texts in, a key out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from inferencex_tools.policy.shellcalls import reaches_every_function
from inferencex_tools.sandbox import RECORD_FUNCTIONS, WAIT_FUNCTIONS

REPLACED = frozenset(WAIT_FUNCTIONS + RECORD_FUNCTIONS)
ALWAYS = frozenset({"HF_HUB_CACHE", "HF_HOME", "PATH", "EVAL_ONLY", "RUN_EVAL"})
ALWAYS_PREFIXES = ("SGLANG_", "TLLM_", "DYN_", "AIPERF_", "VLLM_", "SYNTHETIC_",
                   "THINKING", "IXTRACE")
_DYNAMIC = re.compile(r"(?:^|[;&|({`]|\$\(|\bthen|\bdo|\belse)\s*(eval|printenv|"
                      r"compgen\s+-[a-zA-Z]*v|declare\s+-[a-zA-Z]*p|export\s+-p|"
                      r"typeset\s+-[a-zA-Z]*p)\b", re.MULTILINE)
_DYNAMIC_PY = re.compile(r"environ\s*\.\s*(items|keys|values)\s*\(|in\s+os\.environ\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z_][\w-]*")  # a function name (split_functions)
_PROJ = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(%%|%|##|#|:[0-9 ]+(?::[0-9 ]+)?)([^}]*)\}")
_FUNC = re.compile(r"^(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\s*\)\s*\{?\s*$", re.MULTILINE)
# a file a script names: a script (.sh/.py/.bash: followed, its own names read) or any
# other file with a suffix (al.txt, site.env, tuned.yaml): a leaf of the closure, a
# recipe can read it at run time
_FILE_REF = re.compile(r"[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,9}\b")
_SCRIPTS = (".sh", ".py", ".bash")


@dataclass(frozen=True)
class Closure:
    """The text a script can run, reduced to the variable references that matter."""

    plain: frozenset[str]
    projections: dict[str, tuple[str, ...]] = field(default_factory=dict)
    everything: bool = False
    files: tuple[str, ...] = ()
    # plain names whose value the text only hands to recorders, prints or tests for
    # presence (see :func:`inert_names`): jobs may share a trace across their values
    inert: frozenset[str] = frozenset()


def strip_comments(text: str) -> str:
    """``text`` without ``#`` comments (outside quotes; a line whose quotes do not
    balance is kept whole)."""
    out: list[str] = []
    for line in text.splitlines():
        q: str | None = None
        cut = None
        prev = " "
        for i, ch in enumerate(line):
            if q:
                if ch == q and (q == "'" or prev != "\\"):
                    q = None
            elif ch in "'\"" and prev != "\\":
                q = ch
            elif ch == "#" and (prev.isspace() or i == 0):
                cut = i
                break
            prev = ch
        if cut is not None:
            out.append(line[:cut])
        else:
            out.append(line)
    return "\n".join(out)


def strip_functions(text: str, names: frozenset[str]) -> str:
    """``text`` without the bodies of the functions in ``names`` (column-0 ``}``)."""
    lines = text.splitlines()
    out: list[str] = []
    skip = False
    for line in lines:
        if skip:
            if line.rstrip() == "}" or line.startswith("}"):
                skip = False
            continue
        m = _FUNC.match(line)
        if m and m.group(1) in names and not line.rstrip().endswith("}"):
            skip = True
            continue
        out.append(line)
    return "\n".join(out)


def _assigned(text: str) -> set[str]:
    out = set(re.findall(r"(?:^|[\s;(&|])(?:export\s+|local\s+|declare\s+(?:-\w+\s+)?)?"
                         r"([A-Za-z_]\w*)\+?=", text))
    out |= set(re.findall(r"\bread\s+(?:-\w+\s+)*([A-Za-z_]\w*)", text))
    out |= set(re.findall(r"\bfor\s+([A-Za-z_]\w*)\s+in\b", text))
    out |= set(re.findall(r"\bunset\s+([A-Za-z_]\w*)", text))
    return out


_KW = re.compile(r"(?:^|[;&|(]|\bthen\b|\bdo\b|\belse\b)\s*(if|elif|else|fi)\b")
_HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_]\w*)['\"]?")


@lru_cache(maxsize=1024)
def _structure_of(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(k) for k in _structure(text.splitlines()))


@lru_cache(maxsize=1024)
def _assigned_of(text: str) -> frozenset[str]:
    return frozenset(_assigned(text))


def _structure(lines: list[str]) -> list[list[str]]:
    """Per line: the if/elif/else/fi keywords it holds as commands (heredoc bodies and
    quoted text excluded)."""
    out: list[list[str]] = []
    end: str | None = None
    for line in lines:
        if end is not None:
            out.append([])
            if line.strip() == end:
                end = None
            continue
        bare = _dequote(line)
        out.append([m.group(1) for m in _KW.finditer(bare)])
        h = _HEREDOC.search(line)
        if h:
            end = h.group(1)
    return out


def _block(kws: list[list[str]], i: int) -> tuple[list[tuple[int, int]], int] | None:
    """Arms ``(first line, stop line)`` and the ``fi`` line of the block opened on line
    ``i`` (None when the structure is not a plain multi-line if/elif/else/fi)."""
    if kws[i] != ["if"]:
        return None
    depth, arms, start = 1, [], i + 1
    for j in range(i + 1, len(kws)):
        k = kws[j]
        if depth == 1 and k[:1] in (["elif"], ["else"]):
            arms.append((start, j))
            start = j + 1
            if k[0] == "else" and len(k) > 1:
                return None
            continue
        for w in k:
            depth += 1 if w == "if" else -1 if w == "fi" else 0
        if depth == 0:
            if k != ["fi"]:
                return None
            arms.append((start, j))
            return arms, j
        if depth < 0:
            return None
    return None


def prune(text: str, env: Mapping[str, str]) -> str:
    """Drop the untaken arms of top-level ``if [ … ]; then … fi`` blocks whose tests read
    only variables the text never assigns (see module doc)."""
    from inferencex_tools.workflow.shell import test_words

    lines = text.splitlines()
    kws = [list(k) for k in _structure_of(text)]
    assigned = _assigned_of(text)
    out: list[str] = []
    i = 0
    depth = 0
    while i < len(lines):
        blk = _block(kws, i) if depth == 0 else None
        if blk is None:
            for w in kws[i]:
                depth += 1 if w == "if" else -1 if w == "fi" else 0
            depth = max(depth, 0)
            out.append(lines[i])
            i += 1
            continue
        arms, fi = blk
        heads = [i, *(a[1] for a in arms[:-1])]  # the if / elif / else lines
        chosen: tuple[int, int] | None = None
        decided = True
        for (a, b), h in zip(arms, heads, strict=True):
            m = re.match(r"^\s*(?:el)?if\s+(.*?);?\s*then\s*$", lines[h])
            if m is None:  # else
                chosen = (a, b)
                break
            cond = m.group(1)
            out.append(f"# {cond}")  # the tests themselves are read
            if set(_WORD.findall(cond)) & assigned:
                decided = False
                break
            try:
                taken = test_words(cond, env)
            except ValueError:
                decided = False
                break
            if taken:
                chosen = (a, b)
                break
        if not decided:
            out.append(lines[i])
            i += 1
            depth += 1
            continue
        if chosen is not None:
            out.extend(prune("\n".join(lines[chosen[0]:chosen[1]]), env).splitlines())
        i = fi + 1
    return "\n".join(out)


_ONE_LINE = re.compile(r"^(?:function\s+)?([A-Za-z_][\w:.-]*)\s*\(\s*\)\s*\{(.*)\}\s*$")
_HEADER = re.compile(r"^(?:function\s+)?([A-Za-z_][\w:.-]*)\s*(?:\(\s*\))?\s*([{(])?\s*$")


def split_functions(text: str) -> tuple[str, dict[str, str]]:
    """(top-level text, function name → body) of a shell text (column-0 definitions)."""
    lines = text.splitlines()
    top: list[str] = []
    funcs: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        one = _ONE_LINE.match(line)
        if one is not None:  # name() { body; }
            funcs[one.group(1)] = funcs.get(one.group(1), "") + "\n" + one.group(2)
            i += 1
            continue
        m = _HEADER.match(line)
        is_def = m is not None and ("()" in line.replace(" ", "") or line.startswith("function"))
        if not is_def or m is None:
            top.append(line)
            i += 1
            continue
        opener = m.group(2)
        j = i + 1
        if opener is None and j < len(lines) and lines[j].strip() in ("{", "("):
            opener = lines[j].strip()
            j += 1
        closer = "}" if opener != "(" else ")"
        k = j
        end: str | None = None
        while k < len(lines) and (end is not None or not lines[k].startswith(closer)):
            if end is not None:  # a heredoc's body: its text is not the function's end
                if lines[k].strip() == end:
                    end = None
            elif (h := _HEREDOC.search(lines[k])) is not None:
                end = h.group(1)
            k += 1
        if opener is None or k >= len(lines):
            top.append(line)
            i += 1
            continue
        name = m.group(1)
        funcs[name] = funcs.get(name, "") + "\n" + "\n".join(lines[j:k])
        i = k + 1
    return "\n".join(top), funcs


def _dequote(text: str) -> str:
    return re.sub(r"'[^'\n]*'|\"(?:[^\"\\\n]|\\.)*\"", "''", text)


class _Reach(NamedTuple):
    """The shell text a set of files can run: its top levels and the bodies of the
    functions they call (``parts``), its words, whether a file in it is dynamic, and the
    function names it spells."""

    text: str
    words: set[str]
    everything: bool
    parts: tuple[str, ...]
    names: frozenset[str]


@dataclass(frozen=True)
class _Parsed:
    top: str
    funcs: dict[str, str]
    refs: frozenset[str]
    dynamic: bool  # Python: reads the whole environ
    conditions: frozenset[str]  # names read by if tests (pruning inputs)


class Analyzer:
    """Closures of repository scripts, cached (``read`` gives a file's text or None;
    ``by_name`` maps a base name to repository paths)."""

    def __init__(self, read: Callable[[str], str | None],
                 by_name: Mapping[str, list[str]], *,
                 replaced: frozenset[str] = REPLACED) -> None:
        self.read, self.by_name, self.replaced = read, by_name, replaced
        self._parsed: dict[str, _Parsed | None] = {}
        self._files: dict[str, tuple[str, ...]] = {}
        self._closures: dict[tuple[Any, ...], Closure] = {}
        self._pruned: dict[tuple[Any, ...], str] = {}
        self._reached: dict[tuple[Any, ...], _Reach] = {}
        self._by_text: dict[str, Closure] = {}

    def parsed(self, path: str) -> _Parsed | None:
        if path not in self._parsed:
            text = self.read(path) if path.endswith(_SCRIPTS) else ""
            if text is None:
                self._parsed[path] = None
            elif not path.endswith(_SCRIPTS):  # data a script reads: a leaf, no text
                self._parsed[path] = _Parsed("", {}, frozenset(), False, frozenset())
            else:
                text = strip_comments(text)
                refs = frozenset(_FILE_REF.findall(text))
                if path.endswith(".py"):
                    self._parsed[path] = _Parsed(text, {}, refs, bool(_DYNAMIC_PY.search(text)),
                                                 frozenset())
                else:
                    top, fs = split_functions(text)
                    conds = set()
                    for m in re.finditer(r"^\s*(?:el)?if\s+(.*?);?\s*then\s*$", top,
                                         re.MULTILINE):
                        conds |= set(_WORD.findall(m.group(1)))
                    self._parsed[path] = _Parsed(top, fs, refs, False, frozenset(conds))
        return self._parsed[path]

    def _defined_in(self, files: tuple[str, ...]) -> dict[str, list[str]]:
        """Function name → the files of ``files`` that define it."""
        out: dict[str, list[str]] = {}
        for path in files:
            p = self.parsed(path)
            if p is not None:
                for name in p.funcs:
                    out.setdefault(name, []).append(path)
        return out

    def files(self, entry: str) -> tuple[str, ...]:
        if entry not in self._files:
            seen: list[str] = []
            todo = [entry]
            while todo:
                path = todo.pop()
                if path in seen:
                    continue
                seen.append(path)
                p = self.parsed(path)
                if p is None:
                    continue
                for ref in sorted(p.refs):
                    todo.extend(q for q in self.by_name.get(ref, []) if q not in seen)
            self._files[entry] = tuple(seen)
        return self._files[entry]

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
        return self._reach(tuple(f for f in self.files(entry) if not f.endswith(".py")),
                           env).text

    def reachable_files(self, entry: str, env: Mapping[str, str]) -> frozenset[str] | None:
        """The files of ``entry``'s closure it can run: itself, the files named in the
        shell text it can run (:meth:`reachable_shell_text`), and, transitively, the files
        the Python files among them name (Python is taken whole); None when a file it
        reaches is dynamic (anything may run)."""
        words = self.reachable_words(entry, env)
        if words is None:
            return None
        names = set(_FILE_REF.findall(self.reachable_shell_text(entry, env)))
        own = self.parsed(entry)
        if entry.endswith(".py") and own is not None:
            names |= own.refs
        files = self.files(entry)
        out = {entry}
        grew = True
        while grew:
            grew = False
            for f in files:
                if f not in out and f.rsplit("/", 1)[-1] in names:
                    out.add(f)
                    grew = True
                    p = self.parsed(f)
                    if f.endswith(".py") and p is not None:
                        names |= p.refs
        return frozenset(out)

    def reachable_words(self, entry: str, env: Mapping[str, str]) -> frozenset[str] | None:
        """The names spelt in the shell text ``entry`` can run (:meth:`reachable_shell_text`)
        and in the job's environment values (a ``"$VAR"`` command word runs one): every
        function it can call is among them.  None (anything may run) when a file it names
        is dynamic, or when that text can call a function without spelling its name
        (:func:`~.shellcalls.reaches_every_function`: ``eval``, ``"${f}al"``, ``compgen``,
        ``X="${f}al"; "$X"`` …)."""
        r = self._reach(tuple(f for f in self.files(entry) if not f.endswith(".py")), env)
        if r.everything or reaches_every_function(r.parts):
            return None
        return r.names | {w for v in env.values() for w in _NAME.findall(v)}

    def _reach(self, files: tuple[str, ...], env: Mapping[str, str]) -> _Reach:
        tops: list[str] = []
        for path in files:
            p = self.parsed(path)
            if p is not None:
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
                if name not in self.replaced:
                    funcs[name] = funcs.get(name, "") + body
        parts = list(tops)
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
                words |= set(_WORD.findall(funcs[n]))
                names |= set(_NAME.findall(funcs[n]))
        return _Reach("\n".join(parts), words, everything, tuple(parts), frozenset(names))

    def _prune(self, path: str, p: _Parsed, env: Mapping[str, str]) -> str:
        pk = (path, tuple(env.get(n) for n in sorted(p.conditions)))
        if pk not in self._pruned:
            self._pruned[pk] = prune(p.top, env)
        return self._pruned[pk]

    def _closure(self, files: tuple[str, ...], env: Mapping[str, str]) -> Closure:
        whole, words, everything = self._reach(files, env)[:3]
        done = self._by_text.get(whole)
        if done is not None and done.files == files:
            return done
        c = self._closure_of(files, whole, set(words), everything)
        if not c.everything and c.plain:
            segments: list[tuple[str, bool]] = []
            funcs: dict[str, str] = {}
            for f in files:
                p = self.parsed(f)
                if p is None:
                    continue
                # a top-level echo prints to the trace's stdout only in the entry script
                # (a sourced file's output may be redirected where it is sourced)
                segments.append((p.top, False) if f.endswith(".py")
                                else (self._prune(f, p, env), f == files[0]))
                for name, body in p.funcs.items():
                    if name not in self.replaced:
                        funcs[name] = funcs.get(name, "") + body
            segments.extend((body, False) for n, body in sorted(funcs.items()) if n in words)
            inert = inert_names(c.plain - ALWAYS, segments, funcs, self._defined_in(files))
            c = Closure(c.plain, c.projections, c.everything, c.files, inert)
        self._by_text[whole] = c
        return c

    def _closure_of(self, files: tuple[str, ...], whole: str, words: set[str],
                    everything: bool) -> Closure:
        if _DYNAMIC.search(_dequote(whole)):
            everything = True
        proj: dict[str, set[str]] = {}
        for m in _PROJ.finditer(whole):
            proj.setdefault(m.group(1), set()).add(m.group(0)[2:-1])
        plain: set[str] = set()
        projections: dict[str, tuple[str, ...]] = {}
        for name in words:
            if name in proj:
                n_all = len(re.findall(rf"(?<![\w]){re.escape(name)}(?![\w])", whole))
                n_proj = sum(whole.count("${" + q + "}") for q in proj[name])
                if n_all == n_proj:
                    projections[name] = tuple(sorted(proj[name]))
                    continue
            plain.add(name)
        return Closure(frozenset(plain), projections, everything, files)




INERT_VALUE = re.compile(r"0|[1-9][0-9]{0,17}")  # the values jobs may share a trace across
_LIB = "benchmarks/benchmark_lib.sh"  # the file whose recorders the sandbox swaps in
_META = re.compile(r"[|;&<>`]")
_INDIRECT = re.compile(r"\$\{!")
_PRESENCE_TEST = re.compile(r"-[zn]\s+\"?\$\{![A-Za-z_]\w*(?::-)?\}\"?")
_NAME_WRITE = re.compile(r"\b(?:declare|typeset|local|readonly|export)\s+-\w*n|"
                         r"\bprintf\s+-v|\bread\b|\beval\b|\bunset\b")
_OCC = re.compile(r"(?<![\w])[A-Za-z_]\w*")
_ASSIGN_OP = re.compile(r"(?:[-+*/%&|^]|<<|>>)?=(?!=)")
_EXEC_REDIRECT = re.compile(r"\bexec\s+[0-9]*>|\bexec\s+&>")


def presence_checkers(funcs: Mapping[str, str]) -> frozenset[str]:
    """Functions whose arguments are variable names they only test for being set
    (every indirect expansion ``${!name}`` is a ``-z``/``-n`` test, no nameref, no
    assignment through a name): they observe whether a variable is empty, not its value."""
    out = set()
    for name, body in funcs.items():
        n = len(_INDIRECT.findall(body))
        if n and n == len(_PRESENCE_TEST.findall(body)) and not _NAME_WRITE.search(body):
            out.add(name)
    return frozenset(out)


_STRUCT = re.compile(r"(?:^|[;&|({]|\bthen\b|\bdo\b|\belse\b)\s*(if|case|do|done|fi|esac|\{|\})"
                     r"(?=\s|;|$)")


@lru_cache(maxsize=1024)
def _logical_lines(text: str) -> tuple[tuple[str, str], ...]:
    """(line with its continuations joined, kind) for each logical line of ``text``;
    kind: "text" (a heredoc's or a multi-line string's body: no command), "top" (a
    top-level statement: not in a group, a subshell, a loop, a conditional or a
    ``case``, whose output could be redirected or captured) or "nested"."""
    out: list[tuple[str, str]] = []
    depth = paren = 0
    end: str | None = None
    quote: str | None = None
    for line in re.sub(r"\\\n", " ", text).splitlines():
        if end is not None:
            out.append((line, "text"))
            if line.strip() == end:
                end = None
            continue
        if quote is not None:
            out.append((line, "text"))
            if line.count(quote) % 2 == 1:
                quote = None
            continue
        bare = _dequote(line)
        q = next((c for c in ('"', "'") if bare.count(c) % 2 == 1), None)
        out.append((line, "top" if depth == 0 and paren == 0 and q is None else "nested"))
        if q is not None:
            quote = q
            bare = bare[:bare.index(q)]
        for w in _STRUCT.findall(bare):
            depth += 1 if w in ("if", "case", "do", "{") else -1
        paren = max(0, paren + bare.count("(") - bare.count(")"))
        depth = max(depth, 0)
        h = _HEREDOC.search(line)
        if h:
            end = h.group(1)
    return tuple(out)


@lru_cache(maxsize=1024)
def _occurrences(text: str) -> tuple[tuple[str, bool, bool,
                                           tuple[tuple[str, bool, bool], ...]], ...]:
    """Per logical line of ``text`` that holds a word: (its first word, is one simple
    command, is a top-level ``echo``/``printf`` without ``-v``, and per word: (the
    word, is not assigned there, is a bare name))."""
    out = []
    for line, kind in _logical_lines(text):
        occs = []
        for m in _OCC.finditer(line):
            before, after = line[:m.start()].rstrip(), line[m.end():].lstrip()
            unassigned = not (before.endswith(("++", "--")) or after.startswith(("++", "--"))
                              or _ASSIGN_OP.match(after))
            bare = not before.endswith(("$", "{")) and not after.startswith("}")
            occs.append((m.group(0), unassigned, bare))
        if not occs:
            continue
        head = line.split(None, 1)[0]
        raw_ok = kind != "text" and "$(" not in line.replace("$((", "") and \
            not _META.search(_dequote(line))
        echo_top = head in ("echo", "printf") and kind == "top" and \
            not re.search(r"\s-v", line)
        out.append((head, raw_ok, echo_top, tuple(occs)))
    return tuple(out)


def inert_names(names: frozenset[str], segments: list[tuple[str, bool]],
                funcs: Mapping[str, str], defined: Mapping[str, list[str]]) -> frozenset[str]:
    """The names of ``names`` whose every occurrence in ``segments`` (text, may print)
    is one that cannot make the script's behaviour depend on the value, as long as the
    value is a plain decimal number (:data:`INERT_VALUE`, the same for every job in
    arithmetic, never empty):

    * ``$NAME``/``${NAME}`` or a bare name in arithmetic, in the arguments of a call of
      a function the sandbox replaces by a recorder
      (:data:`~inferencex_tools.sandbox.RECORD_FUNCTIONS`, defined nowhere but in the
      library the sandbox swaps them in): the recorder keeps the arguments and returns 0;
    * a bare ``NAME`` in a call of a presence checker (:func:`presence_checkers`);
    * ``$NAME``/``${NAME}`` in an ``echo``/``printf`` that is a top-level statement of
      the entry script (its output goes to the trace's stdout, which only a failed
      trace reports).

    A line counts only when it is one simple command: no pipe, list, redirection,
    command substitution or backquote."""
    recorders = {f for f in RECORD_FUNCTIONS
                 if all(p == _LIB for p in defined.get(f, ()))}
    checkers = presence_checkers(funcs)
    may_print = not any(_EXEC_REDIRECT.search(t) for t, _ in segments)
    left = set(names)
    counts: dict[str, int] = {}
    for text, top in segments:
        for head, raw_ok, echo_top, occs in _occurrences(text):
            prints = echo_top and top and may_print
            for name, unassigned, bare in occs:
                if name not in left:
                    continue
                counts[name] = counts.get(name, 0) + 1
                if not raw_ok:
                    ok = False
                elif head in recorders or prints:  # recorded / printed, never assigned
                    ok = unassigned
                elif head in checkers:  # a bare name: its presence is tested
                    ok = bare
                else:
                    ok = False
                if not ok:
                    left.discard(name)
    return frozenset(n for n in left if counts.get(n))


def closure(entry: str, read: Callable[[str], str | None], by_name: Mapping[str, list[str]],
            env: Mapping[str, str], *, replaced: frozenset[str] = REPLACED) -> Closure:
    """One closure without a shared cache (see :class:`Analyzer`)."""
    return Analyzer(read, by_name, replaced=replaced).closure(entry, env)


INERT = "<inert>"  # a key's stand-in for the value of an inert variable


def key(env: Mapping[str, str], c: Closure, *extra: Any, soft: bool = False
        ) -> tuple[Any, ...]:
    """What of ``env`` the closure observes, as a hashable key.  ``soft``: the values of
    the closure's inert variables (:func:`inert_names`) count only as "a plain number"
    (jobs with equal soft keys behave alike as long as the trace succeeds)."""
    from inferencex_tools.workflow.shell import expand_param

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
                items.append((name, tuple(expand_param(p, env) for p in c.projections[name])))
            except ValueError:
                items.append((name, v))
    return (tuple(items), *extra)
