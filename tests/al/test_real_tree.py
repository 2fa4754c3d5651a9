"""The audit on the real InferenceX tree: RESULT_FILENAME comes from its own
benchmark template (evaluated for each row), only the keys the artifacts belong to are
traced, and the launch is the one its real launcher and script start."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from inferencex_tools.al.service import AuditRequest, RunInfo, audit
from inferencex_tools.io.artifacts import Limits, run_directory
from tests.al.fixtures import draw, export, result_filename, split, vllm_log

KEY = "dsv4-fp4-b200-vllm-agentic-mtp"


@pytest.mark.slow
def test_real_tree_key_is_matched_and_judged(real_tree: Path, tmp_path: Path) -> None:
    rng = random.Random(3)
    d = tmp_path / "run"
    forced = draw(rng, 200_000, (0.82, 0.67, 0.0))  # 2.49, what this key's recipe forces
    for conc, runner in ((4, "b200-dgxc_01"), (14, "b200-dgxc_03")):
        rf = result_filename(prefix="dsv4", tp=8, ep=1, conc=conc, kv="dram",
                             backend="vllm-simple", precision="fp4", runner=runner)
        raw = d / f"agentic_{rf}" / "aiperf_artifacts"
        raw.mkdir(parents=True)
        (raw / "server_metrics_export.json").write_text(json.dumps(export(forced)))
        logs = d / f"server_logs_{rf}"
        logs.mkdir()
        (logs / "server.log").write_text(vllm_log(split(rng, forced, 10)))
    # a runner of another label: no job of this key ran there
    other = result_filename(prefix="dsv4", tp=8, ep=1, conc=4, kv="dram",
                            backend="vllm-simple", precision="fp4", runner="h200-nb_0")
    (d / f"server_logs_{other}").mkdir()
    a = audit(AuditRequest(root=real_tree, artifacts=run_directory(d, Limits()),
                           run=RunInfo(directory=str(d))))
    assert a.result.info["policy"]["rows"] < 60  # only the key's rows were traced
    assert sorted((j.launch.config_key, j.launch.conc, j.runner) for j in a.jobs) == [
        (KEY, 4, "b200-dgxc_01"), (KEY, 14, "b200-dgxc_03")]
    for j in a.jobs:
        assert (j.launch.engine, j.launch.synthetic, j.launch.forced, j.launch.k) == (
            "vllm", True, 2.49, 3)
        assert j.measurement is not None and j.measurement.source == "counters"
        assert j.verdict is not None and j.verdict.status == "ok", j.verdict
    assert [f.rule for f in a.result.findings if f.rule == "AL103"] == ["AL103"]
