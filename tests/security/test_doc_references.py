"""docs/security.md stays true to the tests: every test its threat model and tables name
exists.  A reference is ``tests/<path>.py`` (the file), ``tests/<path>.py::name`` (a
test in it, ``[...]`` parameters aside) or ``::name`` after such a reference (the same
file); ``tests/<dir>/`` names a folder."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "security.md"
REF = re.compile(r"(tests/[\w/.-]+)|(?<![\w/])::(\w+)")


def _references(text: str) -> list[tuple[str, str | None]]:
    """(file or folder, test name or None) for every reference, in order."""
    out: list[tuple[str, str | None]] = []
    current: str | None = None
    for line in text.splitlines():
        for m in REF.finditer(line):
            path, name = m.group(1), m.group(2)
            if path is not None:
                file = path
                current = file if file.endswith(".py") else current
                out.append((file, None))
                after = line[m.end():m.end() + 200]
                test_m = re.match(r"::(\w+)", after)
                if test_m and file.endswith(".py"):
                    out.append((file, test_m.group(1)))
            elif name is not None and current is not None:
                out.append((current, name))
    return out


def test_every_named_test_exists() -> None:
    refs = _references(DOC.read_text(encoding="utf-8"))
    assert len(refs) > 100, "the reference scan found too little: is the pattern right?"
    missing: list[str] = []
    for path, name in refs:
        target = ROOT / path
        if not target.exists():
            missing.append(path)
            continue
        if name is not None and not re.search(
                rf"^(?:async )?def {re.escape(name)}\(", target.read_text(encoding="utf-8"),
                re.M):
            missing.append(f"{path}::{name}")
    assert not missing, f"docs/security.md names tests that do not exist: {sorted(set(missing))}"


def test_the_scan_sees_a_missing_test() -> None:
    refs = _references("`tests/io/test_files.py::no_such_test`, `::also_missing`; "
                       "`tests/nowhere/`")
    assert refs == [("tests/io/test_files.py", None), ("tests/io/test_files.py",
                                                         "no_such_test"),
                    ("tests/io/test_files.py", "also_missing"), ("tests/nowhere/", None)]
