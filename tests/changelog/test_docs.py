"""docs/changelog.md stays true to the code: every rule with its severity, the options."""

from __future__ import annotations

import re
from pathlib import Path

from inferencex_tools.changelog import rules as _rules  # noqa: F401  (registers the rules)
from inferencex_tools.report.findings import RULES

DOC = Path(__file__).resolve().parents[2] / "docs" / "changelog.md"


def test_every_rule_is_documented_with_its_severity() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(CL\d{3})` \| (\w+) \|", text, re.M))
    ours = {rid: r for rid, r in RULES.items() if r.area == "changelog" and rid < "CL800"}
    assert set(rows) == set(ours)
    for rid, r in ours.items():
        assert rows[rid] == r.severity.value, rid


def test_options_are_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for opt in ("--base", "--head", "--pr", "--repo", "--configs", "--fix", "--strict",
                "--format", "--traceback"):
        assert f"`{opt}" in text, opt


def test_history_figures_match_the_test() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "| all (2025-12-15 → 2026-08-22) | 831 | 686 | **145 (17.4 %)** |" in text
    assert "| since 2026-06-19 (after #1853) | 278 | 271 | 7 (2.5 %) |" in text
    assert "| 2026-08 | 107 | 106 | 1 |" in text


def test_add_examples_name_keys_of_the_real_tree(corpus: Path) -> None:
    """Issue 31: the documented ``changelog add -k 'dsr1-fp8-*-vllm'`` matched no key of
    the real tree (it has no vLLM DSR1 FP8 key), so the example was refused as shown.
    Every ``-k`` of an ``add`` example in the docs and the command's help must match."""
    import shlex

    from typer.main import get_command

    from inferencex_tools.changelog.configkeys import resolve_items, top_level_keys
    from inferencex_tools.cli.main import app

    keys: list[str] = []
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        keys += top_level_keys((corpus / "configs" / name).read_text(encoding="utf-8"))
    group = get_command(app).commands["changelog"]  # type: ignore[attr-defined]
    texts = [(DOC.parent / "changelog-merge.md").read_text(encoding="utf-8"),
             group.commands["add"].help or ""]
    examples = [m.group(1) for t in texts  # the examples, not the synopsis (KEY…)
                for m in re.finditer(r"(?m)^\s*(ixtool changelog add -k [^\n]*)", t)]
    assert len(examples) >= 2
    for example in examples:
        words = shlex.split(example.rstrip("\\"))
        items = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-k", "--config-key")]
        assert items, example
        empty = [r.item for r in resolve_items(items, keys) if not r.matches]
        assert not empty, (example, empty)
