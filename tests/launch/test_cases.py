"""Data-driven render cases (tests/cases/launch/*.json): the seed recipe and launcher,
each case editing them into a known-bad launch; the findings name the broken piece."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.launch.service import RowSource, render
from tests.launch.conftest import CASES, SEED_KEY, copy_repo

CASE_FILES = sorted(CASES.glob("*.json"))
PARAMS = [pytest.param(p, id=p.stem, marks=[pytest.mark.slow]
                       if json.loads(p.read_text()).get("slow") else [])
          for p in CASE_FILES]


def _apply(root: Path, edits: list[dict[str, Any]]) -> None:
    for e in edits:
        p = root / e["file"]
        if e.get("delete"):
            p.unlink()
        elif "copy_from" in e:
            shutil.copyfile(root / e["copy_from"], p)
        else:
            old, new = e["replace"]
            text = p.read_text()
            assert text.count(old) == 1, f"{e['file']}: {old!r} must occur exactly once"
            p.write_text(text.replace(old, new))


@pytest.mark.parametrize("case", PARAMS)
def test_render_case(case: Path, tmp_path: Path) -> None:
    spec = json.loads(case.read_text())
    root = copy_repo(tmp_path / "repo")
    _apply(root, spec["edits"])
    sel = spec["select"]
    result, jobs = render(root, RowSource(config_key=SEED_KEY, arm=sel.get("arm"),
                                          conc=sel.get("conc", [])), sel.get("runner"))
    assert len(jobs) == 1
    errors = sorted({f.rule for f in result.findings if f.severity.value == "error"})
    assert errors == sorted(spec["errors"]), [f.message for f in result.findings]
    rules = {f.rule for f in result.findings}
    assert set(spec.get("expect", [])) <= rules, [f.message for f in result.findings]
    for f in result.findings:
        assert f.file and f.message and f.hint
    assert result.exit_code() == (1 if spec["errors"] else 0)
