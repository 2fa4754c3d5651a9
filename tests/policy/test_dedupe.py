"""Trace sharing in the script stage: jobs that differ only in inert values share a
trace when it succeeds, and are traced one by one when it fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.policy.pipeline import Job, JobTrace, RepoIndex, Runner
from inferencex_tools.sandbox import TraceResult
from inferencex_tools.workflow.step import Step

LIB = """check_env_vars() {
    for v in "$@"; do [[ -z "${!v:-}" ]] && exit 1; done
}
run_benchmark_serving() { :; }
"""
INERT = """source "$(dirname "$0")/../benchmark_lib.sh"
check_env_vars MODEL CONC
echo "CONC: $CONC"
vllm serve "$MODEL"
"""
# a value handed to a library helper is not inert: the helper runs as it is
HELPER = INERT + 'run_benchmark_serving --max-concurrency "$CONC"\n'
STEERING = INERT.replace('vllm serve "$MODEL"', 'vllm serve "$MODEL" --max-num-seqs "$CONC"')


class FakeSession:
    """Stands in for the sandbox: records what was traced, succeeds unless told."""

    def __init__(self, ok: bool) -> None:
        self.ok = ok
        self.calls: list[dict[str, str]] = []

    def trace(self, script: str, env: dict[str, str], **_: Any) -> TraceResult:
        self.calls.append(dict(env))
        return TraceResult(script, dict(env), "/w", "namespaces", 0 if self.ok else 1,
                           False, 0.1)


def _run(tmp_path: Path, script: str, concs: list[str], ok: bool
         ) -> tuple[FakeSession, Runner, list[JobTrace]]:
    (tmp_path / "benchmarks" / "s").mkdir(parents=True)
    (tmp_path / "benchmarks" / "benchmark_lib.sh").write_text(LIB)
    (tmp_path / "benchmarks" / "s" / "x.sh").write_text(script)
    session = FakeSession(ok)
    runner = Runner(session, RepoIndex(tmp_path), timeout=10, jobs=2)  # type: ignore[arg-type]
    jts = []
    for conc in concs:
        env = {"MODEL": "m", "CONC": conc}
        job = Job(None, "h200", "h200_0", env, None, "built-in")  # type: ignore[arg-type]
        jt = JobTrace(job, script="benchmarks/s/x.sh")
        jt.step = Step("launcher-rule", ["bash", "benchmarks/s/x.sh"], "benchmarks/s/x.sh",
                       env, None, [], False)
        jts.append(jt)
    runner.run_scripts(jts)
    return session, runner, jts


def test_inert_values_share_one_successful_trace(tmp_path: Path) -> None:
    session, runner, jts = _run(tmp_path, INERT, ["4", "8", "64", "4"], ok=True)
    assert len(session.calls) == 1
    assert all(jt.trace is jts[0].trace for jt in jts)
    assert [jt.shared for jt in jts] == [False, True, True, True]
    assert runner.stages["script"] == [4, 1] and runner.unique == 1


def test_a_failed_shared_trace_is_repeated_per_value(tmp_path: Path) -> None:
    session, runner, jts = _run(tmp_path, INERT, ["4", "8", "64", "4"], ok=False)
    assert sorted(c["CONC"] for c in session.calls) == ["4", "64", "8"]
    assert jts[0].trace is jts[3].trace and jts[1].trace is not jts[0].trace
    assert runner.stages["script"] == [4, 3]


@pytest.mark.parametrize("script, concs, traced", [
    (STEERING, ["4", "8"], 2),  # the value reaches the server: one trace per value
    (INERT, ["4", "08"], 2),  # not a plain number (arithmetic could differ)
    (HELPER, ["4", "8"], 2),
])
def test_values_that_may_matter_are_traced_apart(tmp_path: Path, script: str,
                                                 concs: list[str], traced: int) -> None:
    session, _, _ = _run(tmp_path, script, concs, ok=True)
    assert len(session.calls) == traced
