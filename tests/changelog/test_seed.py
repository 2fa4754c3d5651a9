"""This repository's own perf-changelog.yaml passes the gate, standalone and as a new file."""

from __future__ import annotations

from pathlib import Path

from inferencex_tools.changelog.configkeys import top_level_keys
from inferencex_tools.changelog.validate import Options, analyze_change, validate_standalone

ROOT = Path(__file__).resolve().parents[2]


def test_seed_changelog_is_clean() -> None:
    raw = (ROOT / "perf-changelog.yaml").read_bytes()
    keys = [k for f in sorted((ROOT / "configs").glob("*-master.yaml"))
            for k in top_level_keys(f.read_text(encoding="utf-8"))]
    assert validate_standalone(raw, "perf-changelog.yaml", Options()).findings == []
    # judged as the change that created the file (main mode, config keys resolved)
    a = analyze_change(b"", raw, "perf-changelog.yaml", Options(master_keys=keys))
    assert a.findings == [] and len(a.new_entries) >= 1
