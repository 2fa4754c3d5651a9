"""Issue 33/34: a PR that only appends a changelog entry for an existing spec-decoding key
runs that key's sweep; its review shows the golden-AL table for the key (from the key's
rendered launches and the one golden lookup), though the gate's policy stage traced
nothing the change touched."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.review.world import MTP_KEY, World, _entries, make_world, seed_files


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base, pr = seed_files()
    entries = _entries((ROOT / "perf-changelog.yaml").read_text())
    main = {**base, **{k: v for k, v in pr.items() if k != "perf-changelog.yaml"},
            "perf-changelog.yaml": base["perf-changelog.yaml"] + "\n" + entries[MTP_KEY]}
    again = re.sub(r"(?m)^  pr-link: .*$", "  pr-link: TBD", entries[MTP_KEY]).replace(
        "Add the MiniMax-M3 MXFP8 H200 vLLM AgentX recipe", "Re-run the MiniMax-M3 recipe")
    w = make_world(tmp_path_factory.mktemp("review-untouched"), base_files=main,
                   pr_files={k: main[k] for k in pr if k != "perf-changelog.yaml"}
                   | {"perf-changelog.yaml": main["perf-changelog.yaml"] + "\n" + again})
    yield w
    w.fake.stop()


def test_changelog_only_pr_shows_the_golden_table(world: World, tmp_path: Path) -> None:
    p = world.review("--format", "json", post=False)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    golden = [g for g in doc["golden-al"] if g["key"] == MTP_KEY]
    assert golden, doc["golden-al"]
    thr = [g for g in golden if g["mode"] == "throughput"]
    assert thr and all(g["golden_al"] == 2.83 and g["thinking"] == "thinking_on"
                       and g["curve"] == "minimaxm3_eagle3.yaml" and g["k"] == 3
                       and g["verdict"] == "ok" for g in thr), thr
    md = world.review(post=False).stdout
    assert "### Golden acceptance length" in md and "minimaxm3_eagle3.yaml" in md
