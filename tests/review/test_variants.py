"""Variants of the seed PR: a draft swapped to the GQA head with the AL kept (curve mixing,
2.78 suggested); the memory fraction inherited from the non-MTP sibling (PO501)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from inferencex_tools.cli.common import adopted_copy
from inferencex_tools.review.model import Review
from inferencex_tools.review.render import markdown
from inferencex_tools.review.service import ReviewRequest, build_review
from tests.conftest import ROOT
from tests.review.world import MTP_SCRIPT, PRN, SLUG, make_world

SCRIPT = (ROOT / MTP_SCRIPT).read_text()


def review_of(tmp: Path, script: str) -> Review:
    w = make_world(tmp, {MTP_SCRIPT: script})
    try:
        return build_review(ReviewRequest(root=w.user, base="origin/main", pr=PRN, repo=SLUG))
    finally:
        w.fake.stop()


GQA = ("DRAFT_MODEL=Inferact/MiniMax-M3-EAGLE3\n", "DRAFT_MODEL=Inferact/MiniMax-M3-EAGLE3-GQA\n")
OOM = ("--gpu-memory-utilization 0.90", "--gpu-memory-utilization 0.95")


def test_both_variants_in_one_review(tmp_path: Path) -> None:
    """The default run's representative: the GQA head with 2.83 kept AND the sibling's
    memory fraction, in one PR — curve mixing with 2.78 suggested, and the OOM warning."""
    script = SCRIPT.replace(*GQA).replace(*OOM)
    r = review_of(tmp_path, script)
    assert r.verdict == "fail"
    [sugg] = [c for c in r.comments if c.path == MTP_SCRIPT and c.suggestion]
    assert sugg.suggestion == "GOLDEN_AL=2.78\n" and sugg.body.startswith("**Curve mixing.**")
    [w] = {f.line: f for f in r.findings if f.rule == "PO501"}.values()
    assert "#2423" in (w.hint or "") and any("PO501" in c.rules for c in r.comments)


@pytest.mark.slow
def test_gqa_head_with_the_eagle3_al(tmp_path: Path) -> None:
    script = SCRIPT.replace("DRAFT_MODEL=Inferact/MiniMax-M3-EAGLE3\n",
                            "DRAFT_MODEL=Inferact/MiniMax-M3-EAGLE3-GQA\n")
    assert script != SCRIPT
    r = review_of(tmp_path, script)
    assert r.verdict == "fail"
    mixing = [f for f in r.findings if f.rule == "PO406"]
    assert mixing, [f.rule for f in r.findings]
    [g] = [g for g in r.golden if g.mode == "throughput"]
    assert (g.draft, g.k, g.thinking, g.curve, g.golden) == (
        "Inferact/MiniMax-M3-EAGLE3-GQA", 3, "thinking_on", "minimaxm3_eagle3_gqa.yaml", 2.78)
    sugg = [c for c in r.comments if c.path == MTP_SCRIPT and c.suggestion]
    assert len(sugg) == 1 and "PO406" in sugg[0].rules
    assert sugg[0].suggestion == "GOLDEN_AL=2.78\n"
    assert sugg[0].body.startswith("**Curve mixing.**") and "2.78" in markdown(r)


@pytest.mark.slow
def test_memory_fraction_inherited_from_the_sibling(tmp_path: Path) -> None:
    script = SCRIPT.replace("--gpu-memory-utilization 0.90", "--gpu-memory-utilization 0.95")
    assert script != SCRIPT
    r = review_of(tmp_path, script)
    [w] = {f.line: f for f in r.findings if f.rule == "PO501"}.values()
    assert w.severity.value == "warning" and w.file == MTP_SCRIPT
    assert "#2423" in (w.hint or "") and "0.95" in w.message
    assert any("PO501" in c.rules for c in r.comments)
    text = markdown(r)
    assert "PO501" in text and "96 MiB" in text


@pytest.mark.slow
@pytest.mark.parametrize("value", ["0.90", "0.85"])
def test_memory_fraction_below_the_sibling_is_quiet(tmp_path: Path, value: str) -> None:
    script = SCRIPT.replace("--gpu-memory-utilization 0.90", f"--gpu-memory-utilization {value}")
    r = review_of(tmp_path, script)
    assert not [f for f in r.findings if f.rule == "PO501"]


def test_repository_settings_apply(tmp_path: Path) -> None:
    """The repository's adoption settings (.ixtool.toml, on main) reach the review as they
    reach `ci gate`: PO501 turned off → neither a finding nor a comment; CL502 as a
    warning → its suggestion stays, the gate passes it."""
    w = make_world(tmp_path, {MTP_SCRIPT: SCRIPT.replace(*OOM)},
                   base_files={".ixtool.toml": '[severity]\nPO501 = "off"\nCL502 = "warning"\n'})
    try:
        r = build_review(ReviewRequest(root=w.user, base="origin/main", pr=PRN, repo=SLUG,
                                       adopted=partial(adopted_copy, cwd=w.user)))
    finally:
        w.fake.stop()
    assert not [f for f in r.findings if f.rule == "PO501"]
    assert not [c for c in r.comments if "PO501" in c.rules]
    [cl] = [f for f in r.findings if f.rule == "CL502"]
    assert cl.severity.value == "warning"
    assert [c.rules for c in r.comments if c.suggestion] == [["CL502"]]
