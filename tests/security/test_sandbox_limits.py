"""Issue 27, items 3 and 6: a trace's limits fail closed.

A recipe that floods the ledger past a cap, cuts off a record or goes past the trace's
aggregate memory or process bound gets no verdict and an error (PO310), never a pass.
End to end through ``policy check`` on the seed recipe (whose golden AL is 2.83): each
attack first launches vllm with 2.83 (a record the old code kept), then does its thing,
then launches vllm with AL 3.60 (the record the old code dropped).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.sandbox import Limits, Session, namespaces_available, trace
from tests.policy.test_check import KEY, SEED, check, seed_repo

LAUNCH = 'wait_for_server_ready --port "$PORT" --server-pid "$SERVER_PID" ' \
    '--server-log "$SERVER_LOG"\n'
BAD = 'vllm serve "$MODEL" --speculative-config "${SPEC_CONFIG/2.83/3.60}"\n'
# the ledger as a stub finds it (a recipe knows ixtool's code): the FIFO beside the
# stubs' folder on PATH
FIND = ('for d in ${PATH//:/ }; do [[ -p ${d%/bin}/trace/ledger ]] && '
        'L=${d%/bin}/trace/ledger; done\n')
FLOODS = {
    # 4,000 complete records: the finished-record cap
    "finished-cap": FIND + "for ((i = 0; i < 4000; i++)); do "
                    "printf '9-%d-1 T srun\\t\\n9-%d-1 Z 1\\t\\n' $i $i; done > \"$L\"\n",
    # 8,000 records begun and never completed: the open-record cap
    "open-cap": FIND + "for ((i = 0; i < 8000; i++)); do printf '8-%d-1 T srun\\t\\n' $i; done "
                '> "$L"\n',
}


@pytest.mark.parametrize("flood", sorted(FLOODS))
def test_a_ledger_flood_cannot_hide_a_launch(tmp_path: Path, corpus: Path, flood: str) -> None:
    """PoC (issue 27, item 3): the flood filled a ledger cap, the 3.60 launch after it
    was silently dropped and the check passed on the 2.83 launch before it."""
    edit = (LAUNCH, LAUNCH + FLOODS[flood] + BAD)
    res = check(seed_repo(tmp_path, edit), corpus)
    assert res.exit_code() == 1, [f.message for f in res.findings]
    errors = {f.rule for f in res.errors}
    assert "PO310" in errors, [f.message for f in res.findings]
    f = next(f for f in res.errors if f.rule == "PO310")
    assert f.file == SEED and KEY in f.message and "ledger overflowed" in f.message, f.message
    throughput = next(r for r in res.info["rows"] if r["mode"] == "throughput")
    assert throughput["verdict"].startswith("FAIL") and throughput["why-unchecked"], throughput


def test_a_launch_cut_off_by_the_end_of_the_trace_is_not_lost(tmp_path: Path,
                                                              corpus: Path) -> None:
    """A record still being written when the trace ends (the recipe exits while its
    stub records in the background) was dropped: the 3.60 launch went unseen."""
    edit = (LAUNCH, LAUNCH + FIND + 'printf "7-1-1 T vllm\\t\\n" > "$L"\n')
    res = check(seed_repo(tmp_path, edit), corpus)
    assert {f.rule for f in res.errors} == {"PO310"}, [f.message for f in res.findings]
    assert "cut off" in next(f for f in res.errors).message


# ------------------------------------------------------------------ item 6: bounded traces

# four processes of 60 MB each: every one far under the per-process limit (2 GiB of
# address space), together over the trace's aggregate bound of 150 MB in the tests
# (scaled to a shared 2-core machine: never more than ~250 MB at once, for < 1 s)
HOGS = ('for i in 1 2 3 4; do python3 -c "import time; b = b\'x\' * (60 << 20); '
        'time.sleep(8)" & done\nwait\n')
SMALL = Limits(memory=150 << 20)


def _mode(mode: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """Session arguments for one isolation mode (skipped where it cannot run)."""
    if mode == "namespaces":
        if not namespaces_available():
            pytest.skip("user namespaces unavailable here")
        return {}
    if mode == "bwrap":
        if trace.find_bwrap(trace.BASE_PATH, prefix=trace._as_nobody()) is None:
            pytest.skip("bubblewrap cannot build a sandbox here")
        return {"isolate": False}
    monkeypatch.setattr(trace, "find_bwrap", lambda path, **kw: None)
    return {"isolate": False, "allow_unsandboxed": True}


def _repo(tmp: Path, body: str) -> Path:
    repo = tmp / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "t.sh").write_text("#!/bin/bash\n" + body)
    return repo


@pytest.mark.parametrize("mode", ["namespaces", "bwrap", "basic"])
def test_processes_together_over_the_trace_bound_are_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """PoC (issue 27 item 6): 4 processes × 700 MB, each under the per-process limit, ran
    in one trace; only an outside cgroup stopped them, and ixtool reported success.  Now
    the trace's processes are summed: past its bound it is killed, not ok, and says so."""
    kw = _mode(mode, monkeypatch)
    with Session(_repo(tmp_path, HOGS + "echo SURVIVED\n"), limits=SMALL, **kw) as s:
        assert s.isolation == mode
        tr = s.trace("benchmarks/t.sh", {}, timeout=30)
    assert not tr.ok and not tr.timed_out, (tr.seconds, tr.events)  # stopped, not timed out
    assert (tr.stopped_by or "").startswith("memory: "), (tr.stopped_by, tr.stderr_tail[-300:])
    assert "SURVIVED" not in tr.stdout_tail
    assert 150 << 20 < tr.peak_memory < 300 << 20 and tr.peak_processes >= 5


def test_processes_together_under_the_bound_pass(tmp_path: Path) -> None:
    """The bound is on the trace as a whole: two of the same processes (120 MB) pass."""
    if not namespaces_available():
        pytest.skip("user namespaces unavailable here")
    with Session(_repo(tmp_path, HOGS.replace("1 2 3 4", "1 2").replace("sleep(8)", "sleep(1)")
                       + "echo SURVIVED\n"), limits=SMALL) as s:
        tr = s.trace("benchmarks/t.sh", {}, timeout=30)
    assert tr.ok and tr.stopped_by is None and "SURVIVED" in tr.stdout_tail, tr.events
    assert 100 << 20 < tr.peak_memory < 150 << 20


@pytest.mark.parametrize(("body", "limits", "kind"), [
    ("for i in $(seq 40); do (exec /usr/bin/sleep 4) & done\nwait\n",
     Limits(processes=20), "processes"),
    ("head -c 3000000 /dev/zero\n", Limits(output=1 << 20), "output"),
    ("python3 -c \"import os, time; f = os.memfd_create('m'); os.write(f, b'x' * (40 << 20)); "
     "time.sleep(8)\" &\nwait\n", Limits(memory=30 << 20), "memory"),
    ("ipcmk -M 100000000 || echo REFUSED\n/usr/bin/sleep 2\n", Limits(memory=50 << 20), None),
], ids=["processes", "output", "unmapped-memfd", "sysv-shm"])
def test_every_bound_of_a_trace(tmp_path: Path, body: str, limits: Limits,
                                kind: str | None) -> None:
    """Processes at once, output, memory held in a memfd nobody maps; System V shared
    memory beyond the bound is refused (the trace's own IPC namespace, gone with it)."""
    if not namespaces_available():
        pytest.skip("user namespaces unavailable here")
    with Session(_repo(tmp_path, body), limits=limits) as s:
        tr = s.trace("benchmarks/t.sh", {}, timeout=30)
    if kind is None:
        assert "REFUSED" in tr.stdout_tail, (tr.stdout_tail, tr.stderr_tail[-300:])
        return
    assert not tr.ok and (tr.stopped_by or "").startswith(f"{kind}: "), \
        (tr.stopped_by, tr.stderr_tail[-300:])


def test_a_trace_stopped_for_memory_is_not_checked(tmp_path: Path, corpus: Path) -> None:
    """End to end: the seed recipe (AL 2.83, which passes) with the memory hogs before
    its server: the row is not checked and the check fails with PO310, never a pass."""
    from inferencex_tools.policy.service import CheckRequest, run_check
    from tests.policy.test_check import ROOT

    repo = seed_repo(tmp_path, (LAUNCH, HOGS + LAUNCH))
    res = run_check(CheckRequest(
        root=repo, registry=ROOT / "golden_al_distribution/registry.yaml",
        curves_dir=corpus / "golden_al_distribution", timeout=30, limits=SMALL))
    assert res.exit_code() == 1
    po310 = [f for f in res.errors if f.rule == "PO310"]
    assert po310 and "memory" in po310[0].message, [f.message for f in res.findings]
    assert {r["verdict"] for r in res.info["rows"]} == {"FAIL PO310"}
