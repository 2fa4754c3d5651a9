"""``ixtool al audit --artifacts DIR`` on the seed recipe: the four runs of issue 28 and
the artifacts that must not be trusted."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.al.render import markdown, text_table
from inferencex_tools.io.artifacts import Limits
from tests.al.conftest import ROOT, Auditor
from tests.al.fixtures import (
    GQA_RATES,
    REAL_RATES,
    SEED_KEY,
    Job,
    draw,
    export,
    seed_jobs,
    sglang_log,
    write_run,
)


def rules(a: object) -> list[str]:
    return sorted(f.rule for f in a.result.findings)  # type: ignore[attr-defined]


def statuses(a: object) -> dict[str, int]:
    return a.result.info["verdicts"]  # type: ignore[attr-defined]


def test_seed_run_serves_the_forced_al(run_audit: Auditor) -> None:
    a = run_audit(seed_jobs(random.Random(1)))
    assert len(a.jobs) == 14 and statuses(a) == {"ok": 14}
    assert a.result.findings == [] and a.result.exit_code() == 0
    for j in a.jobs:
        la = j.launch
        assert (la.config_key, la.engine, la.method, la.k, la.thinking, la.forced,
                la.golden, la.registry_row) == (
            SEED_KEY, "vllm", "eagle3", 3, "thinking_on", 2.83, 2.83, "minimaxm3-eagle3")
        assert la.draft == "Inferact/MiniMax-M3-EAGLE3"
        assert j.measurement is not None and j.measurement.source == "counters"
        assert abs(j.measurement.al - 2.83) < 0.01 and len(j.measurement.per_pos) == 3
    # every arm and concurrency of the key, matched by its RESULT_FILENAME
    assert sorted((j.launch.entry, j.launch.conc) for j in a.jobs) == sorted(
        [("tp8 kv=none", c) for c in (1, 4, 8, 12, 16)]
        + [("tp8 ep8 kv=none", c) for c in (1, 4, 8, 12, 16)]
        + [("tp8 ep8 kv=dram", c) for c in (4, 8, 12, 16)])


def test_synthetic_flag_that_did_not_apply_is_an_error(run_audit: Auditor) -> None:
    a = run_audit(seed_jobs(random.Random(2), rates=REAL_RATES))
    assert statuses(a) == {"ERROR": 14} and rules(a) == ["AL201"] * 14
    assert a.result.exit_code() == 1 and len(a.forced_failures) == 14
    f = a.result.findings[0]
    assert "forces AL 2.83" in f.message and "did not take effect" in f.message
    assert f.file == "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
    assert f.data["forced"] == 2.83 and 2.50 < f.data["measured"] < 2.54


def test_one_job_that_did_not_apply(run_audit: Auditor) -> None:
    jobs = seed_jobs(random.Random(3))
    jobs[5].counts = draw(random.Random(4), 300_000, REAL_RATES)
    a = run_audit(jobs)
    assert statuses(a) == {"ok": 13, "ERROR": 1}
    assert [j.launch.label() for j in a.forced_failures] == [
        f"{SEED_KEY} [tp8 ep8 kv=none conc=1 throughput]"]


def test_gqa_head_eval_against_the_non_gqa_curve(run_audit: Auditor) -> None:
    a = run_audit(seed_jobs(random.Random(5), eval_rates=GQA_RATES))
    assert statuses(a) == {"ok": 14, "WARNING": 1} and rules(a) == ["AL202"]
    assert a.result.exit_code() == 0 and a.result.exit_code(strict=True) == 1
    for f in a.result.findings:
        assert "minimaxm3-eagle3-gqa" in f.message and "draft/curve mismatch" in f.message
        assert f.data["matches"]["value"] == 2.78 and f.data["golden"] == 2.83
    evals = [j for j in a.jobs if j.launch.mode == "eval"]
    assert {j.measurement.source for j in evals if j.measurement} == {"log"}


def test_eval_at_the_golden_value_passes(run_audit: Auditor) -> None:
    a = run_audit(seed_jobs(random.Random(6), eval_rates=(0.80, 0.59, 0.44)))
    assert statuses(a) == {"ok": 15} and a.result.findings == []
    assert a.result.info["modes"] == {"throughput": 14, "eval": 1}


@pytest.mark.parametrize(("rates", "rule", "words"), [
    ((0.90, 0.70, 0.53), "AL202", "far from"),  # 3.13: far above, no cell explains it
    ((0.02, 0.0, 0.0), "AL202", "broken drafter"),
    ((0.82, 0.61, 0.45), "AL203", "outside the band"),  # 2.88: near, and no cell is 2.88
])
def test_real_verification_verdicts(run_audit: Auditor, rates: tuple[float, ...],
                                    rule: str, words: str) -> None:
    jobs = [Job(8, 1, "none", 16, mode="eval", counts=draw(random.Random(8), 400_000, rates))]
    a = run_audit(jobs)
    got = [f for f in a.result.findings if f.rule.startswith("AL2")]
    assert [f.rule for f in got] == [rule], a.result.findings
    assert words in got[0].message


def test_missing_counters_and_lines_is_not_measured(run_audit: Auditor) -> None:
    rng = random.Random(9)
    j = Job(8, 1, "none", 4, counts=None)  # no spec-decode families, no SpecDecoding lines
    j2 = Job(8, 8, "none", 4, counts=draw(rng, 100_000, (0.8, 0.59, 0.44)), metrics=False)
    a = run_audit([j, j2])
    by = {j.launch.conc if j.launch.ep == 1 else -1: j for j in a.jobs}
    assert by[4].verdict.status == "not measured"
    assert "carry no acceptance counters" in by[4].verdict.detail
    assert by[-1].verdict.status == "ok" and by[-1].measurement.source == "log"
    assert rules(a) == ["AL301"]


def test_job_without_spec_decoding_is_not_measured_without_finding(
        run_audit: Auditor, tmp_path: Path) -> None:
    # the non-MTP sibling key's job: same model prefix, spec none
    j = Job(8, 1, "none", 4, counts=None, spec="none")
    a = run_audit([j])
    assert [(x.launch.config_key, x.verdict.status) for x in a.jobs] == [
        ("minimaxm3-fp8-h200-vllm-agentic", "not measured")]
    assert a.result.findings == []


def test_unmatched_artifact(run_audit: Auditor) -> None:
    j = Job(8, 1, "none", 3, counts=draw(random.Random(1), 1000, (0.8, 0.59, 0.44)))
    a = run_audit([j])  # conc 3 is no row of the seed key
    assert a.jobs == [] and set(rules(a)) == {"AL103"}


def test_wrong_runner_does_not_match(run_audit: Auditor) -> None:
    j = Job(8, 1, "none", 4, runner="b200-nv_0",
            counts=draw(random.Random(1), 1000, (0.8, 0.59, 0.44)))
    a = run_audit([j])
    assert a.jobs == [] and set(rules(a)) == {"AL103"}


# ----------------------------------------------------------------------------- hostile input

GOOD = draw(random.Random(11), 200_000, (0.80, 0.59, 0.44))
EXPORT = json.dumps(export(GOOD)).encode()


@pytest.mark.parametrize(("name", "data", "words"), [
    ("truncated", EXPORT[: len(EXPORT) // 2], "Expecting"),
    ("nan", EXPORT.replace(b'"total": 200000.0', b'"total": NaN', 1), "NaN"),
    ("negative", json.dumps(export(GOOD)).replace(
        f'"total": {float(GOOD.accepted)}', '"total": -5.0', 1).encode(), "not a count"),
    ("deep", b'{"metrics": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "deep"),
    ("huge-int", b'{"metrics": {"vllm:spec_decode_num_drafts": {"series": [{"stats": '
     b'{"total": 1' + b"0" * 5000 + b"}}]}}}", "digits"),
    ("not-json", b"\xff\xfe garbage", "UTF-8"),
    ("no-metrics", b'{"schema_version": "1.0"}', "no 'metrics'"),
    ("overaccept", json.dumps(export(GOOD)).replace(
        f'"total": {float(GOOD.draft_tokens)}', '"total": 1000.0', 1).encode(), "drafted"),
    ("pos-mismatch", json.dumps(export(GOOD)).replace(
        f'"position": "2"}}, "stats": {{"total": {float(GOOD.per_pos[2])}',
        '"position": "2"}, "stats": {"total": 1.0', 1).encode(), "per-position"),
])
def test_hostile_export_is_reported_and_the_log_is_used(
        run_audit: Auditor, name: str, data: bytes, words: str) -> None:
    a = run_audit([Job(8, 1, "none", 4, counts=GOOD, raw_export=data)])
    got = [f for f in a.result.findings if f.rule == "AL102"]
    assert len(got) == 1 and words in got[0].message, a.result.findings
    (job,) = a.jobs
    assert job.measurement is not None and job.measurement.source == "log"
    assert job.verdict.status == "ok"


def test_log_beyond_the_read_limit_and_long_lines(run_audit: Auditor) -> None:
    from tests.al.fixtures import split, vllm_log

    log = ("x" * 5_000_000 + "\n").encode() + vllm_log(
        split(random.Random(1), GOOD, 30)).encode() + b"y" * 3_000_000
    a = run_audit([Job(8, 1, "none", 4, counts=GOOD, metrics=False, raw_log=log)],
                  limits=Limits(max_file=7_000_000))
    (job,) = a.jobs
    assert job.measurement is not None and job.verdict.status == "ok"
    assert [f.rule for f in a.result.findings] == ["AL101"]
    assert "read stopped" in a.result.findings[0].message


def test_symlinks_and_special_files_are_not_followed(run_audit: Auditor) -> None:
    def link(d: Path) -> None:
        (art,) = [p for p in d.iterdir() if p.name.startswith("server_logs_")]
        (art / "server.log").unlink()
        (art / "server.log").symlink_to("/etc/passwd")
        (art / "evil.log").symlink_to("/dev/zero")

    a = run_audit([Job(8, 1, "none", 4, counts=GOOD, metrics=False)], prepare=link)
    assert sorted(f.rule for f in a.result.findings) == ["AL101", "AL101", "AL301"]
    (job,) = a.jobs
    assert job.verdict.status == "not measured"


def test_too_many_files(run_audit: Auditor) -> None:
    extra = {f"server_logs_{{rf}}/junk/{i}.txt": b"" for i in range(50)}
    a = run_audit([Job(8, 1, "none", 4, counts=GOOD, extra=extra, metrics=False)],
                  limits=Limits(max_members=20))
    assert "AL101" in rules(a) and a.jobs[0].verdict.status == "ok"  # the log is read first


def test_vllm_log_with_another_k_is_invalid(run_audit: Auditor) -> None:
    from tests.al.fixtures import Counts, split, vllm_log

    k4 = Counts(GOOD.drafts, [*GOOD.per_pos, 0], 4)
    a = run_audit([Job(8, 1, "none", 4, metrics=False,
                       raw_log=vllm_log(split(random.Random(2), k4, 20)).encode())])
    assert "AL102" in rules(a)
    assert any("another draft length" in f.message for f in a.result.findings)


def test_sglang_lines(tmp_path: Path) -> None:
    from inferencex_tools.al.measure import LogScan, from_logs, lines

    scan = LogScan()
    vals = [2.81, 2.85, 2.83, 2.84, 2.82, 0.0]
    scan.feed(lines([sglang_log(vals).encode()]))
    m = from_logs(scan, "sglang", 3)
    assert m is not None and abs(m.al - 2.83) < 1e-9 and m.intervals == 5
    assert 0.005 < m.se < 0.01


# ----------------------------------------------------------------------------- outputs

def test_text_and_markdown(run_audit: Auditor) -> None:
    a = run_audit(seed_jobs(random.Random(5), eval_rates=GQA_RATES))
    t = text_table(a)
    assert "2.83" in t and "WARNING" in t and "tp8 ep8 kv=dram conc=16" in t
    md = markdown(a)
    assert md.startswith("<!-- ixtool al audit -->")
    assert "| minimaxm3-eagle3 | thinking_on | 3 | throughput | 14 | 2.83 |" in md
    assert "| minimaxm3-eagle3 | thinking_on | 3 | eval | 1 | — |" in md
    assert "```mermaid\nxychart-beta" in md and '"K=3 throughput", "K=3 eval"' in md
    assert "line [2.83, 2.83]" in md


def test_cli_offline(tmp_path: Path) -> None:
    d = write_run(tmp_path / "run", seed_jobs(random.Random(2), rates=REAL_RATES))
    md = tmp_path / "al.md"
    r = subprocess.run([sys.executable, "-m", "inferencex_tools", "al", "audit",
                        "--artifacts", str(d), "--root", str(ROOT), "--format", "json",
                        "--markdown", str(md)], capture_output=True, text=True, check=False,
                       cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["info"]["verdicts"] == {"ERROR": 14}
    assert {f["rule"] for f in doc["findings"]} == {"AL201"}
    assert len(doc["info"]["jobs"]) == 14 and doc["info"]["jobs"][0]["forced"] == 2.83
    assert md.read_text().startswith("<!-- ixtool al audit -->")
    bad = subprocess.run([sys.executable, "-m", "inferencex_tools", "al", "audit",
                          "--root", str(ROOT)], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "exactly one of RUN_ID or --artifacts" in bad.stderr
    sarif = subprocess.run([sys.executable, "-m", "inferencex_tools", "al", "audit",
                            "--artifacts", str(d), "--root", str(ROOT), "--format", "sarif"],
                           capture_output=True, text=True, check=False)
    assert sarif.returncode == 1
    assert {r["ruleId"] for r in json.loads(sarif.stdout)["runs"][0]["results"]} == {"AL201"}


def test_review_carries_the_section(run_audit: Auditor, tmp_path: Path) -> None:
    """`ixtool review --al-audit FILE` puts the section into the sticky summary."""
    from inferencex_tools.errors import InputError
    from inferencex_tools.review.model import Review
    from inferencex_tools.review.render import summary_markdown, to_json

    md = markdown(run_audit(seed_jobs(random.Random(2), rates=REAL_RATES)))
    r = Review(repo="o/r", pr=7, pr_url=None, base="origin/main", merge_base="0" * 40,
               head_sha="1" * 40, verdict="pass", al_audit=md)
    summary = summary_markdown(r)
    assert "### Measured acceptance length" in summary and "14 ERROR" in summary
    assert json.loads(to_json(r))["al-audit"] == md
    assert "Measured acceptance length" not in summary_markdown(Review(
        repo="o/r", pr=7, pr_url=None, base="origin/main", merge_base="0" * 40,
        head_sha="1" * 40, verdict="pass"))
    from inferencex_tools.cli.review import _al_section

    f = tmp_path / "al.md"
    f.write_text(md)
    assert _al_section(f) == md
    f.write_text("## hand-made\n")
    with pytest.raises(InputError, match="not a section"):
        _al_section(f)


def test_trt_counters_atom_lines_and_engines_without_numbers() -> None:
    """TensorRT-LLM: its spec-decode counters (drafts = draft tokens / K); ATOM: the
    vLLM-style log lines when its log has them; otherwise not measured (None)."""
    from inferencex_tools.al.measure import LogScan, from_export, from_logs, lines
    from tests.al.fixtures import split, vllm_log

    trt = {"metrics": {
        "trtllm_spec_decode_num_draft_tokens": {"type": "counter", "series": [
            {"labels": {"model_name": "m"}, "stats": {"total": 300_000.0}}]},
        "trtllm_spec_decode_num_accepted_tokens": {"type": "counter", "series": [
            {"labels": {"model_name": "m"}, "stats": {"total": 183_000.0}}]}}}
    m = from_export(json.dumps(trt).encode(), "x", "trt", 3)
    assert m is not None and m.source == "counters" and abs(m.al - 2.83) < 1e-9
    assert from_export(json.dumps(trt).encode(), "x", "atom", 3) is None
    assert from_export(json.dumps(export(GOOD)).encode(), "x", "sglang", 3) is None
    scan = LogScan()
    scan.feed(lines([vllm_log(split(random.Random(1), GOOD, 12)).encode()]))
    atom = from_logs(scan, "atom", 3)
    assert atom is not None and abs(atom.al - (1 + GOOD.accepted / GOOD.drafts)) < 1e-9
    assert from_logs(scan, "trt", 3) is None and from_logs(scan, "sglang", 3) is None


def test_server_logs_in_a_tarball(run_audit: Auditor) -> None:
    """Multi-node launchers package their server logs as one tarball
    (multinode_server_logs.tar.gz); a tarball in a job's results tree is read the same
    way, one level deep."""
    import io
    import tarfile

    from tests.al.fixtures import split, vllm_log

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = vllm_log(split(random.Random(4), GOOD, 20)).encode()
        ti = tarfile.TarInfo("logs/decode_w0.out")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    job = Job(8, 1, "none", 4, counts=GOOD, metrics=False, log=False,
              extra={"agentic_{rf}/multinode_server_logs.tar.gz":
                     buf.getvalue()})
    a = run_audit([job])
    (j,) = a.jobs
    assert j.measurement is not None and j.measurement.source == "log"
    assert "tar.gz!/logs/decode_w0.out" in j.measurement.file
    assert j.verdict is not None and j.verdict.status == "ok"
