"""Regenerate tests/al/data/producers/: run artifacts made by the real producers.

aiperf (0.13.0, from PyPI) scrapes a stand-in server (``engine.py``) that serves vLLM
0.33.0's and SGLang 0.5.23's speculative-decoding metric families and writes their log
lines; aiperf's own ``server_metrics_export.json`` and the server log are laid out as
InferenceX's ``benchmark-tmpl.yml`` uploads them (``agentic_<RESULT_FILENAME>`` holds
the job's ``results/**``: ``aiperf_artifacts/`` and ``server.log``;
``server_logs_<RESULT_FILENAME>`` / ``eval_server_logs_<RESULT_FILENAME>`` the server
log; ``bmk_agentic_``/``gpu_metrics_``/``eval_…`` as evidence of the job), one run
directory per case, as ``gh run download RUN_ID -D DIR`` writes them.  RESULT_FILENAME is
the seed key's (``minimaxm3-fp8-h200-vllm-agentic-mtp``), spelled as the template does.

Not a runtime dependency of ixtool.  Regenerate (a throwaway environment outside the
repository; loopback only; about 10 minutes on 2 cores)::

    python3 -m venv /tmp/aiperf-venv
    /tmp/aiperf-venv/bin/pip install aiperf==0.13.0      # brings prometheus_client, tokenizers
    /tmp/aiperf-venv/bin/python scripts/al_fixtures/make.py tests/al/data/producers

aiperf's ``builtin`` tokenizer downloads tiktoken's encoding at run time (no network
here), so the runs use a small word-level tokenizer written with ``tokenizers``.  Kept
from aiperf's artifacts: ``server_metrics_export.json`` (the file ixtool reads); its
profile exports (``profile_export*``, ``inputs.json``) are left out to keep the
fixtures small.  The hostile case is aiperf's real export with one
``stats.total`` replaced by a 400-digit integer: aiperf itself cannot carry such a
number (a 400-digit sample on ``/metrics`` leaves it without any export), but a job's
files are written by the PR's own recipe.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from tests.al.fixtures import result_filename  # noqa: E402  (the template's spelling)

AIPERF = Path(sys.executable).with_name("aiperf")
MODEL = "MiniMaxAI/MiniMax-M3-MXFP8"
HUGE = "1" + "0" * 399


@dataclass
class JobSpec:
    name: str
    engine: str
    tp: int
    ep: int
    conc: int
    mode: str = "throughput"
    runner: str = "h200-dgxc-slurm_0"
    forced: float | None = None
    rates: str = ""
    flags: list[str] = field(default_factory=list)
    requests: int = 48
    tokens: int = 240
    hostile_total: str | None = None  # a family whose stats.total is made 400 digits

    @property
    def rf(self) -> str:
        return result_filename(tp=self.tp, ep=self.ep, conc=self.conc, runner=self.runner)


CASES: dict[str, list[JobSpec]] = {
    "forced-served": [JobSpec("t", "vllm", 8, 1, 4, forced=2.83)],
    "forced-not-served": [JobSpec("t", "vllm", 8, 8, 4, rates="0.74,0.47,0.31")],
    "eval-near": [JobSpec("t", "vllm", 8, 1, 16, forced=2.83),
                  JobSpec("e", "vllm", 8, 1, 16, mode="eval", runner="h200-dgxc-slurm_1",
                          rates="0.80,0.59,0.44")],
    "eval-far": [JobSpec("e", "vllm", 8, 1, 16, mode="eval", runner="h200-dgxc-slurm_2",
                         rates="0.55,0.30,0.15")],
    "sglang-export-only": [JobSpec("t", "sglang", 8, 1, 4, forced=2.83, flags=["--no-log"])],
    "sglang-gauge-only": [JobSpec("t", "sglang", 8, 1, 8, rates="0.70,0.45,0.26",
                                  flags=["--no-log", "--gauge-only"])],
    "no-counters": [JobSpec("t", "vllm", 8, 1, 4, forced=2.83, flags=["--no-spec"])],
    "hostile": [JobSpec("t", "vllm", 8, 1, 4, forced=2.83,
                        hostile_total="vllm:spec_decode_num_drafts"),
                JobSpec("u", "vllm", 8, 8, 4, rates="0.74,0.47,0.31")],
}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tokenizer(d: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "[BOS]", "[EOS]", "tok", *(f"w{i}" for i in range(2000))]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    d.mkdir(parents=True, exist_ok=True)
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
        "bos_token": "[BOS]", "eos_token": "[EOS]", "model_max_length": 1_000_000}))
    return d


def _run(job: JobSpec, work: Path, tok: Path) -> tuple[Path, Path]:
    """aiperf against a stand-in engine: (aiperf's artifact dir, the server log)."""
    port = _port()
    log = work / "server.log"
    argv = [sys.executable, str(HERE / "engine.py"), "--engine", job.engine, "--port",
            str(port), "--k", "3", "--log", str(log), "--conc", str(job.conc), *job.flags]
    argv += ["--forced", str(job.forced)] if job.forced is not None else ["--rates", job.rates]
    srv = subprocess.Popen(argv, start_new_session=True)
    try:
        time.sleep(1.0)
        out = work / "aiperf_artifacts"
        cmd = [str(AIPERF), "profile", "--model", MODEL, "--url", f"http://127.0.0.1:{port}",
               "--endpoint-type", "chat", "--tokenizer", str(tok), "--request-count",
               str(job.requests), "--concurrency", str(job.conc), "--server-metrics",
               f"http://127.0.0.1:{port}/metrics", "--slice-duration", "1.0",
               "--output-artifact-dir", str(out), "--prompt-input-tokens-mean", "32",
               "--output-tokens-mean", str(job.tokens), "--no-gpu-telemetry", "--ui-type",
               "none", "--random-seed", "1"]
        (work / "benchmark_command.txt").write_text(" ".join(cmd[1:]) + "\n")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=600,
                       env={**os.environ, "HF_HUB_DISABLE_TELEMETRY": "1"})
        return out, log
    finally:
        os.killpg(srv.pid, signal.SIGTERM)
        srv.wait(timeout=30)


def _hostile(export: Path, family: str) -> None:
    text = export.read_text()
    fam = text.index(f'"{family}"')
    at = text.index('"total": ', fam) + len('"total": ')
    end = min(i for i in (text.index(",", at), text.index("\n", at)) if i >= 0)
    export.write_text(text[:at] + HUGE + text[end:])


def _lay_out(job: JobSpec, dest: Path, aiperf: Path, log: Path) -> None:
    rf, ev = job.rf, job.mode == "eval"
    raw = dest / f"agentic_{rf}"
    raw.mkdir(parents=True)
    text = log.read_text() if log.exists() else ""
    (raw / "server.log").write_text(text)
    if not ev:  # an eval-only job runs no aiperf client: its results tree has no export
        (raw / "aiperf_artifacts").mkdir()
        for name in ("server_metrics_export.json",):
            if (aiperf / name).exists():
                shutil.copy2(aiperf / name, raw / "aiperf_artifacts" / name)
        shutil.copy2(aiperf.parent / "benchmark_command.txt", raw / "benchmark_command.txt")
        if job.hostile_total:
            _hostile(raw / "aiperf_artifacts" / "server_metrics_export.json",
                     job.hostile_total)
        (dest / f"bmk_agentic_{rf}").mkdir()
        (dest / f"bmk_agentic_{rf}" / f"{rf}.json").write_text("{}\n")
    else:
        exp = rf.split("_fp8_", 1)[0]
        (dest / f"eval_{exp}_{rf}").mkdir()
        (dest / f"eval_{exp}_{rf}" / "meta_env.json").write_text("{}\n")
    logs = dest / (f"eval_server_logs_{rf}" if ev else f"server_logs_{rf}")
    logs.mkdir()
    (logs / "server.log").write_text(text)
    gpu = dest / (f"eval_gpu_metrics_{rf}" if ev else f"gpu_metrics_{rf}")
    gpu.mkdir()
    (gpu / "gpu_metrics.csv").write_text("timestamp,index,power.draw [W]\n")


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    only = set(sys.argv[2:])
    with tempfile.TemporaryDirectory(prefix="al-fixtures-") as tmp:
        tok = _tokenizer(Path(tmp) / "tokenizer")
        for case, jobs in CASES.items():
            if only and case not in only:
                continue
            dest = out / case
            shutil.rmtree(dest, ignore_errors=True)
            for job in jobs:
                work = Path(tmp) / case / job.name
                work.mkdir(parents=True)
                aiperf, log = _run(job, work, tok)
                _lay_out(job, dest, aiperf, log)
            print(f"{case}: {len(jobs)} job(s)", flush=True)
    versions = {"aiperf": _version("aiperf"), "prometheus_client": _version(
        "prometheus_client"), "engines": {"vllm": "0.33.0 (declarations)",
                                          "sglang": "0.5.23 (declarations)"}}
    (out / "VERSIONS.json").write_text(json.dumps(versions, indent=1) + "\n")


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


if __name__ == "__main__":
    main()
