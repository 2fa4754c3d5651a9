"""docs/review.md and the README stay true to the code."""

from __future__ import annotations

from tests.conftest import ROOT

DOC = (ROOT / "docs" / "review.md").read_text(encoding="utf-8")


def test_the_example_is_the_seed_snapshot() -> None:
    snap = (ROOT / "tests" / "cases" / "review" / "seed_summary.md").read_text(encoding="utf-8")
    assert "````markdown\n" + snap + "````" in DOC


def test_options_and_rules_are_documented() -> None:
    for opt in ("--base", "--pr", "--format", "--post", "--repo", "--root", "--api-url",
                "--timeout"):
        assert f"{opt}" in DOC, opt
    for rule in ("PO501", "PO502", "PO406"):
        assert rule in DOC
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`ixtool review [--base REF] [--pr N]" in readme and "docs/review.md" in readme


def test_help_names_every_documented_option() -> None:
    from typer.testing import CliRunner

    from inferencex_tools.cli.main import app

    out = CliRunner().invoke(app, ["review", "--help"]).output
    for opt in ("--base", "--pr", "--format", "--post", "--repo", "--root", "--api-url"):
        assert opt in out, opt
