"""GitHub limits: sharding under 256 jobs / 1 MB, $GITHUB_OUTPUT round trip, summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferencex_tools.io.actions import format_outputs, parse_outputs
from inferencex_tools.sweep.publish import (
    MAX_JOBS,
    MAX_OUTPUT_BYTES,
    compact,
    join_shards,
    shard_buckets,
    summarize,
    summary_markdown,
    utf16_size,
)
from tests.conftest import ROOT


def _rows(n: int, pad: int = 0) -> list[dict[str, object]]:
    return [{"image": "img:1", "model": "org/m", "runner": f"node_{i % 7}", "tp": 8,
             "conc": i, "exp-name": f"m_{i}", "note": "ü" + "x" * pad,
             "prefill": None if i % 2 else {"num-worker": 1, "tp": 4, "ep": 1}}
            for i in range(n)]


def test_shards_by_row_count() -> None:
    rows = _rows(2000)
    out = shard_buckets({"single_node_8k1k": rows, "changelog_metadata": {"a": 1}})
    names = out.shards["single_node_8k1k"]
    assert len(names) == 8 and names[0] == "single_node_8k1k_1"
    for n in names:
        chunk = json.loads(out.outputs[n])
        assert len(chunk) <= MAX_JOBS
        assert utf16_size(out.outputs[n]) <= MAX_OUTPUT_BYTES
    assert join_shards(out.outputs, "single_node_8k1k") == rows
    assert json.loads(out.outputs["changelog_metadata"]) == {"a": 1}
    assert any("sharded into" in n for n in out.notes)


def test_shards_by_size() -> None:
    rows = _rows(2000, pad=3000)  # ~6 KB UTF-16 per row: the byte limit binds first
    out = shard_buckets({"evals": rows})
    names = out.shards["evals"]
    sizes = [utf16_size(out.outputs[n]) for n in names]
    counts = [len(json.loads(out.outputs[n])) for n in names]
    assert max(sizes) <= MAX_OUTPUT_BYTES
    assert max(counts) < MAX_JOBS  # bytes, not rows, decided
    assert join_shards(out.outputs, "evals") == rows
    assert any("per-job limit" in n for n in out.notes)


def test_small_bucket_not_sharded() -> None:
    rows = _rows(10)
    out = shard_buckets({"evals": rows})
    assert out.shards["evals"] == ["evals"] and not out.notes
    assert out.outputs["evals"] == compact(rows)


def test_github_output_roundtrip() -> None:
    rows = _rows(600)
    out = shard_buckets({"matrix": rows, "empty": []})
    text = format_outputs(out.outputs)
    assert "matrix_1=[" in text and "\nempty=[]\n" in text  # one-line values: name=value
    back = parse_outputs("before=1\n" + text)
    assert back["before"] == "1"
    assert join_shards(back, "matrix") == rows
    assert json.loads(back["empty"]) == []


def test_cli_github_output_and_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    gh_out, gh_sum = tmp_path / "out", tmp_path / "sum"
    gh_out.write_text("x=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(gh_out))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(gh_sum))
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exc:
        run(["sweep", "test-config", "--config-keys", "minimaxm3-*", "--no-evals",
             "--github-output", "--summary"])
    cap = capsys.readouterr()
    assert exc.value.code == 0, cap.err
    outputs = parse_outputs(gh_out.read_text())
    assert outputs["x"] == "1"
    assert json.loads(outputs["matrix"]) == json.loads(cap.out)
    summary = gh_sum.read_text()
    assert "| `minimaxm3-fp8-h200-vllm-agentic-mtp` | agentic-coding | 14 | 8 | 112.0 |" \
        in summary


def test_summary_fixed_rows_unknown_duration() -> None:
    rows = [{"tp": 4, "isl": 1024, "osl": 1024, "conc": 1},
            {"tp": 4, "pp": 2, "isl": 1024, "osl": 1024, "conc": 2}]
    lines = summarize(rows, ["k", "k"])
    assert lines[0].jobs == 2 and lines[0].gpus == {4, 8} and lines[0].gpu_hours is None
    assert "n/a" in summary_markdown(lines)


def test_explain_seed(monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exc:
        run(["sweep", "explain", "minimaxm3-fp8-h200-vllm-agentic-mtp"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "tp8 ep8 spec=mtp kv=dram/mooncake  4, 8, 12, 16" in out
    assert "14 throughput rows" in out and "1 eval row with" in out


def test_explain_unknown_key(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exc:
        run(["sweep", "explain", "nope"])
    assert exc.value.code == 2
    assert "not found" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(min_value=0, max_value=400), max_size=120),
       max_rows=st.integers(min_value=1, max_value=40),
       max_bytes=st.integers(min_value=2000, max_value=20000))
def test_split_join_property(sizes: list[int], max_rows: int, max_bytes: int) -> None:
    rows = [{"i": i, "pad": "y" * n} for i, n in enumerate(sizes)]
    out = shard_buckets({"b": rows}, max_rows=max_rows, max_bytes=max_bytes)
    assert join_shards(out.outputs, "b") == rows
    for name in out.shards["b"]:
        chunk = json.loads(out.outputs[name])
        assert len(chunk) <= max_rows
        if len(chunk) > 1:  # a single oversized row cannot be split further
            assert utf16_size(out.outputs[name]) <= max_bytes


def test_output_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                     capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    monkeypatch.chdir(ROOT)
    target = tmp_path / "m.json"
    with pytest.raises(SystemExit) as exc:
        run(["sweep", "full", "-o", str(target)])
    assert exc.value.code == 0 and capsys.readouterr().out == ""
    # 14 rows of the seed MTP recipe + 14 of its non-MTP sibling (issue 17)
    assert len(json.loads(target.read_text())) == 28
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    with pytest.raises(SystemExit) as exc:
        run(["sweep", "full", "--github-output"])
    assert exc.value.code == 2 and "GITHUB_OUTPUT" in capsys.readouterr().err
