"""The trace cache (sandbox/cache.py): a result is reused only on a tree that holds the
same bytes at every path the trace read — files, listings, paths found missing — and
never for a trace whose read set is unknown or that failed.

Each case runs real traces twice on real trees: once to fill the cache, once on a
changed copy; the second trace must be reused exactly when the change is outside what
the first one read, and its result must then be the one a fresh trace gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.sandbox import Session, TraceCache, TraceResult
from inferencex_tools.sandbox.cache import TreeDigests, matches
from inferencex_tools.sandbox.trace import namespaces_available
from tests.security.test_sandbox_reads import _repo

NS = pytest.mark.skipif(not namespaces_available(),
                        reason="user namespaces unavailable here: only they record reads")

RECIPE = """set -euo pipefail
source "$(dirname "$0")/lib.sh"
AL=$(cat "${0%.sh}.al")
for f in benchmarks/conf.d/*.env; do source "$f"; done
[ -f benchmarks/override.env ] && source benchmarks/override.env
python3 benchmarks/helper.py
echo "AL=$AL A=${A:-} O=${O:-} L=$LIB"
"""
FILES = {
    "benchmarks/recipe.sh": RECIPE,
    "benchmarks/lib.sh": "LIB=1\n",
    "benchmarks/recipe.al": "2.83\n",
    "benchmarks/conf.d/a.env": "A=1\n",
    "benchmarks/conf.d/z.env": "Z=1\n",
    "benchmarks/helper.py": "import alvalue\nprint('PY', alvalue.AL)\n",
    "benchmarks/alvalue.py": "AL = 2.83\n",
    "benchmarks/unrelated.sh": "echo never read\n",
    "README.md": "not read\n",
}


def _trace(repo: Path, cache: TraceCache, env: dict[str, str] | None = None) -> TraceResult:
    with Session(repo, cache=cache) as s:
        return s.trace("benchmarks/recipe.sh", env or {"X": "1"}, workspace_at=["/ws"])


def _pair(tmp: Path, change: dict[str, str | None]) -> tuple[TraceResult, TraceResult,
                                                             TraceCache]:
    cache = TraceCache(tmp / "cache")
    first = _trace(_repo(tmp / "a", FILES), cache)
    assert first.ok and not first.cached, (first.returncode, first.stderr_tail[-600:])
    assert cache.counts == {"hits": 0, "misses": 1, "stored": 1}
    files = dict(FILES)
    for rel, text in change.items():
        if text is None:
            files.pop(rel)
        else:
            files[rel] = text
    second = _trace(_repo(tmp / "b", files), cache)
    return first, second, cache


@NS
@pytest.mark.parametrize("change", [
    {"README.md": "edited\n"},
    {"benchmarks/unrelated.sh": "echo other\n"},
    {"docs/new.md": "added where nothing listed\n"},
    # in the directory of a Python helper (its sys.path[0]): no import looked for them
    {"benchmarks/NOTES.md": "added\n", "benchmarks/data.json": "{}\n"},
])
def test_a_change_outside_what_the_trace_read_reuses_it(tmp_path: Path,
                                                        change: dict[str, str | None]) -> None:
    first, second, cache = _pair(tmp_path, change)
    assert second.cached and cache.counts["hits"] == 1
    assert second.stdout_tail == first.stdout_tail
    assert [(r.tool, r.argv) for r in second.records] == \
        [(r.tool, r.argv) for r in first.records]
    assert second.reads == first.reads


@NS
@pytest.mark.parametrize("change", [
    {"benchmarks/recipe.al": "3.60\n"},             # a computed data-file name
    {"benchmarks/lib.sh": "LIB=2\n"},               # a sourced helper
    {"benchmarks/alvalue.py": "AL = 3.60\n"},       # a module a Python helper imports
    {"benchmarks/conf.d/b.env": "A=9\n"},           # a file added to a listed directory
    {"benchmarks/conf.d/a.env": None},              # a file removed from it
    {"benchmarks/override.env": "O=3.60\n"},        # a path the trace found missing
    # a package added beside a module a Python helper imports: it shadows the module
    {"benchmarks/alvalue/__init__.py": "AL = 3.60\n"},
])
def test_a_change_to_what_the_trace_read_runs_it_again(tmp_path: Path,
                                                       change: dict[str, str | None]) -> None:
    first, second, cache = _pair(tmp_path, change)
    assert not second.cached and cache.counts["hits"] == 0
    assert second.ok and second.stdout_tail != first.stdout_tail


@NS
def test_an_executable_bit_is_part_of_what_was_read(tmp_path: Path) -> None:
    cache = TraceCache(tmp_path / "cache")
    _trace(_repo(tmp_path / "a", FILES), cache)
    b = _repo(tmp_path / "b", FILES)
    (b / "benchmarks/lib.sh").chmod(0o644)
    assert not _trace(b, cache).cached


@NS
def test_other_arguments_are_another_key(tmp_path: Path) -> None:
    cache = TraceCache(tmp_path / "cache")
    repo = _repo(tmp_path / "a", FILES)
    _trace(repo, cache, {"X": "1"})
    assert not _trace(repo, cache, {"X": "2"}).cached
    assert _trace(repo, cache, {"X": "1"}).cached


@NS
def test_a_failed_trace_is_not_kept(tmp_path: Path) -> None:
    cache = TraceCache(tmp_path / "cache")
    files = dict(FILES, **{"benchmarks/lib.sh": "exit 3\n"})
    repo = _repo(tmp_path / "a", files)
    assert _trace(repo, cache).returncode == 3
    assert cache.counts["stored"] == 0
    assert not _trace(repo, cache).cached


@NS
def test_a_read_only_cache_reuses_and_keeps_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "a", FILES)
    ro = TraceCache(tmp_path / "cache", writable=False)
    assert not _trace(repo, ro).cached and ro.counts["stored"] == 0
    assert not (tmp_path / "cache").exists()
    _trace(repo, TraceCache(tmp_path / "cache"))
    assert _trace(repo, TraceCache(tmp_path / "cache", writable=False)).cached


@NS
def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    cache = TraceCache(tmp_path / "cache")
    repo = _repo(tmp_path / "a", FILES)
    _trace(repo, cache)
    for entry in (tmp_path / "cache").rglob("*.json"):
        entry.write_text('{"format": 1, "reads": {"files": 3}, "result": {}}')
    again = _trace(repo, cache)
    assert not again.cached and again.ok


def test_digests_say_what_a_tree_holds(tmp_path: Path) -> None:
    a = _repo(tmp_path / "a", {"x/f": "1\n", "x/g": "2\n"})
    (a / "x" / "l").symlink_to("f")
    t = TreeDigests(a)
    reads = {"files": {"x/f": t.path("x/f"), "x/l": t.path("x/l")},
             "listed": {"x": t.listing("x")}, "missing": ["x/h"]}
    assert t.path("x/l") == "l:f" and t.path("x/h") == "-" and t.path("x") == "d"
    assert matches(reads, TreeDigests(a))
    (a / "x" / "g").write_text("3\n")  # a file of a listed directory, not read: same
    assert matches(reads, TreeDigests(a))
    (a / "x" / "h").write_text("now here\n")
    assert not matches(reads, TreeDigests(a))
    assert not matches({"files": [1]}, TreeDigests(a))
