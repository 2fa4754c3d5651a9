"""Issue 34: artifacts are matched to jobs by the benchmark template's upload rules (an
eval-only job's ``agentic_<RESULT_FILENAME>`` is the eval's), one job's hostile numbers
end only that job's measurement, and every note reaches every output format."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.al.measure import Invalid, LogScan, from_export, from_logs, lines
from tests.al.conftest import ROOT, Auditor
from tests.al.fixtures import (
    GQA_RATES,
    REAL_RATES,
    SEED_KEY,
    Job,
    draw,
    export,
    seed_jobs,
    split,
    vllm_log,
    write_run,
)


def rules(a: object) -> list[str]:
    return sorted(f.rule for f in a.result.findings)  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- matching

def test_the_seed_sweep_is_14_throughput_jobs_and_1_eval(run_audit: Auditor) -> None:
    """The eval-only job uploads agentic_<RF> too (run-sweep.yml: eval-only with
    scenario-type agentic-coding); its real acceptance (the GQA head's 2.78) is the
    eval's, never a throughput job's against the forced 2.83."""
    a = run_audit(seed_jobs(random.Random(5), eval_rates=GQA_RATES))
    assert a.result.info["modes"] == {"throughput": 14, "eval": 1}
    assert "AL201" not in rules(a) and rules(a) == ["AL202"]
    (ev,) = [j for j in a.jobs if j.launch.mode == "eval"]
    assert any(n.startswith("agentic_") for n in ev.artifacts)
    assert any(n.startswith("eval_server_logs_") for n in ev.artifacts)


def test_an_eval_far_from_the_forced_al_is_no_error(run_audit: Auditor) -> None:
    a = run_audit(seed_jobs(random.Random(6), eval_rates=REAL_RATES))
    assert a.forced_failures == [] and a.result.exit_code() == 0
    assert len(a.jobs) == 15


def test_merge_preflight_judges_throughput_jobs_only(run_audit: Auditor) -> None:
    """merge-with-reuse (MR330) asks only the forced-AL question: the eval's artifacts
    are known as the eval's and not judged."""
    a = run_audit(seed_jobs(random.Random(6), eval_rates=REAL_RATES), throughput_only=True)
    assert a.forced_failures == [] and a.result.info["modes"] == {"throughput": 14}


def test_an_artifact_both_modes_upload_with_no_other_evidence_is_not_read(
        run_audit: Auditor) -> None:
    job = Job(8, 1, "none", 16, counts=draw(random.Random(1), 100_000, REAL_RATES),
              log=False)

    def only_agentic(d: Path) -> None:
        for p in d.iterdir():
            if not p.name.startswith("agentic_"):
                for f in p.iterdir():
                    f.unlink()
                p.rmdir()

    a = run_audit([job], prepare=only_agentic)
    assert rules(a) == ["AL105"] and a.jobs == []
    assert "throughput" in a.result.findings[0].message
    assert "eval" in a.result.findings[0].message


def test_template_upload_rules_are_read_from_the_repository() -> None:
    """A template that names the server logs otherwise is followed, condition and all."""
    from inferencex_tools.al.uploads import context, evaluated, template_uploads

    wf = b"""
on: {workflow_call: {inputs: {eval-only: {type: boolean}}}}
jobs:
  benchmark:
    steps:
      - uses: actions/upload-artifact@v7
        if: ${{ always() }}
        with:
          name: ${{ inputs.eval-only && 'evlogs_' || 'logs_' }}${{ env.RESULT_FILENAME }}
          path: |
            server.log
      - uses: actions/upload-artifact@v7
        if: ${{ !inputs.eval-only }}
        with: {name: 'raw_${{ env.RESULT_FILENAME }}', path: 'results/**'}
"""
    steps = template_uploads({".github/workflows/t.yml": wf})[".github/workflows/t.yml"]
    env = {"RESULT_FILENAME": "RF"}
    assert evaluated(steps, context({"eval-only": False}, env, "n")) == [
        ("logs_RF", "logs"), ("raw_RF", "raw")]
    assert evaluated(steps, context({"eval-only": True}, env, "n")) == [("evlogs_RF", "logs")]


@pytest.mark.slow
def test_real_template_eval_artifacts(real_tree: Path, tmp_path: Path) -> None:
    """The real tree's benchmark-tmpl.yml: an eval-only job of an agentic key uploads
    agentic_ + eval_server_logs_ under its RESULT_FILENAME; the audit counts one eval
    job and one throughput job, and the eval's real acceptance is no AL201."""
    from inferencex_tools.al.service import AuditRequest, RunInfo, audit
    from inferencex_tools.io.artifacts import Limits, run_directory
    from tests.al.fixtures import result_filename

    rng = random.Random(3)
    d = tmp_path / "run"
    forced = draw(rng, 200_000, (0.82, 0.67, 0.0))
    real = draw(rng, 200_000, (0.70, 0.40, 0.0))
    for mode, runner, c in (("throughput", "b200-dgxc_01", forced),
                            ("eval", "b200-dgxc_02", real)):
        rf = result_filename(prefix="dsv4", tp=8, ep=1, conc=14, kv="dram",
                             backend="vllm-simple", precision="fp4", runner=runner)
        raw = d / f"agentic_{rf}"
        raw.mkdir(parents=True)
        logs = d / (f"server_logs_{rf}" if mode == "throughput" else f"eval_server_logs_{rf}")
        logs.mkdir()
        (logs / "server.log").write_text(vllm_log(split(rng, c, 10)))
        if mode == "throughput":
            (raw / "aiperf_artifacts").mkdir()
            (raw / "aiperf_artifacts" / "server_metrics_export.json").write_text(
                json.dumps(export(c)))
        else:
            (raw / "server.log").write_text(vllm_log(split(rng, c, 10)))
    a = audit(AuditRequest(root=real_tree, artifacts=run_directory(d, Limits()),
                           run=RunInfo(directory=str(d))))
    assert a.result.info["modes"] == {"throughput": 1, "eval": 1}, a.result.findings
    assert a.forced_failures == []


# ----------------------------------------------------------------------------- numbers

HUGE = "1" + "0" * 399  # a 400-digit integer: json.loads takes it, float() does not


def _with_total(data: dict[str, object], family: str, value: str) -> bytes:
    text = json.dumps(data)
    fam = text.index(f'"{family}"')
    at = text.index('"total": ', fam) + len('"total": ')
    end = text.index(",", at)
    return (text[:at] + value + text[end:]).encode()


@pytest.mark.parametrize(("family", "where"), [
    ("vllm:spec_decode_num_drafts", "stats.total"),
    ("vllm:spec_decode_num_accepted_tokens", "stats.total"),
])
def test_a_huge_number_in_one_export_is_that_jobs_finding(
        run_audit: Auditor, family: str, where: str) -> None:
    good = draw(random.Random(11), 200_000, (0.80, 0.59, 0.44))
    bad = draw(random.Random(12), 200_000, REAL_RATES)  # did not serve the forced AL
    hostile = _with_total(export(good), family, HUGE)
    a = run_audit([Job(8, 1, "none", 4, counts=good, raw_export=hostile),
                   Job(8, 8, "none", 4, counts=bad)])
    got = [f for f in a.result.findings if f.rule == "AL102"]
    assert len(got) == 1 and "400 digits" in got[0].message, a.result.findings
    assert [j.launch.label() for j in a.forced_failures] == [
        f"{SEED_KEY} [tp8 ep8 kv=none conc=4 throughput]"]
    assert a.result.exit_code() == 1


def test_hostile_numbers_in_timeslices_gauges_and_logs() -> None:
    good = draw(random.Random(11), 200_000, (0.80, 0.59, 0.44))
    sl = split(random.Random(2), good, 4)
    doc = export(good, slices=sl)
    text = json.dumps(doc)
    i = text.index('"timeslices"')
    j = text.index('"total": ', i) + len('"total": ')
    k = text.index(",", j)
    with pytest.raises(Invalid, match="digits"):
        from_export((text[:j] + HUGE + text[k:]).encode(), "x", "vllm", 3)
    gauge = {"metrics": {"sglang:spec_accept_length": {"type": "gauge", "series": [
        {"labels": {}, "stats": {"avg": 10 ** 400, "std": 0.1}}]}}}
    with pytest.raises(Invalid):
        from_export(json.dumps(gauge).encode(), "x", "sglang", 3)
    gauge["metrics"]["sglang:spec_accept_length"]["series"][0]["stats"] = {  # type: ignore[index]
        "avg": -2.8, "std": 0.1}
    with pytest.raises(Invalid):
        from_export(json.dumps(gauge).encode(), "x", "sglang", 3)
    log = vllm_log(sl).replace(f"Accepted: {sl[1].accepted} tokens", f"Accepted: {HUGE} tokens")
    scan = LogScan()
    scan.feed(lines([log.encode()]))
    with pytest.raises(Invalid, match="numbers no server writes"):
        from_logs(scan, "vllm", 3)


def test_a_counter_reset_during_profiling_is_a_finding() -> None:
    """aiperf clamps a counter that went down to 0 (a restarted server): its slices then
    add up to more than its total, and those counts are not the profiling phase's."""
    good = draw(random.Random(11), 200_000, (0.80, 0.59, 0.44))
    doc = export(good, slices=split(random.Random(2), good, 4))
    doc["metrics"]["vllm:spec_decode_num_drafts"]["series"][0]["stats"]["total"] = 1000.0
    with pytest.raises(Invalid, match="reset"):
        from_export(json.dumps(doc).encode(), "x", "vllm", 3)


def test_hostile_job_among_many_through_the_cli(tmp_path: Path) -> None:
    jobs = seed_jobs(random.Random(2), rates=REAL_RATES)
    jobs[0].raw_export = _with_total(export(jobs[0].counts), "vllm:spec_decode_num_drafts",
                                     HUGE)
    d = write_run(tmp_path / "run", jobs)
    r = subprocess.run([sys.executable, "-m", "inferencex_tools", "al", "audit",
                        "--artifacts", str(d), "--root", str(ROOT), "--format", "json"],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["info"]["verdicts"] == {"ERROR": 14}  # the hostile job falls back to its log
    assert sum(f["rule"] == "AL102" for f in doc["findings"]) == 1


# ----------------------------------------------------------------------------- SGLang

SGL = "http://localhost:30000/metrics"


def _series(labels: dict[str, str], total: float) -> dict[str, object]:
    return {"endpoint_url": SGL, "labels": labels, "stats": {"total": total}}


def sglang_export(verify: float, generated: float, *, gauge: tuple[float, float] | None
                  = None, scrapes: int | None = None) -> bytes:
    """SGLang 0.5.23's families as aiperf exports them: the tokenizer's counters
    (labels model_name, engine_type; generation_tokens also is_streaming) and the
    scheduler's gauge (labels model_name, engine_type, tp_rank, pp_rank, moe_ep_rank)."""
    base = {"model_name": "m", "engine_type": "unified"}
    metrics: dict[str, object] = {}
    if verify:
        metrics["sglang:spec_verify_calls"] = {"type": "counter", "series": [
            _series(base, verify)]}
        metrics["sglang:generation_tokens"] = {"type": "counter", "series": [
            _series({**base, "is_streaming": "true"}, generated * 0.75),
            _series({**base, "is_streaming": "false"}, generated * 0.25)]}
    if gauge is not None:
        metrics["sglang:spec_accept_length"] = {"type": "gauge", "series": [
            {"endpoint_url": SGL, "labels": {**base, "tp_rank": "0", "pp_rank": "0",
                                             "moe_ep_rank": "0"},
             "stats": {"avg": gauge[0], "std": gauge[1]}}]}
    doc: dict[str, object] = {"schema_version": "1.1", "metrics": metrics}
    if scrapes is not None:
        doc["summary"] = {"endpoint_info": {"localhost:30000": {"unique_updates": scrapes,
                                                                "total_fetches": scrapes}}}
    return json.dumps(doc).encode()


def test_sglang_counters_first() -> None:
    """Δgeneration_tokens / Δspec_verify_calls: SGLang's own acceptance length
    (completion tokens per verification call), before its gauge."""
    m = from_export(sglang_export(100_000, 283_000, gauge=(2.5, 0.2)), "x", "sglang", 3)
    assert m is not None and m.source == "counters" and abs(m.al - 2.83) < 1e-9
    assert m.drafts == 100_000 and m.se < 0.01


def test_sglang_gauge_with_its_samples_is_no_longer_lenient() -> None:
    """The issue's run: real 2.41 under a forced 2.99 reads 2.460 ± 0.170 from the gauge
    alone; over 3,600 scrapes the error is 0.170/60, and the forced AL was not served."""
    from inferencex_tools.al.judge import Bands, Launch, judge

    m = from_export(sglang_export(0, 0, gauge=(2.46, 0.17), scrapes=3600), "x", "sglang", 3)
    assert m is not None and m.source == "gauge" and m.se == pytest.approx(0.17 / 60)
    launch = Launch("k", "tp4", 4, 1, 16, "throughput", True, False, "s.sh", "c.yaml",
                    engine="sglang", has_spec=True, synthetic=True, forced=2.99, k=3)
    assert judge(launch, m, Bands(), "a").status == "ERROR"


def test_sglang_gauge_without_samples_is_a_wide_band_with_a_note() -> None:
    m = from_export(sglang_export(0, 0, gauge=(2.83, 0.01)), "x", "sglang", 3)
    assert m is not None and m.se >= 0.05
    assert any("wide band" in n for n in m.notes)


def test_sglang_counters_that_cannot_be_true() -> None:
    with pytest.raises(Invalid, match="verification"):
        from_export(sglang_export(100_000, 50_000), "x", "sglang", 3)


def test_atom_counters() -> None:
    """ATOM's standalone server: steps by accepted count, accepted and draft tokens."""
    steps = {0: 10_000, 1: 20_000, 2: 30_000, 3: 40_000}
    acc = sum(j * n for j, n in steps.items())
    doc = {"metrics": {
        "atom:mtp_decode_steps": {"type": "counter", "series": [
            {"labels": {"accepted_tokens": str(j)}, "stats": {"total": float(n)}}
            for j, n in steps.items()]},
        "atom:mtp_accepted_tokens": {"type": "counter", "series": [
            {"labels": {}, "stats": {"total": float(acc)}}]},
        "atom:mtp_draft_tokens": {"type": "counter", "series": [
            {"labels": {}, "stats": {"total": 300_000.0}}]}}}
    m = from_export(json.dumps(doc).encode(), "x", "atom", 3)
    assert m is not None and m.source == "counters" and m.al == pytest.approx(1 + acc / 1e5)
    assert m.per_pos == pytest.approx((0.9, 0.7, 0.4))


# ----------------------------------------------------------------------------- notes

def test_sarif_carries_the_notes(seed_launches: list[object], tmp_path: Path) -> None:
    """Every note the audit has about a job is a finding (AL304 here: a gauge's time
    average, not counts): SARIF, GitHub annotations and JSON carry it, not only the
    text table."""
    import dataclasses

    from inferencex_tools.al.service import AuditRequest, RunInfo, audit
    from inferencex_tools.io.artifacts import Limits, run_directory
    from inferencex_tools.report.reporters import render

    launches = [dataclasses.replace(n, launch=dataclasses.replace(  # type: ignore[type-var]
        n.launch, engine="sglang")) for n in seed_launches]  # type: ignore[attr-defined]
    job = Job(8, 1, "none", 4, raw_export=sglang_export(0, 0, gauge=(2.83, 0.01)),
              log=False)
    d = write_run(tmp_path / "run", [job])
    a = audit(AuditRequest(root=ROOT, artifacts=run_directory(d, Limits()),
                           run=RunInfo(directory=str(d)), launches=launches))  # type: ignore[arg-type]
    assert a.jobs[0].verdict is not None and a.jobs[0].verdict.status == "ok"
    sarif = json.loads(render(a.result, "sarif"))["runs"][0]["results"]
    assert [(x["ruleId"], x["level"]) for x in sarif] == [("AL304", "note")]
    assert "wide band" in sarif[0]["message"]["text"]
    assert "AL304" in render(a.result, "github")


# ----------------------------------------------------------------------------- golden

def test_golden_lookup_at_a_pr_head_is_the_bases(tmp_path: Path) -> None:
    """--root at a PR head whose registry lost the launched draft's row: the audit
    judges with the base's curves, as review and the gate do (a change cannot bring its
    own curves), and names the same registry row (was: golden —, thinking ?, AL302)."""
    import shutil

    from inferencex_tools.al.service import AuditRequest, RunInfo, audit
    from inferencex_tools.io.artifacts import Limits, run_directory
    from tests.conftest import git

    repo = tmp_path / "repo"
    for rel in ("configs", "runners", "golden_al_distribution", "benchmarks/benchmark_lib.sh",
                "benchmarks/single_node", ".github"):
        src, dst = ROOT / rel, repo / rel
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "seed")
    git(repo, "checkout", "-q", "-b", "pr")
    reg = repo / "golden_al_distribution" / "registry.yaml"
    text = reg.read_text()
    start = text.index("  - id: minimaxm3-eagle3\n")
    end = text.index("  - id: minimaxm3-eagle3-gqa\n")
    reg.write_text(text[:start] + text[end:])
    git(repo, "commit", "-q", "-am", "PR: drop a registry row")
    d = write_run(tmp_path / "run", [j for j in seed_jobs(random.Random(5),
                                                           eval_rates=GQA_RATES)
                                     if j.mode == "eval"])
    a = audit(AuditRequest(root=repo, artifacts=run_directory(d, Limits()),
                           run=RunInfo(directory=str(d)), allow_unsandboxed=True))
    (ev,) = a.jobs
    assert (ev.launch.registry_row, ev.launch.thinking, ev.launch.golden) == (
        "minimaxm3-eagle3", "thinking_on", 2.83), a.result.findings
    assert "AL302" not in rules(a) and a.result.info["golden-curves"]["base"] == "main"
    head = audit(AuditRequest(root=repo, artifacts=run_directory(d, Limits()),
                              run=RunInfo(directory=str(d)), registry=reg,
                              allow_unsandboxed=True))
    assert head.jobs[0].launch.registry_row is None and "AL302" in rules(head)
