"""The layers of docs/architecture.md, checked on the source (AST, no imports).

* Nothing outside ``cli/`` imports ``inferencex_tools.cli``.
* Nothing outside ``cli/`` prints or touches the terminal (``print``, ``input``,
  ``sys.stdout``/``sys.stderr``/``sys.stdin``): core packages return results, the
  I/O adapters in ``io/`` return data or raise.
* Nothing outside ``cli/`` exits (``sys.exit``, ``SystemExit``, ``os._exit``) or
  imports typer: errors are :mod:`inferencex_tools.errors` exceptions.
* Processes run only in ``io/`` adapters (``subprocess``, GitPython's ``git`` module) and
  the sandbox's own adapter (``sandbox/isolation.py``).
* The sandbox is one boundary: outside ``sandbox/`` only the names
  ``inferencex_tools.sandbox`` exports (its ``__all__``) are imported, never its modules;
  the sandbox imports nothing of the judging code.
* jsonschema errors become issues/findings only in ``schemas.py`` (no ``iter_errors``
  elsewhere).
* Nothing outside ``cli/`` reads the process environment (``os.environ``,
  ``os.getenv``), except the ``io/`` adapters whose job it is (:data:`ENV_READERS`):
  the CLI reads it (``cli.common.actions_env``) and hands the values to the services.

Exceptions are listed below with their reason; TEMPORARY entries belong to work in
progress in another area and are deleted by its owner (a stale entry fails the test).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "inferencex_tools"

# io/ adapters that may read the environment, and what for.
ENV_READERS = {
    "io/actions.py": "the GitHub Actions runner's variables ($GITHUB_*) and $IXTOOL_PR",
    "io/github.py": "the API credentials and root ($GITHUB_TOKEN/$GH_TOKEN, $GITHUB_API_URL)",
    "io/gitops.py": "the user's git identity/environment for git processes that act as "
                    "the user (commit, push)",
    "io/gitcat.py": "the environment of the git processes of io/gitcat.py and io/git.py "
                    "(with user/system configuration neutralised)",
}
# Not part of ixtool's runtime: the program the sandbox runs in place of the
# GPU tools, the trace server it runs inside its namespaces and the subreaper of
# unsandboxed traces (standalone scripts run by path); printing, reading the
# environment and exiting is what they are for.
NOT_IXTOOL = {"sandbox/_stubs.py", "sandbox/_sandboxd.py", "sandbox/_reaper.py"}
# Modules that run processes outside io/: the sandbox's own adapter.
PROCESS_ADAPTERS = {"sandbox/isolation.py"}
# TEMPORARY: work in progress in other areas; the owner deletes the entry.
TEMPORARY: dict[str, set[str]] = {
    "environ": set(),
    "terminal": set(),
    "process": set(),
    "schema": set(),
}


def _modules() -> list[Path]:
    """Every module but the CLI layer (``cli/`` and the ``python -m`` entry point)."""
    return sorted(p for p in PKG.rglob("*.py")
                  if p.relative_to(PKG).parts[0] not in ("cli", "__main__.py"))


def _violations(path: Path) -> dict[str, list[str]]:
    return _violations_in(path.read_text(encoding="utf-8"), str(path))


def _violations_in(source: str, filename: str) -> dict[str, list[str]]:
    tree = ast.parse(source, filename=filename)
    found: dict[str, list[str]] = {"cli": [], "environ": [], "terminal": [], "exit": [],
                                   "process": [], "schema": []}
    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "inferencex_tools.cli" or node.module.startswith(
                    "inferencex_tools.cli."):
                found["cli"].append(where)
            if node.module == "os" and any(a.name in ("environ", "getenv", "environb")
                                           for a in node.names):
                found["environ"].append(where)
            if node.module == "sys" and any(a.name in ("stdout", "stderr", "stdin")
                                            for a in node.names):
                found["terminal"].append(where)
            if node.module.split(".")[0] in PROCESS_MODULES:
                found["process"].append(f"{where}: {node.module}")
            if node.module == "typer" or node.module.startswith("typer."):
                found["exit"].append(f"{where}: typer")
        elif isinstance(node, ast.Import):
            if any(a.name.startswith("inferencex_tools.cli") for a in node.names):
                found["cli"].append(where)
            if any(a.name.split(".")[0] in PROCESS_MODULES for a in node.names):
                found["process"].append(f"{where}: import")
            if any(a.name == "typer" or a.name.startswith("typer.") for a in node.names):
                found["exit"].append(f"{where}: typer")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in ("environ", "getenv", "environb",
                                                       "putenv"):
                found["environ"].append(f"{where}: os.{node.attr}")
            if node.value.id == "sys" and node.attr in ("stdout", "stderr", "stdin"):
                found["terminal"].append(f"{where}: sys.{node.attr}")
            if (node.value.id, node.attr) in (("sys", "exit"), ("os", "_exit")):
                found["exit"].append(f"{where}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Name) and node.id == "SystemExit":
            found["exit"].append(f"{where}: SystemExit")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("print", "input"):
            found["terminal"].append(f"{where}: {node.func.id}()")
        if isinstance(node, ast.Attribute) and node.attr == "iter_errors":
            found["schema"].append(f"{where}: .iter_errors")
    return found


PROCESS_MODULES = ("subprocess", "git", "pty", "multiprocessing")
MODULES = _modules()


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_layers(path: Path) -> None:
    rel = path.relative_to(PKG).as_posix()
    if rel in NOT_IXTOOL:
        return
    found = _violations(path)
    assert not found["cli"], f"{rel} imports inferencex_tools.cli: {found['cli']}"
    if rel not in ENV_READERS and rel not in TEMPORARY["environ"]:
        assert not found["environ"], (
            f"{rel} reads the environment ({found['environ']}): take the value as a "
            "parameter; the CLI reads it (cli.common.actions_env / io.actions)")
    assert not found["exit"], (
        f"{rel} exits ({found['exit']}): raise an inferencex_tools.errors exception")
    if not rel.startswith("io/") and rel not in PROCESS_ADAPTERS \
            and rel not in TEMPORARY["process"]:
        assert not found["process"], (
            f"{rel} runs processes ({found['process']}): that is an io/ adapter's job")
    if rel != "schemas.py" and rel not in TEMPORARY["schema"]:
        assert not found["schema"], (
            f"{rel} turns jsonschema errors into findings by hand ({found['schema']}): "
            "use schemas.schema_issues / schema_findings")
    if rel not in TEMPORARY["terminal"]:
        assert not found["terminal"], (
            f"{rel} prints or touches the terminal ({found['terminal']}): return the "
            "text/result; cli/ writes it")


def test_exceptions_are_still_needed() -> None:
    """Every exception names an existing module that still needs it."""
    for rel in [*ENV_READERS, *NOT_IXTOOL, *PROCESS_ADAPTERS]:
        assert (PKG / rel).is_file(), rel
    for rel in PROCESS_ADAPTERS:
        assert _violations(PKG / rel)["process"], f"{rel} runs no process: delete it"
    for kind, rels in TEMPORARY.items():
        for rel in rels:
            path = PKG / rel
            assert path.is_file() and _violations(path)[kind], (
                f"{rel} no longer needs its TEMPORARY {kind!r} exception: delete it")


def test_the_checker_sees_violations() -> None:
    """The checker itself: a module doing everything wrong is caught on each count."""
    bad = ("import os, sys, subprocess\nfrom inferencex_tools.cli.common import emit\n"
           "errors = list(v.iter_errors(doc))\n"
           "def f():\n    print(os.environ['X'], file=sys.stderr)\n    sys.exit(1)\n")
    found = _violations_in(bad, "<probe>")
    assert all(found.values()), found


def _import_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports (function-level imports included)."""
    mods: dict[str, Path] = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(("inferencex_tools", *p.relative_to(PKG).with_suffix("").parts))
        mods[name.removesuffix(".__init__")] = p
    graph: dict[str, set[str]] = {}
    for name, p in mods.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    targets.add(sub if sub in mods else node.module)
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
        graph[name] = {t for t in targets if t in mods and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others (lazy imports
    inside functions count: they hide a cycle, they do not remove it)."""
    graph = _import_graph()
    assert "inferencex_tools.launch.render" in graph
    assert _cycles(graph) == []
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_io_adapters_are_held_to_the_same_rules() -> None:
    """io/ adapters are checked like the core: they never import the CLI, never print or
    touch the terminal, never exit (reading the environment is the one thing some may do,
    listed in ENV_READERS)."""
    io_modules = [p for p in MODULES if p.relative_to(PKG).parts[0] == "io"]
    assert len(io_modules) >= 8, "io/ adapters are missing from the layering check"
    for path in io_modules:
        found = _violations(path)
        rel = path.relative_to(PKG).as_posix()
        assert not found["cli"] and not found["terminal"] and not found["exit"], (rel, found)


SANDBOX = "inferencex_tools.sandbox"


def _sandbox_public() -> set[str]:
    """The names ``inferencex_tools.sandbox`` exports (its ``__all__``, read from the AST)."""
    tree = ast.parse((PKG / "sandbox" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {str(ast.literal_eval(e)) for e in node.value.elts}  # type: ignore[attr-defined]
    raise AssertionError("inferencex_tools/sandbox/__init__.py has no __all__")


def _sandbox_reach(source: str, public: set[str]) -> list[str]:
    """Where a module outside the sandbox reaches inside it: an import of one of its
    modules, or of a name it does not export."""
    bad: list[str] = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith(SANDBOX + "."):
                bad.append(f"{where}: from {node.module}")
            elif node.module == SANDBOX:
                bad += [f"{where}: {a.name}" for a in node.names if a.name not in public]
            elif node.module == "inferencex_tools" and any(a.name == "sandbox"
                                                           for a in node.names):
                bad.append(f"{where}: the sandbox package as a module")
        elif isinstance(node, ast.Import):
            bad += [f"{where}: import {a.name}" for a in node.names
                    if a.name == SANDBOX or a.name.startswith(SANDBOX + ".")]
    return bad


def test_the_sandbox_is_reached_only_through_its_public_names() -> None:
    """The judging code (policy/, launch/, review/ …) uses the sandbox's public result
    types and functions only; nothing imports ``sandbox.trace``, ``sandbox._stubs`` …"""
    public = _sandbox_public()
    assert {"Session", "TraceResult", "Record", "trace_script"} <= public
    users = 0
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith("sandbox/"):
            continue
        text = path.read_text(encoding="utf-8")
        users += SANDBOX in text
        assert not _sandbox_reach(text, public), (rel, _sandbox_reach(text, public))
    assert users >= 5, "the sandbox's users are missing from the check"
    probe = ("from inferencex_tools.sandbox.trace import Ledger\n"
             "from inferencex_tools.sandbox import _stubs, Session\n"
             "import inferencex_tools.sandbox.isolation\n"
             "from inferencex_tools import sandbox\n")
    assert len(_sandbox_reach(probe, public)) == 4


def test_the_sandbox_imports_no_judging_code() -> None:
    """The boundary holds from the inside too: the sandbox's modules import only the
    standard library, ixtool's errors, the repository layout and each other."""
    allowed = ("inferencex_tools.errors", "inferencex_tools.io.layout", SANDBOX)
    for path in (PKG / "sandbox").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            mods = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                    else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for m in mods:
                if m.startswith("inferencex_tools"):
                    assert m == "inferencex_tools.errors" or any(
                        m == a or m.startswith(a + ".") for a in allowed), (path.name, m)
