"""The real corpus changelog passes standalone validation (warnings only)."""

from __future__ import annotations

from pathlib import Path

from inferencex_tools.changelog.validate import Options, validate_standalone
from inferencex_tools.report.findings import Severity


def test_real_changelog_passes_standalone(corpus: Path) -> None:
    raw = (corpus / "perf-changelog.yaml").read_bytes()
    cl = validate_standalone(raw, "perf-changelog.yaml", Options())
    assert len(cl.entries) == 772
    errors = [f for f in cl.findings if f.severity is Severity.ERROR]
    assert errors == []
    rules = {f.rule for f in cl.findings}
    # the documented quirks are reported as warnings
    assert {"CL301", "CL302", "CL303", "CL503"} <= rules
