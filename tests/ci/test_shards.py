"""``ixtool ci shards`` / ``ci row``: sweep rows → ≤256-job matrix shards and back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from inferencex_tools.ci.shards import make_shards, row_by_id
from tests.ci.test_plan import parse_github_output


def matrix(n_8k: int, n_agentic: int) -> dict[str, object]:
    def rows(prefix: str, n: int) -> list[dict[str, object]]:
        return [{"runner": "cluster:h200-dgxc", "exp-name": f"{prefix}_{i}", "conc": i,
                 "model": "m", "tp": 8, "precision": "fp8", "framework": "vllm"}
                for i in range(n)]
    return {"single_node": {"1k1k": [], "8k1k": rows("a", n_8k),
                            "agentic": rows("g", n_agentic)},
            "multi_node": {"1k1k": [], "8k1k": [], "agentic": []},
            "evals": [], "changelog_metadata": {"entries": []}}


def test_shards_respect_the_job_limit_and_round_trip() -> None:
    m = matrix(300, 250)
    sh = make_shards(m, max_shards=4)
    assert sh.total == 550 and not sh.findings
    assert [len(s) for s in sh.shards] == [256, 256, 38, 0]
    ids = [h["id"] for s in sh.shards for h in s]
    assert len(set(ids)) == 550
    assert row_by_id(m, "single_node_agentic/249")["exp-name"] == "g_249"
    assert row_by_id(m, sh.shards[2][-1]["id"])["exp-name"] == "g_249"


def test_too_many_rows_is_a_finding() -> None:
    sh = make_shards(matrix(600, 0), max_shards=2)
    assert [f.rule for f in sh.findings] == ["CI401"]
    assert sum(len(s) for s in sh.shards) == 512


def test_cli_writes_outputs_and_row_env(tmp_path: Path) -> None:
    mpath = tmp_path / "m.json"
    mpath.write_text(json.dumps(matrix(3, 1)), encoding="utf-8")
    out = tmp_path / "out"
    env = {**os.environ, "GITHUB_OUTPUT": str(out)}
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "shards", "--matrix",
                        str(mpath), "--max-shards", "2"], env=env, capture_output=True,
                       text=True, check=False, timeout=60)
    assert p.returncode == 0, p.stderr
    o = parse_github_output(out.read_text(encoding="utf-8"))
    assert o["shard-count"] == "1" and o["jobs"] == "4" and o["shard-2"] == "[]"
    first = json.loads(o["shard-1"])[0]
    assert first == {"id": "single_node_8k1k/0", "runner": "cluster:h200-dgxc", "name": "a_0"}
    r = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "row", "--matrix",
                        str(mpath), "--id", first["id"], "--node", "h200-dgxc-slurm_7"],
                       capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "export LAUNCHER=runners/launch_h200-dgxc-slurm.sh\n" in r.stdout
    assert "export EXP_NAME=a_0\n" in r.stdout
    bad = subprocess.run([sys.executable, "-m", "inferencex_tools", "ci", "row", "--matrix",
                          str(mpath), "--id", "nope/9"], capture_output=True, text=True,
                         check=False, timeout=60)
    assert bad.returncode == 2 and "no bucket" in bad.stderr


def test_canary_is_the_lowest_conc_non_eval_single_node_row() -> None:
    m: dict[str, object] = {
        "single_node": {
            "1k1k": [{"runner": "r", "exp-name": "x_c8", "conc": 8},
                     {"runner": "r", "exp-name": "x_c2_eval", "conc": 2, "run-eval": True}],
            "8k1k": [{"runner": "r", "exp-name": "y_c4", "conc": [4, 16]},
                     {"runner": "r", "exp-name": "y_c4b", "conc": 4}],
            "agentic": [{"runner": "cluster:r", "exp-name": "g_c1", "conc": 1}]},
        "multi_node": {"1k1k": [{"runner": "r", "exp-name": "mn_c1", "conc": [1]}]},
    }
    sh = make_shards(m, max_shards=1, canary=True)
    assert [h["id"] for h in sh.canary] == ["single_node_8k1k/0"]  # first of the conc-4 tie
    ids = [h["id"] for h in sh.shards[0]]
    assert "single_node_8k1k/0" not in ids and len(ids) == 5 and sh.total == 6
    assert make_shards(m, max_shards=1).canary == []
    assert make_shards({"single_node": {"agentic": m["single_node"]["agentic"]}},  # type: ignore[index]
                       max_shards=1, canary=True).canary == []
