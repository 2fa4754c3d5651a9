"""``ixtool al audit RUN_ID`` and ``policy curves import RUN_ID`` through the fake GitHub
(real PyGithub): artifacts listed, archives fetched from the signed redirect without the
token, read in place; retries, size limits, expired artifacts."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.al.conftest import ROOT
from tests.al.fixtures import GQA_RATES, REAL_RATES, seed_jobs, write_run
from tests.al.test_curves_import import collection, matrix
from tests.merge.fake_github import FakeGitHub, Fault, Run

SLUG = "acme/bench"
RUN_ID = 29784780049


def _head() -> str:
    r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                       text=True, check=False)
    return r.stdout.strip() if r.returncode == 0 else "a" * 40


HEAD = _head()  # the run benchmarked the checkout the tests run in


def zip_dir(d: Path) -> bytes:
    """An artifact archive as GitHub serves it: the uploaded files, relative paths."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for p in sorted(d.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(d).as_posix())
    return buf.getvalue()


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeGitHub]:
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    f = FakeGitHub(bare, SLUG).start()
    yield f
    f.stop()


def publish(fake: FakeGitHub, run_dir: Path, run_id: int = RUN_ID, head: str = HEAD) -> None:
    fake.runs.append(Run(id=run_id, head_sha=head, head_branch="recipe", artifacts=[]))
    fake.archives[run_id] = {p.name: zip_dir(p) for p in sorted(run_dir.iterdir())}


def ixtool(fake: FakeGitHub, *args: str, token: str | None = None
           ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GH_TOKEN": token or fake.token}
    env.pop("GITHUB_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "inferencex_tools", *args, "--repo", SLUG,
                           "--api-url", fake.url], capture_output=True, text=True,
                          check=False, env=env)


def test_audit_run_through_the_api(fake: FakeGitHub, tmp_path: Path) -> None:
    d = write_run(tmp_path / "run", seed_jobs(random.Random(5), eval_rates=GQA_RATES))
    publish(fake, d)
    fake.archives[RUN_ID]["results_bmk"] = zip_dir(d / sorted(os.listdir(d))[0])  # not read
    r = ixtool(fake, "al", "audit", str(RUN_ID), "--root", str(ROOT), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["info"]["verdicts"] == {"ok": 14, "WARNING": 1}
    assert doc["info"]["run"]["run-id"] == RUN_ID and doc["info"]["run"]["head-sha"] == HEAD
    assert {f["rule"] for f in doc["findings"]} == {"AL202"}
    # the archives came from the signed URL, never with the token; the secret signature
    # is in no output
    assert fake.blob_auth == []
    blobs = [p for m, p, st in fake.log if p.startswith("/_blobs/")]
    # agentic_ + (eval_)server_logs_ of the 15 jobs; no bmk_*, gpu metrics, eval results
    assert len(blobs) == 30
    assert fake.blob_sig not in r.stdout + r.stderr


def test_not_served_run_exits_1_and_retries_5xx(fake: FakeGitHub, tmp_path: Path) -> None:
    d = write_run(tmp_path / "run", seed_jobs(random.Random(2), rates=REAL_RATES))
    publish(fake, d, head="b" * 40)  # another commit than --root's: AL104
    fake.faults.append(Fault("GET", rf"/repos/{SLUG}/actions/runs/{RUN_ID}/artifacts", 502,
                             times=2))
    fake.faults.append(Fault("GET", r"/repos/.+/actions/artifacts/\d+/zip", 503, times=1))
    r = ixtool(fake, "al", "audit", str(RUN_ID), "--root", str(ROOT), "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["info"]["verdicts"] == {"ERROR": 14}
    assert {f["rule"] for f in doc["findings"]} == {"AL201", "AL104"}


def test_size_limit_and_expired(fake: FakeGitHub, tmp_path: Path) -> None:
    d = write_run(tmp_path / "run", seed_jobs(random.Random(2))[:2])
    publish(fake, d)
    run = fake.runs[-1]
    expired = next(n for n in fake.archives[RUN_ID] if n.startswith("server_logs_"))
    run.artifacts = [(expired, True)]
    big = next(n for n in fake.archives[RUN_ID] if n.startswith("agentic_"))
    fake.archives[RUN_ID][big] = b"PK" + os.urandom(3 << 20)  # 3 MiB, over a 2 MiB limit
    r = ixtool(fake, "al", "audit", str(RUN_ID), "--root", str(ROOT), "--format", "json",
               "--max-artifact-mib", "2")
    doc = json.loads(r.stdout)
    msgs = [f["message"] for f in doc["findings"] if f["rule"] == "AL101"]
    assert any("expired" in m for m in msgs) and any("download limit" in m for m in msgs)
    # neither was downloaded: only the other job's two artifacts were
    assert len([p for _, p, _ in fake.log if p.startswith("/_blobs/")]) == 2


def test_bad_token_and_unknown_run_are_exit_2(fake: FakeGitHub) -> None:
    r = ixtool(fake, "al", "audit", str(RUN_ID), "--root", str(ROOT), token="wrong")
    assert r.returncode == 2 and "401" in r.stderr and "Traceback" not in r.stderr
    r = ixtool(fake, "al", "audit", str(RUN_ID), "--root", str(ROOT))
    assert r.returncode == 2 and "404" in r.stderr and "run id" in r.stderr


def test_curves_import_through_the_api(fake: FakeGitHub, tmp_path: Path) -> None:
    d = collection(tmp_path / "run", matrix())
    publish(fake, d, run_id=28061204145)
    out = tmp_path / "curve.yaml"
    r = ixtool(fake, "policy", "curves", "import", "28061204145", "--root", str(ROOT),
               "--output", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    text = out.read_text()
    assert text.startswith(f"# Source GitHub Actions run: https://github.com/{SLUG}/actions/"
                           "runs/28061204145\n")
    assert "image vLLM 0.21.0 (from the server log)" in text
    # only the collection and its server logs were downloaded
    assert len([p for _, p, _ in fake.log if p.startswith("/_blobs/")]) == 2
    assert fake.blob_auth == []
    before = out.read_bytes()
    again = ixtool(fake, "policy", "curves", "import", "28061204145", "--root", str(ROOT),
                   "--output", str(out))
    assert again.returncode == 0 and out.read_bytes() == before and "unchanged" in again.stdout


def test_debug_log_redacts_the_signed_url(fake: FakeGitHub, tmp_path: Path) -> None:
    import logging

    from inferencex_tools.io.github import ArtifactInfo, Forge, RedactingFilter, RetryPolicy

    d = collection(tmp_path / "run", matrix())
    publish(fake, d, run_id=5)
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    h = Keep()
    h.addFilter(RedactingFilter(fake.token))
    loggers = [logging.getLogger(n) for n in ("ixtool", "github", "urllib3",
                                              "urllib3.connectionpool")]
    was = [(lg.level, lg.disabled, lg.propagate) for lg in loggers]
    for lg in loggers:  # another test may have configured logging (dictConfig disables)
        lg.setLevel(logging.DEBUG)
        lg.disabled, lg.propagate = False, False
        lg.addHandler(h)
    try:
        forge = Forge(SLUG, token=fake.token, api_url=fake.url,
                      retry=RetryPolicy(sleep=lambda s: None), throttle=False)
        (info,) = [i for i in forge.run_artifacts(5) if i.name.startswith("speedbench-ref")]
        assert isinstance(info, ArtifactInfo)
        forge.download_artifact(info, tmp_path / "a.zip", max_bytes=1 << 20)
    finally:
        for lg, (level, disabled, propagate) in zip(loggers, was, strict=True):
            lg.removeHandler(h)
            lg.setLevel(level)
            lg.disabled, lg.propagate = disabled, propagate
    assert zipfile.ZipFile(tmp_path / "a.zip").namelist() == ["speedbench-reference-al.yaml"]
    text = "\n".join(lines)
    assert "/_blobs/" in text, text
    assert fake.blob_sig not in text and fake.token not in text, text


def test_redacting_filter_masks_signed_queries() -> None:
    import logging

    from inferencex_tools.io.github import RedactingFilter

    rec = logging.LogRecord("github", logging.DEBUG, "x", 1, "GET %s ==> 302 %s", (
        "/repos/o/r/actions/artifacts/1/zip",
        {"location": "https://blob.example/x?sv=2023&sig=ABC%2Fdef&se=1", "a": "tok-1"}),
        None)
    assert RedactingFilter("tok-1").filter(rec)
    assert "ABC" not in rec.getMessage() and "tok-1" not in rec.getMessage()
    assert "sig=***" in rec.getMessage()
