"""``--format sarif`` output validates against the OASIS SARIF 2.1.0 JSON schema
(schemas/sarif-2.1.0.schema.json, see docs/ci.md for its origin and licence)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.report.findings import Result, Severity
from inferencex_tools.report.reporters import render_sarif
from inferencex_tools.schemas import validator

CASES = Path(__file__).resolve().parents[1] / "cases" / "ci"


def errors(doc: Any) -> list[str]:
    v = validator("sarif-2.1.0")
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in v.iter_errors(doc)]


def test_schema_is_the_oasis_sarif_2_1_0_schema() -> None:
    from inferencex_tools.schemas import load_schema

    s = load_schema("sarif-2.1.0")
    assert s["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert s["properties"]["version"]["enum"] == ["2.1.0"]
    assert errors({"version": "2.1.0"}) != []  # `runs` is required: the schema bites


def test_findings_of_every_shape_validate() -> None:
    from inferencex_tools.ci import rules as R  # registers CI rules

    result = Result(command="t")
    result.add(R.PRIMARY_CONFLICT.at("labels", None, None, "two primary labels"))
    result.add(R.HEAD_UNAVAILABLE.at("perf-changelog.yaml", 3, None, "msg", hint=None))
    result.add(R.NOT_REUSABLE.at("a|b c.yaml", 10, 4, "note with\nnewline",
                                 severity=Severity.NOTE))
    result.add(R.NEAR_MISS.at("x", 1, 1, "unknown rule id below"))
    from inferencex_tools.report.findings import Finding

    result.add(Finding("ZZ999", Severity.WARNING, "f", 0, 0, "not registered, line 0"))
    doc = json.loads(render_sarif(result))
    assert errors(doc) == []
    assert len(doc["runs"][0]["results"]) == 5
    levels = {r["ruleId"]: r["level"] for r in doc["runs"][0]["results"]}
    assert levels["CI101"] == "error" and levels["CI104"] == "note"


def test_empty_result_validates() -> None:
    doc = json.loads(render_sarif(Result(command="t")))
    assert errors(doc) == [] and doc["runs"][0]["results"] == []


@pytest.mark.parametrize("argv", [
    ["labels", "explain", "sweep-enabled", "full-sweep-enabled", "skip-queue"],
    ["ci", "plan", "--event", "{event}", "--event-name", "pull_request", "--no-git"],
])
def test_cli_sarif_validates(argv: list[str], tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    text = (CASES / "events" / "pull_request.labeled-conflict.json").read_text(encoding="utf-8")
    event.write_text(text.replace("__BASE_SHA__", "a" * 40).replace("__HEAD_SHA__", "b" * 40),
                     encoding="utf-8")
    argv = [str(event) if a == "{event}" else a for a in argv]
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", *argv, "--format", "sarif"],
                       capture_output=True, text=True, check=False, timeout=60)
    assert p.returncode == 1, p.stderr  # both carry two primary labels
    doc = json.loads(p.stdout)
    assert errors(doc) == []
    assert "CI101" in {r["ruleId"] for r in doc["runs"][0]["results"]}
