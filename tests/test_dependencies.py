"""Runtime dependencies are complete and minimal, each with its reason.

Every module outside the standard library that ``inferencex_tools`` imports — at the top
of a file or inside a function — belongs to a distribution listed in pyproject's
``dependencies`` (not only reachable through another one, not only in the test extra),
every listed distribution is imported somewhere, and each carries a comment saying why.
The shipped-path checks (tests/shipped, ``pytest -m shipped``) prove the same on real
installs; this one runs in the default suite, offline, in a second.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "inferencex_tools"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules() -> dict[str, list[str]]:
    """Top-level module name → the files importing it (third-party modules only)."""
    out: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "inferencex_tools":
                    continue
                out.setdefault(top, []).append(str(path.relative_to(ROOT)))
    return out


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(d) for d in project["dependencies"]]


def test_every_import_is_a_declared_dependency() -> None:
    dists = packages_distributions()
    names = {_norm(r.name) for r in declared()}
    missing = {}
    for module, files in imported_modules().items():
        owners = {_norm(d) for d in dists.get(module, [])}
        assert owners, f"{module} (imported by {files[0]}) is not installed at all"
        if not owners & names:
            missing[module] = (sorted(owners), files[:3])
    assert not missing, f"imported but not in pyproject's dependencies: {missing}"


def test_every_declared_dependency_is_imported() -> None:
    dists = packages_distributions()
    used = {_norm(d) for m in imported_modules() for d in dists.get(m, [])}
    unused = [r.name for r in declared() if _norm(r.name) not in used]
    assert not unused, f"declared but never imported by inferencex_tools: {unused}"


def test_every_dependency_says_why() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    block = text[text.index("\ndependencies = ["):]
    block = block[:block.index("\n]")]
    lines = block.splitlines()[1:]
    for i, line in enumerate(lines):
        m = re.match(r'\s*"([^"]+)",?\s*(#.*)?$', line)
        if not m:
            continue
        above = i > 0 and lines[i - 1].strip().startswith("#")
        assert m.group(2) or above, f"{m.group(1)}: no comment saying why it is a dependency"
