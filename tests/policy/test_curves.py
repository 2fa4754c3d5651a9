"""Curve files, the registry and ``ixtool policy golden``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.policy.curves import parse_curve, parse_registry
from inferencex_tools.policy.golden import golden
from inferencex_tools.policy.store import open_store

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "policy" / "curves"


def _curves(corpus: Path) -> Path:
    return corpus / "golden_al_distribution"


def test_every_real_curve_loads_and_validates(corpus: Path) -> None:
    files = sorted(_curves(corpus).glob("*.yaml"))
    assert len(files) == 9
    for f in files:
        curve, findings = parse_curve(f.read_bytes(), f.name)
        assert findings == [], f.name
        assert curve is not None
        assert curve.source_run and "/actions/runs/" in curve.source_run
        for table in curve.modes.values():
            assert set(table) == set(range(1, 9))
            assert all(1 <= v <= k + 1 for k, v in table.items())


def test_registry_covers_every_real_curve(corpus: Path) -> None:
    store = open_store(None, _curves(corpus), root=ROOT)
    assert store.check_rows(require_files=True) == []
    named = {e.curve for e in store.registry.entries}
    assert named == {f.name for f in _curves(corpus).glob("*.yaml")}
    assert store.findings == []


def test_repo_curve_equals_the_real_curve(corpus: Path) -> None:
    mine, f1 = parse_curve((ROOT / "golden_al_distribution/minimaxm3_eagle3.yaml").read_bytes(),
                           "mine")
    real, f2 = parse_curve((_curves(corpus) / "minimaxm3_eagle3.yaml").read_bytes(), "real")
    assert f1 == f2 == []
    assert mine is not None and real is not None
    assert mine.modes == real.modes and mine.model_key == real.model_key
    assert mine.source_run == real.source_run


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.glob("bad_*.yaml")))
def test_bad_curve_cases(case: str) -> None:
    raw = (CASES / case).read_bytes()
    expected = raw.decode().splitlines()[0].split("expect:")[1].split()
    _, findings = parse_curve(raw, case)
    assert sorted({f.rule for f in findings}) == sorted(expected)


def test_registry_conflict_and_schema() -> None:
    dup = (b"version: 1\nentries:\n"
           b"  - {id: a, model-prefix: m, method: eagle3, draft: X/D, curve: a.yaml,"
           b" model-key: m}\n"
           b"  - {id: b, model-prefix: m, method: eagle3, draft: /local/d, curve: b.yaml,"
           b" model-key: m}\n")
    reg, findings = parse_registry(dup, "r.yaml")
    assert reg is not None
    assert [f.rule for f in findings] == ["PO107"]
    bad = b"version: 1\nentries:\n  - {id: a, model-prefix: m, method: medusa, draft: null}\n"
    reg, findings = parse_registry(bad, "r.yaml")
    assert reg is None and {f.rule for f in findings} == {"PO105"}


@pytest.mark.parametrize(
    ("draft", "mode", "k", "al"),
    [
        ("Inferact/MiniMax-M3-EAGLE3", "on", 3, 2.83),
        ("Inferact/MiniMax-M3-EAGLE3-GQA", "on", 3, 2.78),
        ("/data/models/MiniMax-M3-EAGLE3-GQA", "off", 4, 3.29),
        ("Inferact/MiniMax-M3-EAGLE3", "off", 3, 2.93),
    ],
)
def test_golden_lookup(corpus: Path, draft: str, mode: str, k: int, al: float) -> None:
    store = open_store(None, _curves(corpus), root=ROOT)
    ans = golden(store, "minimaxm3", k=k, thinking=mode, draft=draft)
    assert ans.al == al
    units = {(v.engine, v.setting.split()[0]): v.value for v in ans.values}
    assert units[("trt", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS")] == pytest.approx(al - 1)
    assert units[("atom", "--spec-decode-acceptance-rate")] == pytest.approx((al - 1) / k,
                                                                            abs=1e-6)


def _ixtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inferencex_tools", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)


def test_golden_cli_text_json_and_ambiguity() -> None:
    r = _ixtool("policy", "golden", "minimaxm3", "--draft", "Inferact/MiniMax-M3-EAGLE3",
                "--k", "3", "--thinking", "on")
    assert r.returncode == 0, r.stderr
    assert "golden AL 2.83" in r.stdout and "1.83" in r.stdout and "0.61" in r.stdout
    r = _ixtool("policy", "golden", "minimaxm3", "--draft", "Inferact/MiniMax-M3-EAGLE3",
                "--k", "3", "--thinking", "on", "--format", "json")
    assert json.loads(r.stdout)["al"] == 2.83
    r = _ixtool("policy", "golden", "minimaxm3", "--k", "3", "--thinking", "on")
    assert r.returncode == 2 and "never mixed" in r.stderr
    # the Kimi-K3 curve is not committed in this repo: a clear error, no traceback
    r = _ixtool("policy", "golden", "kimik3", "--sample", "default", "--k", "3",
                "--thinking", "on")
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr


def test_curves_command(tmp_path: Path, corpus: Path) -> None:
    for f in _curves(corpus).glob("*.yaml"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    r = _ixtool("policy", "curves", "--curves-dir", str(tmp_path))
    assert r.returncode == 0, r.stdout
    (tmp_path / "new_mtp.yaml").write_bytes((CASES / "bad_range.yaml").read_bytes())
    r = _ixtool("policy", "curves", "--curves-dir", str(tmp_path), "--format", "json")
    assert r.returncode == 1
    findings = json.loads(r.stdout)["findings"]
    assert sorted(f["rule"] for f in findings) == ["PO104", "PO104", "PO105"]
    (po105,) = [f for f in findings if f["rule"] == "PO105"]
    assert "does not cover" in po105["message"] and "new_mtp.yaml" in po105["message"]


@pytest.mark.parametrize("model", ["minimaxm3", "kimik3"])
def test_every_ambiguity_hint_selects_its_curve(corpus: Path, model: str) -> None:
    """The hint of an ambiguous lookup names, per curve, options that select exactly that
    curve (Kimi-K3's two curves share draft and method: only --sample tells them apart)."""
    import shlex

    from inferencex_tools.errors import UsageError

    store = open_store(None, _curves(corpus), root=ROOT)
    with pytest.raises(UsageError) as exc:
        golden(store, model, k=3, thinking="on")
    choices = dict(part.split(": ", 1) for part in (exc.value.hint or "").split("; "))
    assert len(choices) >= 2
    for entry_id, options in choices.items():
        words = shlex.split(options)
        opts = dict(zip(words[::2], words[1::2], strict=True))
        ans = golden(store, model, k=3, thinking="on", draft=opts.get("--draft"),
                     method=opts.get("--method"), sample=opts.get("--sample"))
        assert ans.entry.id == entry_id
