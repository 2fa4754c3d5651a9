"""Where multinode recipes come from, learned from the launchers' own text (pure).

A multinode row names its recipe with ``CONFIG_FILE=<path>[:override…]`` in
``additional-settings``.  The launchers decide where that path is resolved:

* **overlays** — ``cp -r[T] "$GITHUB_WORKSPACE/<vendored dir>" <dest>``: a recipe path
  under ``<dest>`` is the vendored file under ``<vendored dir>``.  It must exist unless
  ``<dest>`` lies inside the checkout of a clone (below) that applies to the row: an
  overlay adds files and removes none, so a recipe the vendored copy lacks is then read
  from that checkout (the ``cd`` lines of the script tell which directory a relative
  ``<dest>`` is in);
* **vendored recipe folders** — the top folder of every overlay source, and every
  repository folder a script joins with ``$CONFIG_FILE`` (or a variable derived from it),
  e.g. ``"$REPO_ROOT/benchmarks/multi_node/llm-d-recipes/${CONFIG_FILE}"``;
* **external sources** — ``git clone [--branch B] URL DIR`` followed by ``git checkout
  REF``: a recipe that is neither overlaid nor vendored is read from that checkout, at
  run time; ixtool cannot see it and reports a note naming the source.

Nothing here knows a key, a folder name or a repository: everything comes from the
scripts given.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

_WS_VAR = r"(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/)"
_WS_PATH = re.compile(_WS_VAR + r"(?P<rest>[A-Za-z0-9_.][\w./-]*)$")
_ASSIGN = re.compile(r"^\s*(?:export\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_CLONE = re.compile(r"\bgit\s+clone\b(?P<args>[^;&|]*)")
_CHECKOUT = re.compile(r"\bgit\s+checkout\s+(?:-q\s+|--quiet\s+|--detach\s+)*(?P<ref>[^\s;&|]+)")
_CP = re.compile(r"\bcp\s+(?P<args>-[A-Za-z]+(?:\s+-[A-Za-z]+)*\s+.*)$")
_CD = re.compile(r"(?<![\w.$/-])cd\s+(?P<dir>\"[^\"]*\"|'[^']*'|[^\s;&|)]+)")
_BRANCH_HEAD = re.compile(r"^\s*(?:if|elif)\b(?P<cond>.*)$")
_ELSE_FI = re.compile(r"^\s*(?:else|fi)\b")
# Every pattern is compiled once here (or once per set of names, _folder_pattern): a
# pattern per variable name overflowed re's cache and recompiled ~770 patterns per call
# on the real tree (0.07 CPU-s of learn's 0.07; the gate's configs stage paid it again).
_REF = re.compile(r"\$\{?([A-Za-z_]\w*)")  # a variable reference: $NAME / ${NAME…
_DEFAULT_OF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_WORD = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s]+")
_COMPARE = re.compile(
    r"""["']?\$\{?(?P<var>[A-Za-z_][A-Za-z0-9_]*)\}?["']?\s*(?P<op>==|!=|=)\s*["']?(?P<val>[^"'\s\]]+)["']?""")


@dataclass(frozen=True)
class Clone:
    """A repository a launcher clones at a ref (the ref the checkout ends on)."""

    url: str
    ref: str | None
    script: str
    line: int
    conditions: tuple[tuple[str, str, str], ...] = ()  # (var, op, value) guarding it
    dir: str = ""  # the checkout's directory as the script spells it (variables it knows expanded)

    def describe(self) -> str:
        at = f" at {self.ref}" if self.ref else " (default branch)"
        return f"{self.url}{at}"


@dataclass
class RecipeSources:
    overlays: list[tuple[str, str]] = field(default_factory=list)  # (dest prefix, repo dir)
    # vendored recipe folders: (prefix of CONFIG_FILE paths, repository folder it maps to)
    folders: list[tuple[str, str]] = field(default_factory=list)
    clones: dict[str, list[Clone]] = field(default_factory=dict)  # script → clones
    # overlay (dest prefix, repo dir) → the clones whose checkout its dest lies in
    into: dict[tuple[str, str], list[Clone]] = field(default_factory=dict)

    def launcher_clones(self, scripts: Iterable[str]) -> list[Clone]:
        out: list[Clone] = []
        for s in scripts:
            out.extend(self.clones.get(s, []))
        return out


@dataclass(frozen=True)
class Lookup:
    """Where one recipe path resolves: ``found`` (a repository file), ``missing`` (a
    vendored place it must be in), or ``external`` (only an external checkout has it)."""

    status: str  # "found" | "missing" | "external" | "unknown"
    tried: tuple[str, ...] = ()


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with backslash continuations joined, comments dropped: (first line no, text)."""
    out: list[tuple[int, str]] = []
    buf = ""
    start = 0
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw
        if not buf and line.lstrip().startswith("#"):
            continue
        if not buf:
            start = i
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((start, buf + line))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


def _unquote(word: str) -> str:
    return word.strip().strip("\"'")


def _literal_value(name: str, rhs: str) -> str | None:
    """The literal of ``VAR="literal"`` / ``VAR="${VAR:-literal}"``, else None."""
    val = _unquote(rhs.split(" #", 1)[0])
    dm = _DEFAULT_OF.fullmatch(val)
    if dm and dm.group(1) == name:
        val = dm.group(2)
    if "$" in val or "`" in val or " " in val:
        return None
    return val


def _envs(lines: list[tuple[int, str]]) -> list[dict[str, str]]:
    """The literal variables known at each logical line (assignments seen so far)."""
    env: dict[str, str] = {}
    out: list[dict[str, str]] = []
    for _, ln in lines:
        out.append(env)
        m = _ASSIGN.match(ln) if "=" in ln else None
        if m:
            val = _literal_value(m.group(1), m.group(2))
            env = dict(env)
            if val is None:
                env.pop(m.group(1), None)
            else:
                env[m.group(1)] = val
    return out


def _expand(word: str, env: Mapping[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return env.get(name, m.group(0))
    return _VAR.sub(sub, word)


def _repo_path(word: str) -> str | None:
    """``"$GITHUB_WORKSPACE/benchmarks/x"`` → ``benchmarks/x`` (a workspace-rooted path)."""
    w = _unquote(word)
    m = _WS_PATH.match(w)
    if not m or "$" in m.group("rest"):
        return None
    return m.group("rest").rstrip("/")


def _words(args: str) -> list[str]:
    return _WORD.findall(args)


def _config_vars(lines: list[tuple[int, str]]) -> set[str]:
    """CONFIG_FILE and the variables assigned from it (``_REL="${CONFIG_FILE%%:*}"``)."""
    names = {"CONFIG_FILE"}
    assigned = [(m.group(1), {r.group(1) for r in _REF.finditer(m.group(2))})
                for m in (_ASSIGN.match(ln) for _, ln in lines if "=" in ln) if m]
    for _ in range(3):
        for name, refs in assigned:
            if not refs.isdisjoint(names):
                names.add(name)
    return names


def _folders(lines: list[tuple[int, str]]) -> list[tuple[str, str]]:
    """Repository folders joined with the recipe path: ``$WS/<dir>/${CONFIG_FILE}`` or
    ``$WS/<dir>/${REL#<prefix>/}`` (the prefix is stripped first)."""
    pat = _folder_pattern(tuple(sorted(_config_vars(lines))))
    out: list[tuple[str, str]] = []
    for _, ln in lines:
        for m in pat.finditer(ln) if "$" in ln else ():
            out.append(((m.group("strip") or "").strip("/"), m.group("dir")))
    return out


@lru_cache(maxsize=64)
def _folder_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """``$WS/<dir>/${NAME…`` for any of ``names`` (one pattern per set of names)."""
    return re.compile(_WS_VAR + r"(?P<dir>[A-Za-z0-9_.][\w./-]*?)/\$\{?(?:"
                      + "|".join(names) + r")(?![A-Za-z0-9_])(?:#(?P<strip>[^}]*))?")


def _folder_of_overlay(dest: str, src: str) -> tuple[str, str] | None:
    """An overlay that keeps the layout (``recipes/a/b`` ← ``<dir>/a/b``) says that
    ``recipes/…`` paths map onto ``<dir>/…``: returns (``recipes``, ``<dir>``)."""
    d, s = dest.split("/"), src.split("/")
    n = 0
    while n < min(len(d), len(s)) and d[-1 - n] == s[-1 - n]:
        n += 1
    if n == 0 or (n == len(d) and n == len(s)):
        return None
    return "/".join(d[: len(d) - n]), "/".join(s[: len(s) - n])


def _branch_conditions(lines: list[tuple[int, str]], idx: int
                       ) -> tuple[tuple[str, str, str], ...]:
    """The comparisons of the if/elif headers enclosing logical line ``idx`` (found by
    indentation, innermost first; an ``else`` branch contributes none)."""
    conds: list[tuple[str, str, str]] = []
    indent = len(lines[idx][1]) - len(lines[idx][1].lstrip())
    for j in range(idx - 1, -1, -1):
        ln = lines[j][1]
        ind = len(ln) - len(ln.lstrip())
        if ind >= indent or not ln.strip():
            continue
        head = _BRANCH_HEAD.match(ln)
        if head is not None:
            conds.extend((m.group("var"), "!=" if m.group("op") == "!=" else "==",
                          m.group("val")) for m in _COMPARE.finditer(head.group("cond")))
            indent = ind
        elif _ELSE_FI.match(ln):
            indent = ind
    return tuple(conds)


_URL = re.compile(r"^(?:[a-z+]+://|git@)\S+$")


def _checkout_dir(pos: list[str]) -> str:
    """The directory of ``git clone URL [DIR]`` (git's default: the URL's last part)."""
    if len(pos) > 1:
        return pos[1].rstrip("/")
    return pos[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")


def _clones(script: str, lines: list[tuple[int, str]], envs: list[dict[str, str]]
            ) -> list[Clone]:
    out: list[Clone] = []
    for k, (no, ln) in enumerate(lines):
        m = _CLONE.search(ln) if "clone" in ln else None  # the literal first: most lines
        if not m:
            continue
        env = envs[k]
        words = [_expand(_unquote(w), env) for w in _words(m.group("args"))]
        branch = None
        pos: list[str] = []
        it = iter(range(len(words)))
        for i in it:
            w = words[i]
            if w in ("--branch", "-b") and i + 1 < len(words):
                branch = words[i + 1]
                next(it, None)
            elif w.startswith("--branch="):
                branch = w.split("=", 1)[1]
            elif w.startswith("-"):
                if w in ("--depth", "--origin", "-o"):
                    next(it, None)
            else:
                pos.append(w)
        if not pos or not _URL.match(pos[0]):
            continue
        ref = branch
        for _, nxt in lines[k + 1:]:
            if _CLONE.search(nxt) or _BRANCH_HEAD.match(nxt) or _ELSE_FI.match(nxt):
                break
            cm = _CHECKOUT.search(nxt)
            if cm and not cm.group("ref").startswith("-"):
                ref = _expand(_unquote(cm.group("ref")), env)
        out.append(Clone(pos[0], ref, script, no, _branch_conditions(lines, k),
                         _checkout_dir(pos)))
    return out


def _cd(cwd: str | None, word: str) -> str | None:
    """The working directory after ``cd <word>`` from ``cwd`` (None: not known)."""
    if not word or word in ("-", "~"):
        return None
    if word.startswith(("/", "$", "~")) or cwd is None:
        return word.rstrip("/") or "/"
    return posixpath.normpath(f"{cwd}/{word}")


def _cwds(lines: list[tuple[int, str]], envs: list[dict[str, str]]) -> list[str | None]:
    """The directory each logical line starts in, as the ``cd`` lines before it tell (read
    top to bottom, whichever branch they are in; None before any)."""
    out: list[str | None] = []
    cwd: str | None = None
    for k, (_, ln) in enumerate(lines):
        out.append(cwd)
        for m in _CD.finditer(ln) if "cd" in ln else ():
            cwd = _cd(cwd, _expand(_unquote(m.group("dir")), envs[k]))
    return out


def _overlays(lines: list[tuple[int, str]], envs: list[dict[str, str]]
              ) -> list[tuple[str, str, str | None]]:
    """(dest, vendored dir, the directory a relative dest is in) of every overlay."""
    out: list[tuple[str, str, str | None]] = []
    cwds = _cwds(lines, envs)
    for k, (_, ln) in enumerate(lines):
        m = _CP.search(ln) if "cp" in ln else None
        if not m:
            continue
        env = envs[k]
        cwd = cwds[k]
        for cm in _CD.finditer(ln[:m.start()]):  # `cd DIR && cp …` on one line
            cwd = _cd(cwd, _expand(_unquote(cm.group("dir")), env))
        words = [w for w in _words(m.group("args")) if not w.startswith("-")]
        words = [w for w in words if w not in ("||", "&&")]
        if len(words) < 2:
            continue
        src = _repo_path(_expand(_unquote(words[0]), env))
        dest = _unquote(_expand(_unquote(words[1]), env)).rstrip("/")
        if src is None or "$" in dest or dest.startswith("/") or not dest:
            continue
        out.append((dest, src, cwd))
    return out


def _holding(clones: list[Clone], cwd: str | None) -> list[Clone]:
    """The clones whose checkout directory is ``cwd`` or one of its parents."""
    if cwd is None:
        return []
    return [c for c in clones if c.dir and (cwd == c.dir or cwd.startswith(c.dir + "/"))]


def learn(scripts: Mapping[str, str]) -> RecipeSources:
    """Overlays, vendored recipe folders and clones of every script (path → text)."""
    src = RecipeSources()
    for path, text in sorted(scripts.items()):
        lines = _logical_lines(text)
        envs = _envs(lines)
        cl = _clones(path, lines, envs)
        if cl:
            src.clones[path] = cl
        ovl = _overlays(lines, envs)
        for dest, vendored, cwd in ovl:
            src.overlays.append((dest, vendored))
            held = _holding(cl, cwd)
            if held:
                into = src.into.setdefault((dest, vendored), [])
                into.extend(c for c in held if c not in into)
        found = [f for f in (_folder_of_overlay(d, s) for d, s, _ in ovl) if f is not None]
        for f in [*found, *_folders(lines)]:
            if f not in src.folders:
                src.folders.append(f)
    return src


def lookup(recipe: str, sources: RecipeSources, exists: Callable[[str], bool],
           clones: Iterable[Clone] = ()) -> Lookup:
    """Resolve one CONFIG_FILE path (its ``:override`` suffix already removed).
    ``clones``: those that apply to the row (:func:`matching`); a recipe under an
    overlay that its vendored copy lacks is ``external`` when the overlay copies into
    the checkout of one of them, else ``missing``."""
    rel = recipe.lstrip("./")
    under = [(d, s) for d, s in sources.overlays if rel == d or rel.startswith(d + "/")]
    if under:
        tried = tuple(dict.fromkeys(s + rel[len(d):] for d, s in under))
        if any(exists(t) for t in tried):
            return Lookup("found", tried)
        if exists(rel):
            return Lookup("found", (rel,))
        row = set(clones)
        if any(c in row for o in under for c in sources.into.get(o, ())):
            return Lookup("external", tried)
        return Lookup("missing", tried)
    cands = [rel]
    for prefix, folder in sources.folders:
        if not prefix:
            cands.append(f"{folder}/{rel}")
        elif rel.startswith(prefix + "/"):
            cands.append(f"{folder}/{rel[len(prefix) + 1:]}")
    tried = tuple(dict.fromkeys(cands))
    if any(exists(c) for c in tried):
        return Lookup("found", tried)
    return Lookup("external" if sources.clones else "unknown", tried)


def applicable(clones: list[Clone], known: Mapping[str, str]) -> list[Clone]:
    """The clones whose guarding comparisons agree with the row's known variables
    (MODEL_PREFIX, FRAMEWORK, …), most specific first; unguarded clones only when no
    guarded one matches.  One clone per source (URL and ref)."""
    return one_per_source(matching(clones, known))


def one_per_source(clones: Iterable[Clone]) -> list[Clone]:
    """The first clone of each source (URL and ref), in order."""
    seen: dict[str, Clone] = {}
    for c in clones:
        seen.setdefault(c.describe(), c)
    return list(seen.values())


def matching(clones: list[Clone], known: Mapping[str, str]) -> list[Clone]:
    """:func:`applicable`'s clones, all of them: also those of another script or line
    that clone the same source (the overlays each one's checkout receives differ)."""
    scored: list[tuple[int, Clone]] = []
    for c in clones:
        score = 0
        ok = True
        for var, op, val in c.conditions:
            if var not in known:
                continue
            if (known[var] == val) != (op == "=="):
                ok = False
                break
            score += 1
        if ok:
            scored.append((score, c))
    if not scored:
        return []
    best = max(s for s, _ in scored)
    return [c for s, c in scored if s == best]


def is_launch_script(path: str) -> bool:
    """The scripts :func:`learn` reads: ``runners/*.sh`` and ``benchmarks/multi_node/**/*.sh``."""
    if not path.endswith(".sh"):
        return False
    return (path.startswith("runners/") and path.count("/") == 1) or path.startswith(
        "benchmarks/multi_node/")


def follow_git_symlinks(scripts: dict[str, str]) -> dict[str, str]:
    """Scripts read as git blobs: a symlink's blob is its target's name; a target in the
    same folder among ``scripts`` is replaced by that script's text."""
    out = dict(scripts)
    for path, text in scripts.items():
        target = text.strip()
        if "\n" in target or not target.endswith(".sh") or target.startswith("/"):
            continue
        folder = path.rsplit("/", 1)[0]
        resolved = f"{folder}/{target}"
        if ".." not in target and resolved in scripts:
            out[path] = scripts[resolved]
    return out
