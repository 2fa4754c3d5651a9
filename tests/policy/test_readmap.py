"""policy/readmap.py: which changed paths reach what a row's launch read — the shape of
a change (added, removed, relisted, gone directories) against a row's read set."""

from __future__ import annotations

from pathlib import Path

from inferencex_tools.policy.readmap import ReadMap, RowReads, change_shape, load, save

BASE = {"benchmarks/lib.sh", "benchmarks/conf.d/a.env", "benchmarks/recipe.sh",
        "data/al.txt", "docs/x.md", "old/only.txt"}
READS = RowReads(files={"benchmarks", "benchmarks/lib.sh", "benchmarks/recipe.sh",
                        "old", "data/al.txt"},
                 listed={"benchmarks/conf.d"},
                 missing={"benchmarks/override.env", "extra"})


def _shape(changed: set[str], head: set[str]) -> set[str]:
    return change_shape(Path("/nonexistent"), changed, BASE, head).touches(READS)


def test_a_changed_file_it_read_reaches_it() -> None:
    assert _shape({"data/al.txt"}, BASE) == {"data/al.txt"}
    assert _shape({"docs/x.md"}, BASE) == set()


def test_an_added_path_where_it_found_nothing_reaches_it() -> None:
    head = BASE | {"benchmarks/override.env"}
    assert _shape({"benchmarks/override.env"}, head) == {"benchmarks/override.env"}
    head = BASE | {"extra/deep/file"}  # below a missing directory
    assert _shape({"extra/deep/file"}, head) == {"extra/deep/file"}
    head = BASE | {"benchmarks/new.sh"}  # a new file in a directory it only walked
    assert _shape({"benchmarks/new.sh"}, head) == set()
    # a file the sandbox's copy left out (over its size limit) changed: still a reach
    missing = RowReads(missing={"data/big.bin"})
    shape = change_shape(Path("/nonexistent"), {"data/big.bin"}, BASE | {"data/big.bin"},
                         BASE | {"data/big.bin"})
    assert shape.touches(missing) == {"data/big.bin"}


def test_an_entry_added_or_removed_in_a_listed_directory_reaches_it() -> None:
    head = BASE | {"benchmarks/conf.d/b.env"}
    assert _shape({"benchmarks/conf.d/b.env"}, head) == {"benchmarks/conf.d/b.env"}
    head = BASE - {"benchmarks/conf.d/a.env"}
    assert _shape({"benchmarks/conf.d/a.env"}, head) == {"benchmarks/conf.d/a.env"}


def test_an_entry_that_changes_kind_in_a_listed_directory_reaches_it() -> None:
    # benchmarks/conf.d/a.env (a file) becomes a directory with a file in it
    head = (BASE - {"benchmarks/conf.d/a.env"}) | {"benchmarks/conf.d/a.env/x"}
    changed = {"benchmarks/conf.d/a.env", "benchmarks/conf.d/a.env/x"}
    listed = RowReads(listed={"benchmarks/conf.d"})
    shape = change_shape(Path("/nonexistent"), changed, BASE, head)
    assert shape.touches(listed) == changed


def test_a_directory_it_looked_up_removed_reaches_it() -> None:
    head = BASE - {"old/only.txt"}
    assert _shape({"old/only.txt"}, head) == {"old/only.txt"}


def test_a_map_survives_its_file_and_a_damaged_one_is_none(tmp_path: Path) -> None:
    m = ReadMap({"r1": READS, "r2": None}, {"r1": "k1", "r2": "k2"})
    save(tmp_path, "t" * 40, m)
    got = load(tmp_path, "t" * 40)
    assert got is not None and got.rows["r2"] is None and got.keys == m.keys
    assert got.rows["r1"] == READS
    assert load(tmp_path, "u" * 40) is None
    for p in tmp_path.rglob("*.json"):
        p.write_text('{"format": 1, "paths": [], "rows": {"r": [[5], [], []]}, "keys": {}}')
    assert load(tmp_path, "t" * 40) is None
