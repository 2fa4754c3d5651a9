"""This repository's own seed recipe expands to the expected 14 agentic rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferencex_tools.cli.main import run
from tests.conftest import ROOT

KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"


def _rows(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    with pytest.raises(SystemExit) as exc:
        run(["sweep", *argv])
    cap = capsys.readouterr()
    assert exc.value.code == 0, cap.err
    rows: list[dict[str, object]] = json.loads(cap.out)
    return rows


EXPECTED_ARMS = (
    [(8, 1, c, "none", 0) for c in (1, 4, 8, 12, 16)]
    + [(8, 8, c, "none", 0) for c in (1, 4, 8, 12, 16)]
    + [(8, 8, c, "dram", 1234) for c in (4, 8, 12, 16)]
)


@pytest.mark.parametrize("explicit", [True, False], ids=["explicit-files", "defaults"])
def test_seed_recipe_rows(explicit: bool, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    argv = ["test-config", "--config-keys", KEY]
    if explicit:
        argv += ["--config-files", "configs/nvidia-master.yaml",
                 "--runner-config", "configs/runners.yaml"]
    rows = _rows([*argv, "--no-evals"], capsys)
    assert len(rows) == 14
    assert all(r["scenario-type"] == "agentic-coding" for r in rows)
    assert all(r["spec-decoding"] == "mtp" for r in rows)
    assert all(r["runner"] == "cluster:h200-dgxc" for r in rows)
    got = [(r["tp"], r["ep"], r["conc"], r["kv-offloading"], r["total-cpu-dram-gb"])
           for r in rows]
    assert got == EXPECTED_ARMS
    dram = [r for r in rows if r["kv-offloading"] == "dram"]
    assert all(r["kv-offload-backend"] == {"name": "mooncake", "version": "0.3.11.post1"}
               for r in dram)
    assert rows[0]["exp-name"] == "minimaxm3_tp8_conc1_kvnone_spec-mtp"


def test_seed_defaults_from_subdirectory(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Defaults resolve configs/ of the repository root even from a subdirectory."""
    monkeypatch.chdir(ROOT / "tests")
    rows = _rows(["test-config", "--config-keys", KEY, "--evals-only"], capsys)
    # single-node agentic eval: the largest conc of the (model, runner, fw, precision) group
    assert len(rows) == 1 and rows[0]["conc"] == 16 and rows[0]["eval-only"] is True


def test_seed_node_filter(monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    rows = _rows(["test-config", "--config-keys", KEY, "--no-evals",
                  "--runner-node-filter", "slurm_"], capsys)
    assert len(rows) == 14 * 4
    assert {r["runner"] for r in rows} == {f"h200-dgxc-slurm_{i}" for i in range(4)}


def test_runners_file_is_valid() -> None:
    from inferencex_tools.sweep.load import load_runners

    r = load_runners(Path(ROOT / "configs" / "runners.yaml"))
    assert "cluster:h200-dgxc" in r.labels
    assert r.hardware["cluster:h200-dgxc"]["gpus-per-node"] == 8
